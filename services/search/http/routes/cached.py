"""Cached copies: the stored bytes, a display copy, and the page that frames it.

* ``/cached/{n}``: the bytes exactly as fetched (checked against their docId);
* ``/cached/{n}/display``: for HTML, a copy fit to show (``cached_copy``);
  other types as stored;
* ``/cached/{n}/download``: the same bytes as an attachment, to save (a PDF);
* ``/cached/{n}/view?q=``: our page, with a banner naming the original URL and
  the crawl time, framing the display copy in a sandbox at the window's full
  width and height, the query's words highlighted inside it; for a PDF (and any
  type that is not HTML), the extracted text with a link to download the original;
* ``/cached/{n}/text?q=``: the text the engine extracted (a PDF's words as a page).

A cached copy is someone else's page: "sandbox" without allow-scripts runs it
in a unique opaque origin with scripts, forms and plugins off, so stored
scripts can neither run nor read this site's cookies or API. nosniff keeps the
browser from second-guessing the stored type.

Why a PDF is shown as its text, not in the browser's viewer: Chromium's PDF
viewer is a plugin-like extension frame, and a sandbox without ``allow-scripts``
and ``allow-plugins`` (our frame's, and the ``sandbox`` CSP on the bytes) refuses
it: a broken-document icon. Lifting the sandbox for ``application/pdf`` would
run a stored file from an arbitrary site in a viewer that executes PDF
JavaScript and submits forms, with our origin's trust once allow-scripts and
allow-same-origin meet; and a file served as PDF may not be one (the stored type
is the site's word). The text view is ours, HTML-escaped, works with any
browser and any screen, and highlights the query; the original stays one click
away as a download (``Content-Disposition: attachment``, its stored type,
nosniff, sandboxed): the browser saves it, it never renders in this origin.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote, unquote, urlsplit

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, Response

from services.search.display.cached_copy import display_html
from services.search.display.snippets import query_fragments
from services.search.http.deps import ServiceDep, TemplatesDep
from services.search.http.schemas import error_responses
from services.search.page_views import highlight_terms
from services.search.query.limits import MAX_QUERY_CHARS
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


@router.get("/{doc_num}/download", response_class=Response, responses=STORED_TYPES)
def cached_download(doc_num: int, service: ServiceDep) -> Response:
    """The stored bytes to save, never to render here (a PDF's original: see the module)."""
    copy = service.pages.cached(doc_num)
    disposition = f'attachment; filename="{_ascii_name(copy.url, copy.media_type)}"'
    return Response(
        content=copy.body,
        headers={"Content-Type": copy.media_type, "Content-Disposition": disposition, **CACHED_HEADERS},
    )


QueryParam = Query("", max_length=MAX_QUERY_CHARS, description="a query: its words are highlighted")


@router.get("/{doc_num}/display", response_class=Response, responses=STORED_TYPES)
def cached_display(doc_num: int, service: ServiceDep, q: str = QueryParam) -> Response:
    copy = service.pages.cached(doc_num)
    if not _is_html(copy.media_type):
        return Response(content=copy.body, headers={"Content-Type": copy.media_type, **CACHED_HEADERS})
    html = display_html(copy.body, copy.url, header_charset(copy.media_type), highlight_terms(q))
    return Response(
        content=html.encode("utf-8"),
        headers={"Content-Type": "text/html; charset=utf-8", **CACHED_HEADERS},
    )


@router.get("/{doc_num}/view", response_class=HTMLResponse)
def cached_view(
    request: Request, doc_num: int, service: ServiceDep, templates: TemplatesDep, q: str = QueryParam
) -> HTMLResponse:
    copy = service.pages.cached(doc_num)
    if not _is_html(copy.media_type):
        return cached_text(request, doc_num, service, templates, q)
    frame_url = f"/cached/{doc_num}/display" + (f"?q={quote(q)}" if q else "")
    return templates.TemplateResponse(
        request, "cached.html", {"copy": copy, "frame_url": frame_url, "query": q}
    )


@router.get("/{doc_num}/text", response_class=HTMLResponse)
def cached_text(
    request: Request, doc_num: int, service: ServiceDep, templates: TemplatesDep, q: str = QueryParam
) -> HTMLResponse:
    """What the index read from the document: for a PDF, its words without a PDF viewer, in
    its paragraphs, the query's words marked."""
    text = service.pages.cached_text(doc_num)
    terms = highlight_terms(q)
    paragraphs = [p.strip() for p in text.text.split("\n\n") if p.strip()] or [text.text]
    return templates.TemplateResponse(
        request,
        "cached_text.html",
        {
            "copy": text,
            "paragraphs": [query_fragments(p, terms) for p in paragraphs],
            "query": q,
            "download": not _is_html(text.media_type),
        },
    )


def _is_html(media_type: str) -> bool:
    return media_type.split(";")[0].strip().lower() in {"text/html", "application/xhtml+xml"}


_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")
_EXTENSIONS = {"application/pdf": ".pdf", "text/html": ".html", "text/plain": ".txt"}


def _ascii_name(url: str, media_type: str) -> str:
    """A file name for the download: the URL's last path segment in safe ASCII (no quote,
    no path), with the type's extension."""
    segment = unquote(urlsplit(url).path.rstrip("/").rsplit("/", 1)[-1])
    name = _UNSAFE_NAME.sub("_", segment).strip("._")[:100] or "document"
    extension = _EXTENSIONS.get(media_type.split(";")[0].strip().lower(), "")
    return name if not extension or name.lower().endswith(extension) else name + extension
