"""Page info: what the engine knows about one document, and why it ranked for a query.

* ``/page/{n}?q=``: for people, linked from every result;
* ``/api/page/{n}?q=``: the same as JSON.
"""

from __future__ import annotations

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from services.search.http.deps import ServiceDep, TemplatesDep
from services.search.http.schemas import PageInfoResponse, error_responses
from services.search.query.limits import MAX_QUERY_CHARS

router = APIRouter(responses=error_responses(404, 429, 503))


@router.get("/api/page/{doc_num}", response_model=PageInfoResponse)
def api_page_info(
    doc_num: int,
    service: ServiceDep,
    q: str = Query("", max_length=MAX_QUERY_CHARS, description="a query: adds its score breakdown"),
) -> PageInfoResponse:
    return PageInfoResponse.from_info(service.pages.page_info(doc_num, q))


@router.get("/page/{doc_num}", response_class=HTMLResponse)
def page_info(
    request: Request,
    doc_num: int,
    service: ServiceDep,
    templates: TemplatesDep,
    q: str = Query("", max_length=MAX_QUERY_CHARS),
) -> HTMLResponse:
    info = PageInfoResponse.from_info(service.pages.page_info(doc_num, q))
    return templates.TemplateResponse(request, "page.html", {"info": info, "query": q})
