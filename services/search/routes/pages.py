"""The HTML search page."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from services.search.deps import MetricsDep, ServiceDep, TemplatesDep
from services.search.service import MAX_RESULTS
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
    # Forgiving for humans: anything but a plain positive number is page 1 ("²" is a digit
    # to str.isdigit but not to int: the schema fuzzer found that 500).
    number = int(page) if page.isascii() and page.isdigit() and 0 < int(page) <= MAX_RESULTS else 1
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
