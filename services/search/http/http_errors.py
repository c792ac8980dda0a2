"""The project's errors as HTTP answers, decided once for every route.

Routes raise what went wrong (``NotFoundError``, ``StorageError``, ...); this
module alone says which status that is. Clients get a short JSON ``detail``,
never a traceback; the log gets the full story.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import cast

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from sqlalchemy.exc import SQLAlchemyError
from starlette.exceptions import HTTPException as StarletteHTTPException

from services.errors import NimbusError
from services.search.errors import NotFoundError, SearchIndexError
from services.storage.errors import StorageError

log = logging.getLogger(__name__)

UNAVAILABLE = "The index or document store is unavailable; try again shortly."
FAILED = "The search service failed to answer; the operator's log has the details."


def status_for(exc: BaseException) -> int:
    """The HTTP status of one of the project's errors (the most specific class wins)."""
    if isinstance(exc, NotFoundError):
        return 404
    if isinstance(exc, SearchIndexError | StorageError | SQLAlchemyError):
        return 503
    return 500


MAX_ERRORS = 5  # problems listed per bad request
MAX_MESSAGE_CHARS = 200


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(NimbusError, _answer)
    app.add_exception_handler(SQLAlchemyError, _answer)
    app.add_exception_handler(RequestValidationError, _bad_request)
    app.add_exception_handler(StarletteHTTPException, _http_error)


def wants_html(request: Request) -> bool:
    """A person's browser on one of our pages (not the API): errors come as a page."""
    return not request.url.path.startswith("/api/") and "text/html" in request.headers.get("accept", "")


def error_page(
    request: Request, status: int, message: str, headers: Mapping[str, str] | None = None
) -> Response:
    """The error as a page with a search box and what to try, never a traceback."""
    templates = request.app.state.templates
    return cast(
        Response,
        templates.TemplateResponse(
            request, "error.html", {"status": status, "message": message}, status_code=status, headers=headers
        ),
    )


def allowed_methods(headers: Mapping[str, str] | None) -> dict[str, str] | None:
    """A 405's headers with ``Allow`` as the app answers: every route that takes GET takes HEAD
    too (``head.HeadAsGet``), which the router's ``Allow: GET`` leaves out."""
    if headers is None:
        return None
    out = dict(headers)
    for name, value in headers.items():
        if name.lower() == "allow":
            methods = [m.strip() for m in value.split(",") if m.strip()]
            if "GET" in methods and "HEAD" not in methods:
                methods.insert(methods.index("GET") + 1, "HEAD")
            out[name] = ", ".join(methods)
    return out


def _http_error(request: Request, exc: Exception) -> Response:
    """Unknown paths and methods: JSON for programs, a page for people."""
    status = exc.status_code if isinstance(exc, StarletteHTTPException) else 500
    detail = str(exc.detail) if isinstance(exc, StarletteHTTPException) else FAILED
    headers = allowed_methods(getattr(exc, "headers", None))
    if wants_html(request):
        message = "There is no page at this address." if status == 404 else detail
        return error_page(request, status, message, headers)
    return JSONResponse({"detail": detail}, status_code=status, headers=headers)


def _bad_request(request: Request, exc: Exception) -> JSONResponse:
    """422 naming each bad parameter and what is wrong with it, never echoing its value
    (FastAPI's default answer repeats the input: a 100 KB query comes back whole)."""
    problems = exc.errors() if isinstance(exc, RequestValidationError) else []
    detail = [
        {
            "loc": [str(part)[:MAX_MESSAGE_CHARS] for part in problem.get("loc", ())][:4],
            "msg": str(problem.get("msg", "invalid"))[:MAX_MESSAGE_CHARS],
            "type": str(problem.get("type", ""))[:MAX_MESSAGE_CHARS],
        }
        for problem in problems[:MAX_ERRORS]
    ]
    return JSONResponse({"detail": detail or "invalid request"}, status_code=422)


def _answer(request: Request, exc: Exception) -> Response:
    status = status_for(exc)
    where = f"{request.method} {request.url.path}"
    if status == 404:
        detail = str(exc)
    elif status == 503:
        log.error("%s failed: %s", where, exc)
        detail = UNAVAILABLE
    else:
        log.error("%s failed", where, exc_info=exc)
        detail = FAILED
    if wants_html(request):
        return error_page(request, status, detail)
    return JSONResponse({"detail": detail}, status_code=status)
