"""The HTML search page."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from services.search.deps import MetricsDep, ServiceDep, TemplatesDep
from services.search.templating import page_links

router = APIRouter()


@router.get("/", response_class=HTMLResponse)
def search_page(
    request: Request,
    service: ServiceDep,
    templates: TemplatesDep,
    metrics: MetricsDep,
    q: str = "",
    page: str = "1",
) -> HTMLResponse:
    number = int(page) if page.isdigit() and int(page) > 0 else 1  # forgiving for humans
    results = service.search(q, number)
    if q.strip():
        metrics.observe_search(results.mode, results.took_ms)
    return templates.TemplateResponse(
        request,
        "search.html",
        {"results": results, "page_links": page_links(results.page, results.pages)},
    )


@router.get("/help", response_class=HTMLResponse)
def help_page(request: Request, templates: TemplatesDep) -> HTMLResponse:
    """The query language, for people (the API's is at /docs)."""
    return templates.TemplateResponse(request, "help.html", {})
