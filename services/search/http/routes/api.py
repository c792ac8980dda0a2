"""The JSON API (``/api/...``)."""

from __future__ import annotations

from functools import partial

from fastapi import APIRouter, Query
from fastapi.responses import Response

from services.search.http.deps import MetricsDep, ServiceDep, run_search_work
from services.search.http.schemas import (
    SearchResponse,
    SuggestResponse,
    error_responses,
    search_response_json,
)
from services.search.query.limits import MAX_QUERY_CHARS, MAX_QUERY_WORDS, MIN_REPEAT
from services.search.query.suggest import COMPLETIONS
from services.search.service import MAX_PAGE_SIZE, MAX_RESULTS, MAX_SUGGEST_CHARS

router = APIRouter(prefix="/api")


@router.get("/search", response_model=SearchResponse, responses=error_responses(429, 500, 503))
async def api_search(
    service: ServiceDep,
    metrics: MetricsDep,
    # No length refused: a long query is cut, and the answer says what was left out.
    q: str = Query(
        "",
        description=f"the query; searched within the query limits ({MAX_QUERY_CHARS:,} characters, "
        f"{MAX_QUERY_WORDS} words, a word sent {MIN_REPEAT} or more times in a row once): the answer's "
        "query_cut, ignored_words, ignored_chars, repeated_words and notices say what was left out",
    ),
    page: int = Query(1, ge=1, le=MAX_RESULTS, description="1-based page"),
    size: int | None = Query(
        None, ge=1, description=f"results per page (default: the server's setting; at most {MAX_PAGE_SIZE})"
    ),
    nfpr: bool = Query(
        False,
        description="search the query exactly as typed: no spelling correction replaces it "
        "(a correction is still offered as 'suggestion')",
    ),
) -> Response:
    results = await run_search_work(service, partial(service.search, q, page, size, as_typed=nfpr))
    if q.strip():
        metrics.observe_search(results.mode, results.took_ms)
    # Serialized here, once, from plain dicts: a returned model would be validated and
    # serialized again by FastAPI against response_model (which stays, for the schema).
    body = search_response_json(results)
    status = 503 if results.index_version is None else 200
    return Response(body, status_code=status, media_type="application/json")


@router.get("/suggest", response_model=SuggestResponse, responses=error_responses(429, 500, 503))
async def api_suggest(
    service: ServiceDep,
    q: str = Query(
        "",
        max_length=MAX_QUERY_CHARS,  # what the search box holds at most
        description=f"what has been typed so far (none are offered past {MAX_SUGGEST_CHARS} characters)",
    ),
    limit: int = Query(COMPLETIONS, ge=1, le=20, description="completions wanted"),
) -> SuggestResponse:
    return SuggestResponse(
        query=q, suggestions=await run_search_work(service, partial(service.suggest, q, limit))
    )
