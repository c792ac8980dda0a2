"""What was crawled, exported as WARC 1.1: the store read back as captures (``nimbus archive export``).

``stored_captures`` reads the documents table in doc-number order (``Selection``: fetched
since a time, on one host) and, for each document, its stored bytes from the content
block and its record (title, language, description, out-links) from the record block.
Consecutive documents of one block are read with one ranged read of at most
``SPAN_BYTES`` (a committer writes a block's documents in doc-number order), so an
export from S3 costs a GET per stretch of a block, not one per document. After the
documents, each duplicate URL the crawler folded into an exported document becomes a
``revisit`` record naming it.

Stored bytes that cannot be read (a blob missing, a block cut short, bytes that do not
match their docId) leave that document out: its error names the document, its URL and
the block, and the rest is exported (``ExportReport``). A record that cannot be read
costs only the metadata record's fields.

The crawl keeps no response headers and no server address, so a response carries the
stored Content-Type and no ``WARC-IP-Address``; the fetch time is the document's
``last_crawled``.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO
from urllib.parse import urlsplit

from sqlalchemy import select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from services.archives.errors import ArchiveError
from services.archives.export import Capture, Revisit, payload_digest, write_warc
from services.config import Settings
from services.storage.blobs.blobstore import BlobStore, S3BlobStore, open_blobstore
from services.storage.errors import StorageError
from services.storage.formats.blocks import sha1
from services.storage.formats.records import Record, decode_record
from services.storage.sql.engines import make_engine, session_factory
from services.storage.sql.models import Document, DuplicateUrl

# 16 MiB a ranged read: a few hundred pages of a block in one GET, and never a whole 200 MB
# block in memory; a document larger than this is read alone.
SPAN_BYTES = 16 * 1024 * 1024
ROWS_PER_QUERY = 1000  # documents rows fetched at a time (keyset pagination on doc_num)
PROGRESS_EVERY = 2.0  # seconds between progress lines
ERRORS_SHOWN = 20  # errors printed one by one; the rest counted


class ExportError(ArchiveError):
    """The export cannot be written where asked (a folder missing, a bucket unreachable)."""


@dataclass(frozen=True)
class Selection:
    """Which documents to export: fetched at or after ``since`` (epoch seconds), on ``host``
    (the URL's host name, any port; "" for every host)."""

    since: float | None = None
    host: str = ""

    def wants(self, url: str) -> bool:
        return not self.host or (urlsplit(url).hostname or "") == self.host.lower()


@dataclass
class ExportReport:
    documents: int = 0  # exported: request, response and metadata records each
    revisits: int = 0  # duplicate URLs written as revisit records
    records: int = 0  # WARC records written, warcinfo included
    bytes: int = 0  # written to the output
    failed: int = 0  # documents left out: their bytes could not be read
    errors: list[str] = field(default_factory=list)  # one a failed document (what and where)
    no_record: int = 0  # exported without their record's fields (title, links)
    seconds: float = 0.0

    def summary(self) -> str:
        rate = self.records / self.seconds if self.seconds > 0 else 0.0
        failed = f"; {self.failed} documents NOT exported (unreadable bytes)" if self.failed else ""
        return (
            f"{self.documents} documents and {self.revisits} duplicate URLs as {self.records} WARC "
            f"records, {self.bytes / 1e6:.1f} MB in {self.seconds:.1f} s ({rate:.0f} records/s){failed}"
        )


@dataclass(frozen=True)
class _Row:
    doc_num: int
    url: str
    doc_id: str
    content_type: str
    status: int
    length: int
    last_crawled: float
    content_block: str
    content_offset: int
    record_block: str
    record_offset: int
    record_length: int


_COLUMNS = (
    Document.doc_num, Document.url, Document.doc_id, Document.content_type, Document.status,
    Document.length, Document.last_crawled, Document.content_block, Document.content_offset,
    Document.record_block, Document.record_offset, Document.record_length,
)  # fmt: skip


def stored_captures(
    sessions: sessionmaker[Session],
    blobs: BlobStore,
    selection: Selection,
    report: ExportReport,
    *,
    span_bytes: int = SPAN_BYTES,
) -> Iterator[Capture | Revisit]:
    """The selected documents as captures, then their duplicate URLs as revisits; documents
    whose bytes cannot be read are counted and named in ``report``, not yielded."""
    exported: dict[int, tuple[str, float, str, str]] = {}  # doc_num -> url, time, type, digest
    for run in _runs(_rows(sessions, selection), span_bytes):
        bodies = _read_span(blobs, run, "content_block", "content_offset", lambda r: r.length, report)
        records = _records(blobs, run, span_bytes)
        for row in run:
            body = bodies.get(row.doc_num)
            if body is None:
                continue
            record = records.get(row.doc_num)
            if record is None:
                report.no_record += 1
            exported[row.doc_num] = (row.url, row.last_crawled, row.content_type, payload_digest(body))
            report.documents += 1
            fields = _fields(record)
            yield Capture(row.url, row.last_crawled, "", row.content_type, row.status, [], body, fields)
    for url, seen, doc_num in _duplicates(sessions, selection):
        original = exported.get(doc_num)
        if original is not None and url != original[0]:
            report.revisits += 1
            yield Revisit(url, seen, original[0], original[1], original[2], original[3])


def _rows(sessions: sessionmaker[Session], selection: Selection) -> Iterator[_Row]:
    """The selected documents rows by doc_num, a page of rows per query (no long transaction:
    a crawl may be writing)."""
    after = -1
    while True:
        query = select(*_COLUMNS).where(Document.doc_num > after)
        if selection.since is not None:
            query = query.where(Document.last_crawled >= selection.since)
        if selection.host:
            query = query.where(Document.url.contains(selection.host.lower()))  # narrowed in wants()
        query = query.order_by(Document.doc_num).limit(ROWS_PER_QUERY)
        try:
            with sessions() as session:
                page = [_Row(**row._asdict()) for row in session.execute(query)]
        except SQLAlchemyError as exc:
            raise ExportError(f"cannot read the documents table: {exc}") from exc
        if not page:
            return
        after = page[-1].doc_num
        yield from (row for row in page if selection.wants(row.url))


def _runs(rows: Iterable[_Row], span_bytes: int) -> Iterator[list[_Row]]:
    """Consecutive rows of one content block whose bytes lie within ``span_bytes`` of the first."""
    run: list[_Row] = []
    for row in rows:
        if run and (
            row.content_block != run[0].content_block
            or row.content_offset < run[0].content_offset
            or row.content_offset + row.length - run[0].content_offset > span_bytes
        ):
            yield run
            run = []
        run.append(row)
    if run:
        yield run


def _read_span(
    blobs: BlobStore,
    run: list[_Row],
    block_of: str,
    offset_of: str,
    length_of: Callable[[_Row], int],
    report: ExportReport,
) -> dict[int, bytes]:
    """The stored bytes of a run's documents, checked against their docIds, by doc_num; the
    ones that cannot be read are reported."""
    block = getattr(run[0], block_of)
    start = min(getattr(r, offset_of) for r in run)
    end = max(getattr(r, offset_of) + length_of(r) for r in run)
    try:
        data = blobs.get(block, start, end)
    except StorageError as exc:
        for row in run:
            _fail(report, row, f"content block {block} cannot be read ({exc})")
        return {}
    bodies = {}
    for row in run:
        at = getattr(row, offset_of) - start
        body = data[at : at + length_of(row)]
        if len(body) != row.length:
            _fail(report, row, f"content block {block} ends at byte {start + len(data):,}, inside it")
        elif sha1(body).hex() != row.doc_id.lower():
            _fail(report, row, f"its bytes at {block}:{row.content_offset:,} do not match its docId")
        else:
            bodies[row.doc_num] = body
    return bodies


def _records(blobs: BlobStore, run: list[_Row], span_bytes: int) -> dict[int, Record]:
    """The run's records by doc_num (a run's records lie together in its record block too; one
    that cannot be read is left out)."""
    records: dict[int, Record] = {}
    group: list[_Row] = []
    for row in sorted(run, key=lambda r: (r.record_block, r.record_offset)):
        if group and (
            row.record_block != group[0].record_block
            or row.record_offset + row.record_length - group[0].record_offset > span_bytes
        ):
            records.update(_record_group(blobs, group))
            group = []
        group.append(row)
    if group:
        records.update(_record_group(blobs, group))
    return records


def _record_group(blobs: BlobStore, group: list[_Row]) -> dict[int, Record]:
    start = group[0].record_offset
    end = max(r.record_offset + r.record_length for r in group)
    try:
        data = blobs.get(group[0].record_block, start, end)
    except StorageError:
        return {}
    found = {}
    for row in group:
        member = data[row.record_offset - start : row.record_offset - start + row.record_length]
        try:
            record = decode_record(member, row.record_block)
        except StorageError:
            continue
        if record.doc_num == row.doc_num:
            found[row.doc_num] = record
    return found


def _fields(record: Record | None) -> list[tuple[str, str]]:
    """The metadata record's fields from a document's record (Heritrix names ``outlink``)."""
    if record is None:
        return []
    fields = [(name, value) for name, value in (
        ("title", record.title), ("language", record.lang), ("description", record.description),
    ) if value]  # fmt: skip
    if record.noarchive:
        fields.append(("robots", "noarchive"))
    fields += [("outlink", link.url) for link in record.links]
    return fields


def _duplicates(sessions: sessionmaker[Session], selection: Selection) -> Iterator[tuple[str, float, int]]:
    query = select(DuplicateUrl.url, DuplicateUrl.last_seen, DuplicateUrl.doc_num)
    query = query.order_by(DuplicateUrl.url_id)
    if selection.since is not None:
        query = query.where(DuplicateUrl.last_seen >= selection.since)
    try:
        with sessions() as session:
            rows = list(session.execute(query))
    except SQLAlchemyError as exc:
        raise ExportError(f"cannot read the duplicate URLs: {exc}") from exc
    for url, seen, doc_num in rows:
        if selection.wants(url):
            yield url, seen, doc_num


def _fail(report: ExportReport, row: _Row, what: str) -> None:
    report.failed += 1
    report.errors.append(f"document {row.doc_num} ({row.url}) not exported: {what}")


# --- the command's work -------------------------------------------------------------------


def export_store(
    settings: Settings,
    out: str,
    selection: Selection = Selection(),
    *,
    progress: bool = True,
    compress: bool = True,
    created: float | None = None,
) -> ExportReport:
    """Write the documents ``selection`` picks from ``settings``' store as WARC 1.1 to ``out``
    (a path, or ``s3://bucket/key``), a gzip member a record; progress on stderr."""
    blobs = open_blobstore(settings.blob_url, settings.aws_endpoint_url)
    engine = make_engine(settings.database_url)
    report = ExportReport()
    started = time.monotonic()
    try:
        with _target(out, settings.aws_endpoint_url) as fh:
            counted = _Counting(fh)
            captures = stored_captures(session_factory(engine), blobs, selection, report)
            if progress:
                captures = _progress(captures, report, counted, started)
            report.records = write_warc(counted, captures, compress=compress, created=created)
            report.bytes = counted.written
    finally:
        engine.dispose()
    report.seconds = time.monotonic() - started
    return report


def _target(out: str, endpoint_url: str | None) -> AbstractContextManager[IO[bytes]]:
    if out.startswith("s3://"):
        bucket, _slash, key = out[len("s3://") :].partition("/")
        if not bucket or not key or key.endswith("/"):
            raise ExportError(f"{out}: name the object to write, s3://bucket/path/crawl.warc.gz")
        prefix, _sep, name = key.rpartition("/")
        return _upload(S3BlobStore(bucket, prefix, endpoint_url=endpoint_url), name, out)
    return _local_file(Path(out))


@contextlib.contextmanager
def _upload(store: BlobStore, name: str, out: str) -> Iterator[IO[bytes]]:
    """The blob store's writer (spooled, uploaded at the end, nothing stored after an error),
    its own errors naming the export's target."""
    written = False
    try:
        with store.writer(name) as fh:
            yield fh
            written = True
    except StorageError as exc:
        if not written:
            raise
        raise ExportError(f"cannot write {out}: {exc}") from exc


@contextlib.contextmanager
def _local_file(path: Path) -> Iterator[IO[bytes]]:
    """``path``, written as ``.<name>.part`` beside it and renamed at the end: an export that
    fails leaves no file that looks whole."""
    part = path.with_name(f".{path.name}.part")
    try:
        fh = part.open("wb")
    except OSError as exc:
        raise ExportError(f"cannot write {path}: {exc.strerror or exc}") from exc
    try:
        with fh:
            yield fh
        os.replace(part, path)
    except BaseException:
        part.unlink(missing_ok=True)
        raise


class _Counting:
    """Bytes written through it, for the progress line and the report."""

    def __init__(self, fh: IO[bytes]) -> None:
        self.fh, self.written = fh, 0

    def write(self, data: bytes) -> int:
        self.written += len(data)
        return self.fh.write(data)


def _progress(
    captures: Iterable[Capture | Revisit], report: ExportReport, counted: _Counting, started: float
) -> Iterator[Capture | Revisit]:
    last = started
    for capture in captures:
        yield capture
        now = time.monotonic()
        if now - last >= PROGRESS_EVERY:
            last = now
            records = 1 + 3 * report.documents + report.revisits
            print(
                f"export: {report.documents} documents, {records} records "
                f"({records / (now - started):.0f} records/s), {counted.written / 1e6:.1f} MB"
                + (f", {report.failed} not exported" if report.failed else ""),
                file=sys.stderr,
                flush=True,
            )
