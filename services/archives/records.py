"""What an archive holds, one record at a time: ``ArchiveRecord``.

Every reader (``formats/``) yields these, and nothing else, so the crawler treats a
WARC capture, a wiki page and a row of a database alike. A record is one of:

- a **payload** (web archives): the HTTP status, headers, content type and decoded
  body of a capture, which the crawler parses exactly as a page it fetched;
- an **extracted document** (wikis, directories, collections): title, text, links
  with their anchor text, language, description, ready to store;
- an **alias** (``redirect_to``): a wiki redirect, a URL that names another page;
- **skipped**: counted, never stored, with the reason (``Skip``) and, for damage, an
  ``error`` that names the file and the byte offset.

``offset`` is where the record starts in its file, in the batch's coordinates
(``batches``), so a record is found again and an error points at its bytes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum


class Skip(StrEnum):
    """Why a record is not stored: the counters' names."""

    RECORD_TYPE = "record_type"  # request, metadata, dns, warcinfo, ... (detail: the type)
    CONTENT_TYPE = "content_type"  # a payload the crawler does not keep (detail: the media type)
    TOO_LARGE = "too_large"  # over the size cap: streamed past, never held whole
    UNRESOLVED_REVISIT = "unresolved_revisit"  # a revisit whose original is not in the bundle
    NAMESPACE = "namespace"  # a wiki page outside the bundle's namespaces
    EMPTY = "empty"  # a page or row without text
    CONTENT_ENCODING = "content_encoding"  # a body in an encoding we cannot decode (br, say)
    CORRUPT = "corrupt"  # damaged bytes: a garbage record, a wrong length, bad XML or JSON
    TRUNCATED = "truncated"  # the file ends inside a record (gzip or bz2 cut short)
    UNKNOWN_VERSION = "unknown_version"  # a WARC version this reader does not know


ERRORS = frozenset({Skip.CORRUPT, Skip.TRUNCATED, Skip.UNKNOWN_VERSION})


@dataclass
class Payload:
    """A captured HTTP response, its body de-chunked and content-decoded (as a fetch gives it).

    ``headers`` are the captured response's, less ``Transfer-Encoding`` and
    ``Content-Encoding`` (the body no longer has either)."""

    status: int
    headers: list[tuple[str, str]]
    content_type: str
    body: bytes


@dataclass
class Document:
    """A document read from a dump: no HTML to parse. ``links`` are (normalized URL, anchor)."""

    title: str
    text: str
    links: list[tuple[str, str]] = field(default_factory=list)
    language: str = ""  # "" when the archive does not say (the crawler identifies it)
    description: str = ""
    source_id: str = ""  # the archive's own name for it: a collection's document id (a run names it)


@dataclass
class ArchiveRecord:
    url: str  # web archives: the original URL as captured; dumps: a stable URL, normalized
    offset: int
    fetched_at: float  # capture time; the archive's time when it gives none
    ip: str = ""  # WARC-IP-Address / the ARC header's IP, when known
    payload: Payload | None = None
    document: Document | None = None
    redirect_to: str = ""  # an alias: this URL names the page at redirect_to
    title: str = ""  # an alias's own title (a wiki redirect's: "UK" for "United Kingdom")
    skipped: Skip | None = None
    detail: str = ""  # with ``skipped``: the record or media type
    error: str = ""  # with an error kind of ``skipped``: what is wrong, naming file and offset

    @property
    def kind(self) -> str:
        """The counter this record adds to: payload, document, alias, or skipped.<reason>."""
        if self.skipped is not None:
            return f"skipped.{self.skipped.value}"
        if self.redirect_to:
            return "alias"
        return "payload" if self.payload is not None else "document"


def skipped(url: str, offset: int, fetched_at: float, why: Skip, detail: str = "") -> ArchiveRecord:
    return ArchiveRecord(url, offset, fetched_at, skipped=why, detail=detail)


def damaged(name: str, offset: int, fetched_at: float, why: Skip, what: str, url: str = "") -> ArchiveRecord:
    """A skipped record for damaged bytes, its error naming the file and the byte offset."""
    return ArchiveRecord(url, offset, fetched_at, skipped=why, error=f"{name} at byte {offset:,}: {what}")


def count(records: Iterable[ArchiveRecord]) -> Counter[str]:
    """Records by ``kind``, plus ``skipped.record_type.<type>`` and ``skipped.content_type.<type>``
    for skips by type (the operator's "skipped by type")."""
    counts: Counter[str] = Counter()
    for record in records:
        counts[record.kind] += 1
        if record.skipped in (Skip.RECORD_TYPE, Skip.CONTENT_TYPE) and record.detail:
            counts[f"{record.kind}.{record.detail}"] += 1
    return counts
