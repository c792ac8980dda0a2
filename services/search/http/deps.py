"""What route handlers get from the app, as FastAPI dependencies.

Everything a request needs is built once by ``create_app`` and kept on
``app.state``; a handler names what it uses by type (``service: ServiceDep``),
so route modules import no globals and a test can build an app around any
service.

The getters are ``async def``: FastAPI runs a plain ``def`` dependency on its thread
pool, one hop each, and a results page names five of them, a visible share of the page's
time (docs/performance-notes.md).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, TypeVar

import anyio.to_thread
from fastapi import Depends, Request
from fastapi.templating import Jinja2Templates

from services.search.http.metrics import SearchMetrics
from services.search.instant.places import Gazetteer
from services.search.instant.weather import WeatherClient
from services.search.service import SearchService


async def get_service(request: Request) -> SearchService:
    service: SearchService = request.app.state.service
    return service


async def get_templates(request: Request) -> Jinja2Templates:
    templates: Jinja2Templates = request.app.state.templates
    return templates


async def get_metrics(request: Request) -> SearchMetrics:
    metrics: SearchMetrics = request.app.state.metrics
    return metrics


async def get_weather(request: Request) -> WeatherClient | None:
    """The weather provider's client; ``None`` when the answer box is off (no NIMBUS_WEATHER_URL)."""
    weather: WeatherClient | None = getattr(request.app.state, "weather", None)
    return weather


async def get_places(request: Request) -> Gazetteer | None:
    """The gazetteer that tells whether a query names a place; ``None`` with the weather box off."""
    places: Gazetteer | None = getattr(request.app.state, "places", None)
    return places


ServiceDep = Annotated[SearchService, Depends(get_service)]
MetricsDep = Annotated[SearchMetrics, Depends(get_metrics)]
TemplatesDep = Annotated[Jinja2Templates, Depends(get_templates)]
WeatherDep = Annotated[WeatherClient | None, Depends(get_weather)]
PlacesDep = Annotated[Gazetteer | None, Depends(get_places)]

T = TypeVar("T")


async def run_search_work(service: SearchService, work: Callable[[], T]) -> T:
    """``work`` (a search or completions) on the event loop when it waits on nothing but the
    CPU (``SearchService.answers_at_once``), else on the thread pool."""
    if service.answers_at_once():
        return work()
    return await anyio.to_thread.run_sync(work)
