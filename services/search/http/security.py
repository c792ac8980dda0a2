"""Security headers on every answer, and CORS only when the operator turns it on.

Every HTML page of the site runs only the site's own script files: the policy
has no ``'unsafe-inline'`` for scripts, so a title or snippet that slipped
past escaping still could not run. Pages that need other rules set their own
``Content-Security-Policy`` and keep it (cached copies: ``sandbox``; the API
docs: inline styles for Swagger UI and Redoc, a blob: worker for Redoc).
"""

from __future__ import annotations

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

PAGE_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-src 'self'; frame-ancestors 'none'"
)
DOCS_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "worker-src 'self' blob:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
)
HEADERS = {
    "x-content-type-options": "nosniff",
    "referrer-policy": "strict-origin-when-cross-origin",
    "x-frame-options": "SAMEORIGIN",  # for old browsers; frame-ancestors decides in new ones
    "permissions-policy": "geolocation=(), camera=(), microphone=(), interest-cohort=()",
    "cross-origin-opener-policy": "same-origin",
}


class SecurityHeaders:
    """Pure ASGI middleware (no per-request task, unlike BaseHTTPMiddleware)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in HEADERS.items():
                    headers.setdefault(name, value)
                headers.setdefault("content-security-policy", PAGE_POLICY)
            await send(message)

        await self.app(scope, receive, with_headers)
