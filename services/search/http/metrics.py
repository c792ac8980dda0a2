"""``/metrics``: the search service in Prometheus's text format (prometheus-client).

Request latency by route, query latency and counts by retrieval mode, and the active
index (version, documents). One registry per app, not the library's global one: tests
build many apps in one process, and each must count only its own requests. With
``nimbus serve --workers N`` the workers share prometheus-client's multiprocess mode
(``NIMBUS_METRICS_DIR``, exported as ``PROMETHEUS_MULTIPROC_DIR`` before they start): each
writes its values to files there, and a scrape, whichever worker it reaches, sums them.
"""

from __future__ import annotations

import time

from fastapi import FastAPI, Response
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
)
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from services.search.service import SearchService

# Query latency: sub-millisecond at 100k documents, tens of ms with snippets from S3.
_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)


class SearchMetrics:
    """The app's metrics, registered in its own registry."""

    def __init__(self, multiprocess_dir: str = "") -> None:
        self.multiprocess_dir = multiprocess_dir
        self.registry = CollectorRegistry()
        self.requests = Histogram(
            "nimbus_http_request_seconds",
            "HTTP request latency by route template and status class",
            ["route", "status"],
            buckets=_BUCKETS,
            registry=self.registry,
        )
        self.queries = Counter(
            "nimbus_search_queries", "Searches answered, by retrieval mode", ["mode"], registry=self.registry
        )
        self.query_seconds = Histogram(
            "nimbus_search_query_seconds",
            "Time to rank a query and build its page of hits",
            buckets=_BUCKETS,
            registry=self.registry,
        )
        # Across workers: the newest index any live worker has loaded.
        self.index_version = Gauge(
            "nimbus_index_version",
            "The active index version (0: none yet)",
            registry=self.registry,
            multiprocess_mode="livemax",
        )
        self.index_documents = Gauge(
            "nimbus_index_documents",
            "Documents in the active index",
            registry=self.registry,
            multiprocess_mode="livemax",
        )

    def observe_search(self, mode: str, took_ms: float) -> None:
        self.queries.labels(mode=mode or "none").inc()
        self.query_seconds.observe(took_ms / 1000.0)

    def exposition(self, service: SearchService) -> bytes:
        """The text format, with the index gauges read now (never a stale copy)."""
        index = service.index()
        self.index_version.set(index.version_id if index is not None else 0)
        self.index_documents.set(index.num_docs if index is not None else 0)
        if not self.multiprocess_dir:
            return generate_latest(self.registry)
        merged = CollectorRegistry()
        multiprocess.MultiProcessCollector(merged, path=self.multiprocess_dir)  # every worker's files
        return generate_latest(merged)


def install_metrics(app: FastAPI, metrics: SearchMetrics) -> None:
    """Time every request by its route template (``/cached/{n}``, not each URL: bounded labels)."""
    app.add_middleware(TimedRequests, metrics=metrics)


class TimedRequests:
    """Pure ASGI middleware: ``@app.middleware("http")`` (BaseHTTPMiddleware) runs every
    request through an extra task and stream, a cost each request would pay
    (docs/performance-notes.md)."""

    def __init__(self, app: ASGIApp, metrics: SearchMetrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500  # an exception before the response started is a server error

        async def seen(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, seen)
        finally:
            route = _template(scope)
            if route != "/metrics":
                self.metrics.requests.labels(route=route, status=f"{status // 100}xx").observe(
                    time.perf_counter() - started
                )


def _template(scope: Scope) -> str:
    """The path template of the route that answered (the router records it in the scope)."""
    path = getattr(scope.get("route"), "path", None)
    return str(path) if path else "unmatched"


def metrics_response(metrics: SearchMetrics, service: SearchService) -> Response:
    return Response(metrics.exposition(service), media_type=CONTENT_TYPE_LATEST)
