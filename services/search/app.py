"""The web face of search: an HTML page, a JSON API and cached copies.

``create_app(settings)`` builds everything from settings (no globals), so a
test builds an app on temporary storage and ``uvicorn`` serves the real one
(``nimbus serve``). Handlers are plain ``def``: their database and blob reads
block, and FastAPI runs them on its thread pool.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from jinja2 import Environment, FileSystemLoader
from sqlalchemy.exc import SQLAlchemyError

from services.config import Settings
from services.search.errors import NotFoundError
from services.search.schemas import Health, SearchResponse
from services.search.service import MAX_RESULTS, SearchService
from services.storage.errors import StorageError

log = logging.getLogger(__name__)

WEBUI = Path(__file__).resolve().parents[2] / "webui"
PAGE_LINKS = 10  # numbered page links shown around the current page

# A cached copy is someone else's page: "sandbox" without allow-scripts runs
# it in a unique opaque origin with scripts, forms and plugins off, so stored
# scripts can neither run nor read this site's cookies or API. nosniff keeps
# the browser from second-guessing the stored type.
CACHED_HEADERS = {
    "Content-Security-Policy": "sandbox",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Robots-Tag": "noindex",
}


def create_app(
    settings: Settings, recheck_seconds: float = 2.0, service: SearchService | None = None
) -> FastAPI:
    """The search app; ``recheck_seconds`` bounds how stale the active index version may be."""
    owned = service is None
    svc = service or SearchService(settings, recheck_seconds=recheck_seconds)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        yield
        if owned:
            svc.close()

    app = FastAPI(title="Nimbus Search", lifespan=lifespan)
    app.state.service = svc
    env = Environment(
        loader=FileSystemLoader(WEBUI / "templates"), autoescape=True, trim_blocks=True, lstrip_blocks=True
    )
    env.filters["safe_href"] = safe_href
    templates = Jinja2Templates(env=env)
    app.mount("/static", StaticFiles(directory=WEBUI / "static"), name="static")

    @app.exception_handler(SQLAlchemyError)
    @app.exception_handler(StorageError)
    def _storage_down(request: Request, exc: Exception) -> JSONResponse:
        log.error("%s %s failed: %s", request.method, request.url.path, exc)
        return JSONResponse(
            {"detail": "The index or document store is unavailable; try again shortly."},
            status_code=503,
        )

    @app.get("/", response_class=HTMLResponse)
    def search_page(request: Request, q: str = "", page: str = "1") -> HTMLResponse:
        number = int(page) if page.isdigit() and int(page) > 0 else 1  # forgiving for humans
        results = svc.search(q, number)
        return templates.TemplateResponse(
            request,
            "search.html",
            {
                "results": results,
                "page_links": _page_links(results.page, results.pages),
            },
        )

    @app.get("/api/search", response_model=SearchResponse)
    def api_search(
        q: str = Query("", max_length=1000, description="the query"),
        page: int = Query(1, ge=1, le=MAX_RESULTS, description="1-based page"),
    ) -> SearchResponse | JSONResponse:
        results = svc.search(q, page)
        if results.index_version is None:
            return JSONResponse(SearchResponse.from_results(results).model_dump(), status_code=503)
        return SearchResponse.from_results(results)

    @app.get("/cached/{doc_num}")
    def cached(doc_num: int) -> Response:
        try:
            copy = svc.cached(doc_num)
        except NotFoundError as exc:
            return JSONResponse({"detail": f"{exc}"}, status_code=404)
        # Content-Type set as a header, not media_type: Starlette would append
        # "charset=utf-8" to text/* and mislabel pages stored in other encodings.
        return Response(content=copy.body, headers={"Content-Type": copy.media_type, **CACHED_HEADERS})

    @app.get("/healthz", response_model=Health)
    def healthz() -> Response:
        index = svc.index()
        if index is None:
            body = Health(status="no-index")
            return JSONResponse(body.model_dump(), status_code=503)
        body = Health(
            status="ok",
            index_version=index.version_id,
            segment=index.segment,
            num_docs=index.num_docs,
            num_terms=index.num_terms,
        )
        return JSONResponse(body.model_dump())

    return app


def safe_href(url: str) -> str:
    """``url`` if it is http(s), else "#": autoescaping stops markup, not ``javascript:`` links."""
    scheme = url.split(":", 1)[0].strip().lower() if ":" in url else ""
    return url if scheme in {"http", "https"} else "#"


def _page_links(page: int, pages: int) -> list[int]:
    """Up to PAGE_LINKS page numbers around ``page``."""
    if pages <= 1:
        return []
    first = max(1, min(page - PAGE_LINKS // 2, pages - PAGE_LINKS + 1))
    return list(range(first, min(pages, first + PAGE_LINKS - 1) + 1))
