"""The search app with the operator's side mounted at ``/admin``, behind a token.

Off unless ``NIMBUS_ADMIN_TOKEN`` is set (then every /admin URL is 404). Two ways in:

- the dashboard (``pages``): a browser signs in with the token once, then holds a signed
  session cookie; its forms carry CSRF tokens;
- the JSON API (``api``, ``/admin/api/...``, in the OpenAPI schema at ``/docs``): the token
  as ``Authorization: Bearer``, for ``nimbus ... --remote`` from an operator's laptop.

Both act through ``services.admin.operations``, the functions ``nimbus crawl ...`` calls on
a machine that reaches the database, so they reach crawlers on every machine. The app-wide
rate limit applies to every /admin URL, the sign-in and a guessed bearer token included.
This module wires the search app and the crawler's tables: it sits above both.
"""

from __future__ import annotations

from typing import cast

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from starlette.middleware import Middleware
from starlette.types import ASGIApp, Receive, Scope, Send

from services.admin import api, pages
from services.admin.deps import AdminState
from services.admin.errors import OperatorInputError
from services.config import Settings
from services.search.http.app import create_app as create_search_app
from services.storage.sql.engines import make_engine, session_factory

# A body larger than this is refused before it is read: seeds at most MAX_URLS of up to
# 2,048 characters each, as JSON, fit.
MAX_BODY_BYTES = 4 * 1024 * 1024


def create_app(settings: Settings, recheck_seconds: float = 2.0) -> FastAPI:
    """The search app with the dashboard mounted (what ``nimbus serve`` runs)."""
    app = create_search_app(settings, recheck_seconds=recheck_seconds)
    install_admin(app, settings)
    return app


def create_app_from_env() -> FastAPI:
    """One uvicorn worker's app (``nimbus serve --workers N``)."""
    from services.aws_database import resolve_database_url

    return create_app(resolve_database_url(Settings.from_env()))


def install_admin(app: FastAPI, settings: Settings) -> None:
    token = settings.search.admin_token
    if not token:  # without a token the dashboard does not exist (404 everywhere under /admin)
        return
    engine = make_engine(settings.database_url)
    app.state.admin = AdminState(settings, token, engine, session_factory(engine))
    app.include_router(pages.router)
    app.include_router(api.reads)
    app.include_router(api.changes)
    app.add_exception_handler(OperatorInputError, _refused)
    # Innermost (next to the routes): inside the rate limit and the security headers.
    app.user_middleware.append(Middleware(BodyLimit, limit=MAX_BODY_BYTES, prefix="/admin"))


def _refused(request: Request, exc: Exception) -> Response:
    """400 (or the error's own status) with the message ``nimbus`` prints for the same input:
    JSON for the API, for a form a page (text/html; charset=utf-8) with the message escaped,
    since it repeats the input, and a way back to the dashboard."""
    status = exc.status if isinstance(exc, OperatorInputError) else 400
    if request.url.path.startswith("/admin/api/"):
        return JSONResponse({"detail": str(exc)}, status_code=status)
    templates = request.app.state.templates
    return cast(
        Response,
        templates.TemplateResponse(
            request, "admin_refused.html", {"status": status, "message": str(exc)}, status_code=status
        ),
    )


class BodyLimit:
    """Refuse request bodies under ``prefix`` that declare more than ``limit`` bytes (413), or
    come in chunks of undeclared length (411), before anything reads them: FastAPI parses a
    JSON body before the route's dependencies (the token check) run."""

    def __init__(self, app: ASGIApp, limit: int, prefix: str) -> None:
        self.app, self.limit, self.prefix = app, limit, prefix

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"].startswith(self.prefix) and scope["method"] == "POST":
            headers = dict(scope["headers"])
            length = headers.get(b"content-length")
            refusal = None
            if length is None and b"transfer-encoding" in headers:
                refusal = 411, "give the body's Content-Length"
            elif length is not None and (not length.isdigit() or int(length) > self.limit):
                refusal = 413, f"the body is larger than {self.limit} bytes"
            if refusal is not None:
                await JSONResponse({"detail": refusal[1]}, status_code=refusal[0])(scope, receive, send)
                return
        await self.app(scope, receive, send)
