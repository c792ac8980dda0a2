"""The web face of search: an HTML page, a JSON API and cached copies.

``create_app(settings)`` builds everything from settings (no globals): the
search service and the templates go on ``app.state``, where the dependencies
in ``deps`` find them, and each part of the site is a router in ``routes/``.
A test builds an app on temporary storage; ``uvicorn`` serves the real one
(``nimbus serve``). The search routes are ``async``: a search answers on the event loop
when every store is local and on the thread pool otherwise (``deps.run_search_work``);
the other handlers are plain ``def``, run on FastAPI's thread pool, as their reads block.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio.to_thread
from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles

from services.config import Settings
from services.search.http.forwarded import ForwardedHeaders, proxy_networks
from services.search.http.head import HeadAsGet
from services.search.http.http_errors import install_error_handlers
from services.search.http.metrics import SearchMetrics, install_metrics
from services.search.http.ratelimit import RateLimit
from services.search.http.routes import api, cached, docs, health, pageinfo, pages
from services.search.http.security import SecurityHeaders
from services.search.instant.places import shared_gazetteer
from services.search.instant.weather import WeatherClient
from services.search.query.limits import MAX_QUERY_CHARS, MAX_QUERY_WORDS, MIN_REPEAT
from services.search.service import SearchService
from services.webui import WEBUI, build_templates

log = logging.getLogger(__name__)

ROUTERS = (pages.router, api.router, pageinfo.router, cached.router, health.router, docs.router)


def create_app(
    settings: Settings, recheck_seconds: float = 2.0, service: SearchService | None = None
) -> FastAPI:
    """The search app; ``recheck_seconds`` bounds how stale the active index version may be."""
    owned = service is None
    svc = service or SearchService(settings, recheck_seconds=recheck_seconds)
    weather = (
        WeatherClient(
            settings.search.weather_url,
            settings.search.weather_timeout,
            settings.search.weather_cache_seconds,
        )
        if settings.search.weather_url
        else None
    )
    places = shared_gazetteer() if weather is not None else None

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        if places is not None:
            # Built off the event loop before the first request (once per process; its cost:
            # docs/performance-notes.md), so no query waits for it; the page asks only a ready
            # gazetteer.
            try:
                await anyio.to_thread.run_sync(places.warm)
            except Exception:
                log.exception("gazetteer failed to load: no weather answers")
        # The spelling vocabulary and the documents' hosts for the index being served, before
        # the first request (seconds on a large index: docs/performance-notes.md), not in its time.
        await anyio.to_thread.run_sync(svc.warm)
        try:
            yield
        finally:
            if weather is not None:
                weather.close()
            if owned:
                svc.close()

    # /docs and /redoc are ours (routes/docs.py): FastAPI's load their scripts from a CDN.
    app = FastAPI(title="Nimbus Search", lifespan=lifespan, docs_url=None, redoc_url=None)
    app.state.service = svc
    app.state.templates = build_templates()
    # The query limits, for the search boxes' maxlength and /help.
    app.state.templates.env.globals.update(
        max_query_chars=MAX_QUERY_CHARS, max_query_words=MAX_QUERY_WORDS, min_repeat=MIN_REPEAT
    )
    app.state.metrics = SearchMetrics(settings.search.metrics_dir)
    app.state.weather = weather  # None: no weather answer box
    app.state.places = places
    app.mount("/static", StaticFiles(directory=WEBUI / "static"), name="static")
    app.mount("/static-docs", StaticFiles(directory=docs.DOCS_ASSETS), name="static-docs")
    install_error_handlers(app)
    for router in ROUTERS:
        app.include_router(router)
    install_metrics(app, app.state.metrics)
    app.add_middleware(HeadAsGet)
    if settings.search.rate_limit != "off":
        app.add_middleware(RateLimit, rate=settings.search.rate_limit)
    # Outside the rate limit: it counts the forwarded client, believed from the proxies only.
    app.add_middleware(ForwardedHeaders, proxies=proxy_networks(settings.search.proxy_cidrs))
    app.add_middleware(SecurityHeaders)  # outermost: refusals carry the headers too
    return app


def create_app_from_env() -> FastAPI:
    """The app of one uvicorn worker process (``nimbus serve --workers N``): settings from
    the environment, the database password from RDS's secret when on AWS."""
    from services.aws_database import resolve_database_url

    return create_app(resolve_database_url(Settings.from_env()))
