"""What the search service answers with: results, hits, page info and cached copies as
plain dataclasses (the JSON API's models in ``schemas`` read them; templates show them)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Protocol

from services.search.display.snippets import Fragment
from services.search.query.limits import QueryCut
from services.search.retrieval.explain import ScoreBreakdown
from services.storage.formats.blocks import ContentType

MAX_RESULTS = 1000  # deepest result reachable by paging, as web engines do


@dataclass(frozen=True)
class SearchHit:
    doc_num: int
    url: str
    title: str
    score: float
    text_score: float
    pagerank: float
    snippet: list[Fragment]
    cached_url: str
    also_at: list[str] = field(default_factory=list)  # other URLs serving the same bytes
    content_type: str = "text/html"  # the stored MIME type (a badge for PDFs)


@dataclass(frozen=True)
class SearchResults:
    query: str  # as searched: within the query limits (``cut`` says what was left out), or its correction
    total: int  # matching documents
    page: int
    per_page: int
    hits: list[SearchHit] = field(default_factory=list)
    took_ms: float = 0.0
    terms: list[str] = field(default_factory=list)  # analyzed query terms found in the index
    message: str = ""  # why there are no results, when the reason is not "nothing matched"
    index_version: int | None = None
    mode: str = (
        ""  # how the query ran: and, and+or, or, or+feedback, phrase (services.search.retrieval.retrieve)
    )
    some_words_only: bool = False  # no document held every word: the page says so
    few_all_words: int = 0  # so few documents held every word that partial matches joined them
    phrase_relaxed: bool = False  # few documents held the quoted phrase: its words follow
    suggestion: str = ""  # "did you mean": a corrected query that finds clearly more
    cached: bool = False  # answered from the result cache (services.search.result_cache)
    fewer: list[str] = field(default_factory=list)  # nothing found: shorter queries that find some
    total_exact: bool = True  # False: ``total`` is an estimate ("about N results")
    # The query as typed, when its correction's results are shown instead ("Showing results
    # for <query> — search instead for <corrected_from>"); "" otherwise.
    corrected_from: str = ""
    as_typed: bool = False  # asked to search the query exactly as typed (nfpr=1): never corrected
    # What the query limits left out of the query as sent (``query`` is what was searched).
    cut: QueryCut = field(default_factory=QueryCut)

    @property
    def pages(self) -> int:
        """Pages a user can reach (at most MAX_RESULTS results deep)."""
        return math.ceil(min(self.total, MAX_RESULTS) / self.per_page) if self.per_page else 0


class RecordPlace(Protocol):
    """Where a document's record is: a documents row, as an object or as selected columns."""

    @property
    def doc_num(self) -> int: ...
    @property
    def record_block(self) -> str: ...
    @property
    def record_offset(self) -> int: ...
    @property
    def record_length(self) -> int: ...


@dataclass(frozen=True)
class InLink:
    doc_num: int
    url: str
    title: str
    anchor: str  # the link's text on the linking page ("" when it has none)


@dataclass(frozen=True)
class PageInfo:
    doc_num: int
    url: str
    title: str
    content_type: str
    size: int  # bytes as stored
    lang: str
    status: int
    depth: int  # links from a seed
    last_crawled: float
    versions: int  # fetches that found new content
    unchanged: int  # recrawls that found it unchanged
    in_link_count: int | None  # None: the index keeps no link graph (format 3) or lacks the page
    in_links: list[InLink]  # up to PAGE_INFO_LIST, best-linked first
    out_link_count: int | None
    same_content: list[str]  # other URLs serving these exact bytes
    near_duplicates: list[str]  # pages folded under this one (nearly the same text)
    shown_under: str  # the page this one is folded under in results ("" when none)
    score: ScoreBreakdown | None  # for the query given, when it is in the index
    cached_url: str = ""  # "" when the site asks for no cached copy (robots noarchive)


@dataclass(frozen=True)
class CachedText:
    doc_num: int
    url: str
    title: str
    text: str
    media_type: str
    fetched_at: float = 0.0


@dataclass(frozen=True)
class CachedCopy:
    doc_num: int
    url: str
    body: bytes
    media_type: str
    fetched_at: float = 0.0  # when the crawler (or an ingest) stored these bytes, Unix time


def media_type(content_type: str) -> str:
    """The stored MIME type, or the block type's if only a type name was stored."""
    value = (content_type or "").strip()
    if "/" in value:
        return value
    try:
        return ContentType[value.upper()].mime
    except KeyError:
        return ContentType.OTHER.mime
