"""Per-client rate limits: one client cannot take the service from everybody else.

A moving window per client address (the ``limits`` library, which slowapi wraps), kept in
each worker process's memory: with N workers a client gets up to N times the rate, which
is the price of not sharing state between them. Behind a load balancer, ``forwarded``
makes the client address the forwarded one, believed from the configured proxies only.
Over the limit: 429 with ``Retry-After``, JSON for the API and programs, the site's error
page for a browser (``Accept: text/html``).
"""

from __future__ import annotations

import math
import time

from limits import parse
from limits.storage import MemoryStorage
from limits.strategies import MovingWindowRateLimiter
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from services.search.http.http_errors import error_page, wants_html

FREE_PREFIXES = ("/healthz", "/metrics", "/static", "/static-docs", "/favicon.ico")


class RateLimit:
    def __init__(self, app: ASGIApp, rate: str) -> None:
        self.app = app
        self.item = parse(rate)
        self.limiter = MovingWindowRateLimiter(MemoryStorage())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"].startswith(FREE_PREFIXES):
            await self.app(scope, receive, send)
            return
        client = scope.get("client")
        key = client[0] if client else "unknown"
        if self.limiter.hit(self.item, key):
            await self.app(scope, receive, send)
            return
        await self._refuse(key, scope)(scope, receive, send)

    def _refuse(self, key: str, scope: Scope) -> Response:
        reset, _left = self.limiter.get_window_stats(self.item, key)
        retry = str(max(1, math.ceil(reset - time.time())))
        message = f"Too many requests from {key}: the limit is {self.item}. Try again in {retry} s."
        headers = {"Retry-After": retry}
        request = Request(scope)
        if not scope["path"].startswith("/admin/api/") and wants_html(request):
            return error_page(request, 429, message, headers)  # a person's browser: a page
        return JSONResponse({"detail": message}, status_code=429, headers=headers)  # programs
