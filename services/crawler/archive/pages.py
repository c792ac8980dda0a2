"""One archive record as the result of a visit: parsed as the crawler parses a fetched page.

- A captured response (``payload``) goes through the crawler's own classification and
  parse (``web.parse``: HTML and PDF, as a fetch keeps them) under its original URL and
  capture time; a 2xx is a page, a permanent redirect (301, 308) with a ``Location``
  or a short refresh an alias of its target (a temporary one is counted and skipped:
  the web crawl keeps no alias for it either), anything else is skipped and counted
  by status.
- An extracted document (a wiki page, a directory entry, a collection's text) is stored
  as text (``title\\n\\ntext``) with its links and language as the reader gave them.
- An alias (a wiki redirect) names its target's page, with its own title when it has one.
- The bundle's ``language`` (or the wiki's) is the document's language for the analyzer;
  the crawl's language filter applies only when ``bundle.toml`` asks (``filter_language``).

Every record adds to one kind (``Reading.kinds``): ``page``, ``document``, ``alias``,
``skipped.<why>``, or ``error.<why>`` for damage, whose message (file and byte offset) is
kept. Pure functions: the reading is ``reading``'s.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from urllib.parse import urljoin

from services.archives.records import ERRORS, ArchiveRecord, Document, Payload
from services.crawler.commit.results import FetchedDoc, UrlResult
from services.crawler.errors import ParseError
from services.crawler.frontier.archive_batches import Reading
from services.crawler.frontier.entries import UrlState
from services.crawler.outcome import PERMANENT_REDIRECTS
from services.crawler.web.fetch_result import FetchResult
from services.crawler.web.parse import (
    INDEXABLE,
    MAX_LINKS,
    MAX_REFRESH_DELAY,
    ParsedDoc,
    classify,
    parse_document,
)
from services.storage.formats.blocks import ContentType
from services.storage.formats.records import Link
from services.text.analysis.lang import identify, keep_language
from services.text.errors import BadUrlError
from services.text.urls import in_scope, normalize_url


@dataclass(frozen=True)
class ArchiveOptions:
    """What a bundle and the crawl's settings ask of its records."""

    batch_id: int
    language: str = ""  # bundle.toml's: every document's language when set
    filter_language: bool = False  # apply the crawl's language filter (``languages``)
    languages: frozenset[str] = frozenset()
    seed_frontier: bool = False  # out-links into the web frontier (in ``scope``)
    scope: frozenset[str] = frozenset()


def record_key(batch_id: int, index: int) -> str:
    """A result's own key: the record's place in its batch (a batch may capture a URL twice)."""
    return hashlib.sha1(f"archive:{batch_id}:{index}".encode()).hexdigest()


def to_result(
    record: ArchiveRecord, index: int, options: ArchiveOptions, reading: Reading
) -> UrlResult | None:
    """The result of one record (None: skipped), counted in ``reading``."""
    reading.records += 1
    if record.skipped is not None:
        if record.skipped in ERRORS:
            reading.kinds[f"error.{record.skipped.value}"] += 1
            reading.damage.append(record.error or f"{record.url} at byte {record.offset:,}")
        else:
            reading.kinds[f"skipped.{record.skipped.value}"] += 1
        return None
    try:
        url = normalize_url(record.url)
    except BadUrlError:
        reading.kinds["skipped.bad_url"] += 1
        return None
    result = UrlResult(record_key(options.batch_id, index), url, 0, UrlState.DONE, archived=True)
    result.counters["archive_records"] += 1
    if record.redirect_to:
        return _alias(result, record.redirect_to, reading, record.title)
    if record.payload is not None:
        reading.bytes += len(record.payload.body)
        return _page(result, record, record.payload, options, reading)
    if record.document is not None:
        reading.bytes += len(record.document.text.encode("utf-8"))
        return _document(result, record, record.document, options, reading)
    reading.kinds["skipped.empty"] += 1
    return None


def _alias(result: UrlResult, target: str, reading: Reading, title: str = "") -> UrlResult | None:
    try:
        result.alias_of = normalize_url(target)
    except BadUrlError:
        reading.kinds["skipped.bad_url"] += 1
        return None
    if result.alias_of == result.url:
        reading.kinds["skipped.self_alias"] += 1
        return None
    result.status = 301
    result.alias_title = title.strip()
    reading.kinds["alias"] += 1
    return result


def _header(headers: list[tuple[str, str]], name: str) -> str:
    return next((value for key, value in headers if key.lower() == name), "")


def _page(
    result: UrlResult, record: ArchiveRecord, payload: Payload, options: ArchiveOptions, reading: Reading
) -> UrlResult | None:
    status = payload.status
    result.status = status
    if 300 <= status < 400:
        location = _header(payload.headers, "location")
        if location and status in PERMANENT_REDIRECTS:  # the web crawl's rule (outcome.py)
            return _alias(result, urljoin(record.url, location.strip()), reading)
        if location:  # 302/303/307: the URL keeps its own name; its target is not its page
            reading.kinds["skipped.temporary_redirect"] += 1
            return None
    if not 200 <= status < 300:
        reading.kinds[f"skipped.status_{status // 100}xx"] += 1
        return None
    if classify(payload.content_type, payload.body) not in INDEXABLE:
        reading.kinds["skipped.content_type"] += 1
        return None
    robots_tag = tuple(value for key, value in payload.headers if key.lower() == "x-robots-tag")
    fetched = FetchResult(
        result.url, record.url, status, payload.content_type, payload.body,
        robots_tag=robots_tag, refresh=_header(payload.headers, "refresh"),
    )  # fmt: skip
    try:
        parsed = parse_document(fetched, result.url)
    except ParseError:
        reading.kinds["skipped.parse_error"] += 1
        return None
    if parsed.refresh_url and parsed.refresh_url != result.url and parsed.refresh_delay <= MAX_REFRESH_DELAY:
        return _alias(result, parsed.refresh_url, reading)
    if parsed.noindex:
        reading.kinds["skipped.noindex"] += 1
        return None
    if options.language:
        parsed.lang = options.language
    return _keep(
        result,
        parsed,
        payload.body,
        record.fetched_at,
        status,
        payload.content_type,
        options,
        reading,
        "page",
    )


def _document(
    result: UrlResult, record: ArchiveRecord, document: Document, options: ArchiveOptions, reading: Reading
) -> UrlResult | None:
    if not document.text.strip():
        reading.kinds["skipped.empty"] += 1
        return None
    links = []
    for target, anchor in document.links[:MAX_LINKS]:
        try:
            links.append(Link(normalize_url(target), anchor))
        except BadUrlError:
            continue
    lang = document.language or options.language or identify(f"{document.title} {document.text}")
    parsed = ParsedDoc(
        ContentType.TEXT, title=document.title, text=document.text, description=document.description,
        lang=lang, links=links, links_dropped=max(0, len(document.links) - MAX_LINKS),
    )  # fmt: skip
    body = (f"{document.title}\n\n{document.text}" if document.title else document.text).encode("utf-8")
    return _keep(
        result, parsed, body, record.fetched_at, 200, ContentType.TEXT.mime, options, reading, "document"
    )


def _keep(
    result: UrlResult,
    parsed: ParsedDoc,
    body: bytes,
    fetched_at: float,
    status: int,
    content_type: str,
    options: ArchiveOptions,
    reading: Reading,
    kind: str,
) -> UrlResult | None:
    if options.filter_language and not keep_language(parsed.lang, options.languages):
        reading.kinds["skipped.language"] += 1
        return None
    if options.seed_frontier:  # the committer adds them to the frontier at depth 1
        result.links = [link for link in parsed.links if in_scope(link.url, options.scope)]
    result.doc = FetchedDoc(result.url, body, parsed, fetched_at, status, content_type=content_type)
    reading.kinds[kind] += 1
    return result
