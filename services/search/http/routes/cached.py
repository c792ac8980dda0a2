"""Cached copies: the stored bytes, a display copy, and the page that frames it.

* ``/cached/{n}``: the bytes exactly as fetched (checked against their docId);
* ``/cached/{n}/display``: for HTML, a copy fit to show (``cached_copy``);
  other types as stored;
* ``/cached/{n}/view``: our page, with a banner naming the original URL and
  the crawl time, framing the display copy in a sandbox;
* ``/cached/{n}/text``: the text the engine extracted (a PDF's words as a page).

A cached copy is someone else's page: "sandbox" without allow-scripts runs it
in a unique opaque origin with scripts, forms and plugins off, so stored
scripts can neither run nor read this site's cookies or API. nosniff keeps the
browser from second-guessing the stored type.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from services.search.display.cached_copy import display_html
from services.search.http.deps import ServiceDep, TemplatesDep
from services.search.http.schemas import error_responses
from services.text.extract.charset import header_charset

router = APIRouter(prefix="/cached", responses=error_responses(404, 429, 503))

# Stored bytes come back in their own type: the schema says which types that may be.
STORED_TYPES: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "the stored bytes, in their stored type",
        "content": {
            t: {} for t in ("text/html", "application/pdf", "text/plain", "application/octet-stream")
        },
    }
}

CACHED_HEADERS = {
    "Content-Security-Policy": "sandbox; frame-ancestors 'self'",  # framed by our /view only
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Robots-Tag": "noindex",
}


@router.get("/{doc_num}", response_class=Response, responses=STORED_TYPES)
def cached(doc_num: int, service: ServiceDep) -> Response:
    copy = service.pages.cached(doc_num)
    # Content-Type set as a header, not media_type: Starlette would append
    # "charset=utf-8" to text/* and mislabel pages stored in other encodings.
    return Response(content=copy.body, headers={"Content-Type": copy.media_type, **CACHED_HEADERS})


@router.get("/{doc_num}/display", response_class=Response, responses=STORED_TYPES)
def cached_display(doc_num: int, service: ServiceDep) -> Response:
    copy = service.pages.cached(doc_num)
    if copy.media_type.split(";")[0].strip().lower() != "text/html":
        return Response(content=copy.body, headers={"Content-Type": copy.media_type, **CACHED_HEADERS})
    html = display_html(copy.body, copy.url, header_charset(copy.media_type))
    return Response(
        content=html.encode("utf-8"),
        headers={"Content-Type": "text/html; charset=utf-8", **CACHED_HEADERS},
    )


@router.get("/{doc_num}/view", response_class=HTMLResponse)
def cached_view(request: Request, doc_num: int, service: ServiceDep, templates: TemplatesDep) -> HTMLResponse:
    copy = service.pages.cached(doc_num)
    return templates.TemplateResponse(
        request, "cached.html", {"copy": copy, "frame_url": f"/cached/{doc_num}/display"}
    )


@router.get("/{doc_num}/text", response_class=HTMLResponse)
def cached_text(request: Request, doc_num: int, service: ServiceDep, templates: TemplatesDep) -> HTMLResponse:
    """What the index read from the document: for a PDF, its words without a PDF viewer."""
    text = service.pages.cached_text(doc_num)
    paragraphs = [p.strip() for p in text.text.split("\n\n") if p.strip()] or [text.text]
    return templates.TemplateResponse(request, "cached_text.html", {"copy": text, "paragraphs": paragraphs})
