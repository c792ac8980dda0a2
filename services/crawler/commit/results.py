"""What flows from the fetchers to the committer: one result per leased URL."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from services.crawler.frontier.entries import NewUrl, UrlState
from services.crawler.web.fetch_result import FetchResult
from services.crawler.web.parse import ParsedDoc, parse_document
from services.storage.formats.blocks import sha1
from services.storage.formats.records import Link, LinksPickledFlat


@dataclass
class FetchedDoc:
    """A page that becomes a document: its final URL, raw bytes and parsed fields."""

    url: str  # normalized final URL: the document's URL
    body: bytes
    parsed: ParsedDoc
    fetched_at: float
    status: int = 200
    doc_id: str = ""  # hex SHA-1 of body; computed when empty
    content_type: str = ""  # the response's Content-Type header, as parsed

    def __post_init__(self) -> None:
        if not self.doc_id:
            self.doc_id = sha1(self.body).hex()

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without its parse: the write-ahead spool pickles every fetched page, and
        the parse (text, links) is a large part of its bytes and pickling time
        (docs/benchmarks.md); the rare recovery parses the bytes again, with the same inputs,
        to the same fields."""
        return {**self.__dict__, "parsed": None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        if state["parsed"] is None:  # raises ParseError (a ValueError) if it no longer parses
            fetched = FetchResult(self.url, self.url, self.status, self.content_type, self.body)
            self.parsed = parse_document(fetched, self.url)


@dataclass
class UrlResult(LinksPickledFlat):
    """How one leased frontier URL ended, and what it produced."""

    url_id: str
    url: str
    depth: int
    state: UrlState  # done | failed | new (released unfetched, or a retry when retry_at is set)
    status: int | None = None
    error: str | None = None
    doc: FetchedDoc | None = None
    links: list[Link] = field(default_factory=list)  # to enqueue at depth + 1
    counters: Counter[str] = field(default_factory=Counter)
    retry_at: float | None = None  # state new: fetch again then
    interval: float | None = None  # the frontier row's recrawl interval when leased
    found: list[NewUrl] = field(default_factory=list)  # redirect targets, sitemap URLs: as they are
    priority: float | None = None  # state new, released unfetched: its lowered priority (dead_prefixes)
    # Read from an archive (``crawler.archive``), not leased from the frontier: no frontier row to
    # finish, and of several captures of one URL the newest is the page. ``url_id`` is then the
    # record's own key in its batch (a URL may be captured twice), the page's is its URL's.
    archived: bool = False
    alias_of: str = ""  # this URL names the page at alias_of (a wiki redirect, an archived 3xx)
    alias_title: str = ""  # the alias's own title (a wiki redirect's), anchor text of the target


@dataclass
class FlushResult:
    documents: int = 0
    blocks: list[str] = field(default_factory=list)
    new_urls: int = 0
    counters: Counter[str] = field(default_factory=Counter)


@dataclass
class Pending:
    """Completed batches taken from the committer's buffer, for one flush."""

    seqs: list[int] = field(default_factory=list)
    results: list[UrlResult] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)  # results per batch, in ``seqs`` order
    reserved: tuple[int, int] | None = None  # (first doc number, count) reserved for this flush
