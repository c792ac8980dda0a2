"""The JSON API's models: the same data the HTML page shows, typed for clients."""

from __future__ import annotations

import ujson
from pydantic import BaseModel, Field

from services.search.query.limits import MAX_QUERY_CHARS, MAX_QUERY_WORDS, MIN_REPEAT, QueryCut
from services.search.results import PageInfo, SearchResults
from services.search.results import SearchHit as Hit


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
    cached_url: str = Field(description='"" when the site asks for no cached copy (robots noarchive)')
    also_at: list[str] = Field(
        default_factory=list, description="up to 5 other URLs serving the same content"
    )
    content_type: str = Field("text/html", description="the stored MIME type")
    page_info_url: str = Field("", description="what is known about the page (/page/{doc_num})")


class RepeatedWord(BaseModel):
    word: str = Field(description="as sent (a word, a quoted phrase or an operator)")
    times: int = Field(description="times sent in a row; searched once")


class SearchResponse(BaseModel):
    query: str = Field(
        description=f"the query as searched: at most {MAX_QUERY_CHARS:,} characters and {MAX_QUERY_WORDS} "
        f"words, a word sent {MIN_REPEAT} or more times in a row once (query_cut says whether that "
        "changed the query sent)"
    )
    terms: list[str] = Field(description="analyzed query terms found in the index")
    total: int = Field(
        description="number of matching documents, the same on every page of the query "
        "(an estimate when total_exact is false)"
    )
    total_exact: bool = Field(True, description="false: total is an estimate (shown as 'about N results')")
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
    corrected_from: str = Field(
        "",
        description="the query as typed, when the results are its spelling correction's (query): "
        "it answered no document in full, or under a tenth of what the correction answers. "
        "Search it anyway with nfpr=true",
    )
    as_typed: bool = Field(False, description="nfpr was set: the query was searched exactly as typed")
    cached: bool = Field(
        False,
        description="answered from the result cache (same query, page, size, index); took_ms is "
        "then the time the cache lookup took, and the page says 'from cache'",
    )
    fewer: list[str] = Field(
        default_factory=list, description="nothing found: shorter queries that find some"
    )
    query_cut: bool = Field(
        False,
        description="the query searched (query) is not all of the query sent: characters or words past "
        "the limits were ignored (ignored_chars, ignored_words) or repeats searched once (repeated_words)",
    )
    ignored_words: list[str] = Field(
        default_factory=list,
        description=f"the words after the first {MAX_QUERY_WORDS}, as sent, in order: not searched",
    )
    ignored_chars: int = Field(
        0, description=f"characters after the first {MAX_QUERY_CHARS:,} (ending at a word's end): never read"
    )
    repeated_words: list[RepeatedWord] = Field(
        default_factory=list,
        description=f"words sent {MIN_REPEAT} or more times in a row, each searched once",
    )
    notices: list[str] = Field(
        default_factory=list,
        description="what the results page says about the cut, one sentence per change (empty: none)",
    )

    @classmethod
    def from_results(cls, results: SearchResults) -> SearchResponse:
        return cls.model_validate(_response_dict(results))


def search_response_json(results: SearchResults) -> bytes:
    """The body ``SearchResponse.from_results(results).model_dump_json()`` gives, written from
    plain dicts: building and validating the twenty-odd models of a results page costs a
    noticeable share of a cold search (docs/benchmarks.md). The models stay the schema
    (OpenAPI, the schema fuzzer); a test holds the two bodies equal. A score that is not
    finite (never expected) goes the models' way, which writes it as null."""
    data = _response_dict(results)
    try:
        text = ujson.dumps(data, ensure_ascii=False, escape_forward_slashes=False, allow_nan=False)
    except OverflowError:
        return SearchResponse.from_results(results).model_dump_json().encode()
    return text.encode()


def _response_dict(results: SearchResults) -> dict[str, object]:
    """The response's fields, read off the service's answer once for both writers."""
    return {
        "query": results.query,
        "terms": results.terms,
        "total": results.total,
        "total_exact": results.total_exact,
        "page": results.page,
        "per_page": results.per_page,
        "pages": results.pages,
        "took_ms": round(results.took_ms, 3),
        "message": results.message,
        "index_version": results.index_version,
        "mode": results.mode,
        "hits": [_hit_dict(hit) for hit in results.hits],
        "suggestion": results.suggestion,
        "corrected_from": results.corrected_from,
        "as_typed": results.as_typed,
        "cached": results.cached,
        "fewer": results.fewer,
        **_cut_dict(results.cut),
    }


def _cut_dict(cut: QueryCut) -> dict[str, object]:
    return {
        "query_cut": bool(cut),
        "ignored_words": list(cut.ignored_words),
        "ignored_chars": cut.ignored_chars,
        "repeated_words": [{"word": r.word, "times": r.times} for r in cut.repeats],
        "notices": cut.notices(),
    }


def _hit_dict(hit: Hit) -> dict[str, object]:
    text, spans, pos = [], [], 0
    for fragment in hit.snippet:
        if fragment.match:
            spans.append({"start": pos, "end": pos + len(fragment.text)})
        text.append(fragment.text)
        pos += len(fragment.text)
    return {
        "doc_num": hit.doc_num,
        "url": hit.url,
        "title": hit.title,
        "score": float(hit.score),
        "text_score": float(hit.text_score),
        "pagerank": float(hit.pagerank),
        "snippet": "".join(text),
        "highlights": spans,
        "cached_url": hit.cached_url,
        "also_at": list(hit.also_at),
        "content_type": hit.content_type,
        "page_info_url": f"/page/{hit.doc_num}",
    }


class SuggestResponse(BaseModel):
    query: str
    suggestions: list[str] = Field(description="the query with its last word completed, most frequent first")


class Health(BaseModel):
    status: str = Field(description="'ok', or 'no-index' while nothing is published")
    index_version: int | None = None
    segment: str | None = Field(default=None, description="the version's base segment")
    deltas: list[str] = Field(default_factory=list, description="its delta segments, oldest first")
    through_seq: int | None = Field(default=None, description="the last commit the version includes")
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
        429: "too many requests from this address (Retry-After says when to try again)",
    }
    # JSON for programs; a page for a browser on an HTML route (``http_errors``).
    return {
        status: {
            "model": ErrorDetail,
            "description": said[status],
            "content": {"application/json": {}, "text/html": {}},
        }
        for status in statuses
    }


class TermScore(BaseModel):
    term: str = Field(description="as indexed (stemmed)")
    word: str = Field(description="as typed")
    weight: float = Field(description="occurrences in the query")
    impact: float = Field(description="BM25F impact of the term in the document (0: absent)")
    score: float = Field(description="weight * impact")
    tfs: dict[str, int] = Field(description="term frequency per field: title, body, anchor, url")


class ScoreParts(BaseModel):
    query: str
    mode: str
    rank: int | None = Field(description="1-based position among the results; null beyond them")
    terms: list[TermScore]
    words_score: float
    feedback_score: float = Field(description="what RM3's expansion terms added on top of the words")
    text_score: float
    pagerank: float
    prior: float = Field(description="W * s / (s + 1), s = N * pagerank")
    entry_factor: float = Field(
        default=1.0, description="the entry-page factor: above 1 for a home or section page the query names"
    )
    exact_bonus: float = Field(description="the words-as-typed bonus, a fraction of the score")
    final_score: float


class InLinkModel(BaseModel):
    doc_num: int
    url: str
    title: str
    anchor: str


class PageInfoResponse(BaseModel):
    doc_num: int
    url: str
    title: str
    content_type: str
    size: int = Field(description="bytes as stored")
    lang: str
    status: int
    depth: int = Field(description="links from a seed when first crawled")
    last_crawled: float = Field(description="Unix time")
    versions: int = Field(description="fetches that found new content")
    unchanged: int = Field(description="recrawls that found it unchanged")
    in_link_count: int | None = Field(description="null when the index keeps no link graph")
    in_links: list[InLinkModel] = Field(description="up to 20, best-linked first")
    out_link_count: int | None
    same_content: list[str] = Field(description="other URLs serving the same bytes")
    near_duplicates: list[str] = Field(description="pages shown under this one (nearly the same text)")
    shown_under: str = Field(description="the page this one is shown under in results, if any")
    cached_url: str = Field(description='"" when the site asks for no cached copy (robots noarchive)')
    score: ScoreParts | None = Field(description="why it ranked where it did for the query q")

    @classmethod
    def from_info(cls, info: PageInfo) -> PageInfoResponse:
        """Read off the service's dataclasses by attribute (pydantic's ``from_attributes``, the
        nested models and ``TermPart.score`` included): the fields are listed once, above."""
        return cls.model_validate(vars(info), from_attributes=True)
