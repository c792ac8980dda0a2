"""``/docs`` (Swagger UI) and ``/redoc``, served from this service: no CDN, so they work
offline and on a private deployment, and with no inline script (``security``).

The script and style files are fastapi-offline's copies of Swagger UI and Redoc,
mounted at ``/static-docs``; the small start-up scripts are ours, in
``webui/static``."""

from __future__ import annotations

from pathlib import Path

import fastapi_offline
from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from services.search.http.deps import TemplatesDep
from services.search.http.security import DOCS_POLICY

DOCS_ASSETS = Path(fastapi_offline.__file__).parent / "static"
router = APIRouter(include_in_schema=False)


@router.get("/docs", response_class=HTMLResponse)
def swagger_ui(request: Request, templates: TemplatesDep) -> HTMLResponse:
    response = templates.TemplateResponse(request, "docs.html", {"viewer": "swagger"})
    response.headers["Content-Security-Policy"] = DOCS_POLICY
    return response


@router.get("/redoc", response_class=HTMLResponse)
def redoc(request: Request, templates: TemplatesDep) -> HTMLResponse:
    response = templates.TemplateResponse(request, "docs.html", {"viewer": "redoc"})
    response.headers["Content-Security-Policy"] = DOCS_POLICY
    return response
