"""The HTML search page."""

from __future__ import annotations

from functools import partial

import anyio.to_thread
from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from services.search.http.deps import (
    MetricsDep,
    PlacesDep,
    ServiceDep,
    TemplatesDep,
    WeatherDep,
    run_search_work,
)
from services.search.http.schemas import error_responses
from services.search.instant.places import Gazetteer
from services.search.instant.weather import WeatherClient, WeatherLookup
from services.search.query.limits import bound_query
from services.search.service import MAX_RESULTS

router = APIRouter(responses=error_responses(429))  # the rate limit's answer

PAGE_LINKS = 10  # numbered page links shown around the current page


@router.get("/", response_class=HTMLResponse)
async def search_page(
    request: Request,
    service: ServiceDep,
    templates: TemplatesDep,
    metrics: MetricsDep,
    weather: WeatherDep,
    places: PlacesDep,
    q: str = "",
    page: str = "1",
    nfpr: str = "",
) -> HTMLResponse:
    # Forgiving for humans: anything but a plain positive number is page 1 ("²" is a digit
    # to str.isdigit but not to int: a 500 otherwise, which the schema fuzzer tries).
    number = int(page) if page.isascii() and page.isdigit() and 0 < int(page) <= MAX_RESULTS else 1
    # The weather box asks its provider while the index is searched, and the page waits for it
    # at most the weather timeout: a slow or broken provider costs no box, never a slow page.
    # It reads the query as it is searched (within the query limits), not all that was sent.
    lookup = _weather_lookup(bound_query(q).text, number, weather, places)
    # nfpr=1 ("no further processing of the request", as Google names it): exactly as typed.
    results = await run_search_work(service, partial(service.search, q, number, as_typed=nfpr == "1"))
    # Operator examples for the home page and for "no results": built once per index version.
    examples = await run_search_work(service, service.examples) if not results.hits else None
    if q.strip():
        metrics.observe_search(results.mode, results.took_ms)
    answer = None
    if lookup is not None:
        # Still on its way after the search: waited for off the event loop (up to its timeout).
        answer = lookup.result() if lookup.done() else await anyio.to_thread.run_sync(lookup.result)
    return templates.TemplateResponse(
        request,
        "search.html",
        {
            "results": results,
            "page_links": page_links(results.page, results.pages),
            "answer": answer,
            "examples": examples.shown() if examples is not None else [],
        },
    )


def _weather_lookup(
    q: str, page: int, weather: WeatherClient | None, places: Gazetteer | None
) -> WeatherLookup | None:
    """A weather lookup for a query that names a place, on the first page only; a gazetteer
    still loading (the service just started) means no box rather than a wait."""
    if weather is None or places is None or page != 1 or not q.strip() or not places.ready:
        return None
    place = places.match(q)
    return weather.start(place) if place is not None else None


@router.get("/help", response_class=HTMLResponse)
def help_page(request: Request, templates: TemplatesDep) -> HTMLResponse:
    """The query language, for people (the API's is at /docs)."""
    return templates.TemplateResponse(request, "help.html", {})


def page_links(page: int, pages: int) -> list[int]:
    """Up to PAGE_LINKS page numbers around ``page``."""
    if pages <= 1:
        return []
    first = max(1, min(page - PAGE_LINKS // 2, pages - PAGE_LINKS + 1))
    return list(range(first, min(pages, first + PAGE_LINKS - 1) + 1))
