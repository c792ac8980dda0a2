"""``/healthz``: what load balancers and operators poll."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import FileResponse, JSONResponse, Response

from services.search.http.deps import MetricsDep, ServiceDep
from services.search.http.metrics import metrics_response
from services.search.http.schemas import Health
from services.webui import WEBUI

router = APIRouter()


@router.get("/healthz", response_model=Health)
def healthz(service: ServiceDep) -> Response:
    index = service.index()
    if index is None:
        # Up and answering (the "build an index" page): 200, so a load balancer does not
        # replace every instance of a fresh stack before its first index is published.
        # Storage or database failures are still 503 (http_errors).
        return JSONResponse(Health(status="no-index").model_dump(), status_code=200)
    body = Health(
        status="ok",
        index_version=index.version_id,
        segment=index.segment,
        deltas=index.segments[1:],
        through_seq=index.meta.get("through_seq"),
        num_docs=index.num_docs,
        num_terms=index.num_terms,
    )
    return JSONResponse(body.model_dump())


@router.get("/metrics", include_in_schema=False)
def metrics(service: ServiceDep, registry: MetricsDep) -> Response:
    """Prometheus's text format: request and query latency, queries by mode, the index."""
    return metrics_response(registry, service)


@router.get("/favicon.ico", include_in_schema=False)
def favicon() -> FileResponse:
    """Browsers ask every site for it; without it every page view logs a 404."""
    return FileResponse(WEBUI / "static" / "favicon.ico", media_type="image/x-icon")
