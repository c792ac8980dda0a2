"""The JSON API's models: the same data the HTML page shows, typed for clients."""

from __future__ import annotations

from pydantic import BaseModel, Field

from services.search.service import SearchHit as Hit
from services.search.service import SearchResults


class Highlight(BaseModel):
    """A matching word: ``snippet[start:end]`` (character offsets)."""

    start: int
    end: int


class SearchHit(BaseModel):
    doc_num: int
    url: str
    title: str
    score: float = Field(
        description="final score: text_score + weight * s / (s + 1), s = N * pagerank (docs/ranking.md)"
    )
    text_score: float = Field(description="BM25F part of the score (with feedback terms, if any)")
    pagerank: float
    snippet: str = Field(description="plain text; never HTML")
    highlights: list[Highlight] = Field(description="spans of snippet that match the query")
    cached_url: str
    also_at: list[str] = Field(
        default_factory=list, description="up to 5 other URLs serving the same content"
    )

    @classmethod
    def from_hit(cls, hit: Hit) -> SearchHit:
        text, spans, pos = [], [], 0
        for fragment in hit.snippet:
            if fragment.match:
                spans.append(Highlight(start=pos, end=pos + len(fragment.text)))
            text.append(fragment.text)
            pos += len(fragment.text)
        return cls(
            doc_num=hit.doc_num,
            url=hit.url,
            title=hit.title,
            score=hit.score,
            text_score=hit.text_score,
            pagerank=hit.pagerank,
            snippet="".join(text),
            highlights=spans,
            cached_url=hit.cached_url,
            also_at=list(hit.also_at),
        )


class SearchResponse(BaseModel):
    query: str
    terms: list[str] = Field(description="analyzed query terms found in the index")
    total: int = Field(description="number of matching documents")
    page: int
    per_page: int
    pages: int = Field(description="pages reachable by paging")
    took_ms: float
    message: str = Field(description="why there are no results, if not just 'nothing matched'")
    index_version: int | None
    mode: str = Field(
        description="how the query ran: 'and' (every word), 'and+or' (documents "
        "with every word, then some), 'or', 'or+feedback' (RM3), "
        "'phrase'"
    )
    hits: list[SearchHit]
    suggestion: str = Field("", description="did you mean: a corrected query that finds clearly more")

    @classmethod
    def from_results(cls, results: SearchResults) -> SearchResponse:
        return cls(
            query=results.query,
            terms=results.terms,
            total=results.total,
            page=results.page,
            per_page=results.per_page,
            pages=results.pages,
            took_ms=round(results.took_ms, 3),
            message=results.message,
            index_version=results.index_version,
            mode=results.mode,
            hits=[SearchHit.from_hit(hit) for hit in results.hits],
            suggestion=results.suggestion,
        )


class SuggestResponse(BaseModel):
    query: str
    suggestions: list[str] = Field(description="the query with its last word completed, most frequent first")


class Health(BaseModel):
    status: str = Field(description="'ok', or 'no-index' while nothing is published")
    index_version: int | None = None
    segment: str | None = None
    num_docs: int = 0
    num_terms: int = 0


class ErrorDetail(BaseModel):
    """A failed request: what went wrong, in a sentence (never a traceback)."""

    detail: str


def error_responses(*statuses: int) -> dict[int | str, dict[str, object]]:
    """OpenAPI ``responses`` for the errors a route may answer (``http_errors``)."""
    said = {
        404: "no such document",
        503: "the index or the document store is unavailable (or nothing is published yet)",
        500: "the service failed; the operator's log has the details",
    }
    # Errors are JSON on every route, HTML pages included (``http_errors``).
    return {
        status: {"model": ErrorDetail, "description": said[status], "content": {"application/json": {}}}
        for status in statuses
    }
