"""The project's errors as HTTP answers, decided once for every route.

Routes raise what went wrong (``NotFoundError``, ``StorageError``, ...); this
module alone says which status that is. Clients get a short JSON ``detail``,
never a traceback; the log gets the full story.
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import SQLAlchemyError

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


def _bad_request(request: Request, exc: Exception) -> JSONResponse:
    """422 naming each bad parameter and what is wrong with it, never echoing its value
    (FastAPI's default answer repeats the input: a 100 KB query came back whole)."""
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


def _answer(request: Request, exc: Exception) -> JSONResponse:
    status = status_for(exc)
    where = f"{request.method} {request.url.path}"
    if status == 404:
        return JSONResponse({"detail": str(exc)}, status_code=404)
    if status == 503:
        log.error("%s failed: %s", where, exc)
        return JSONResponse({"detail": UNAVAILABLE}, status_code=503)
    log.error("%s failed", where, exc_info=exc)
    return JSONResponse({"detail": FAILED}, status_code=500)
