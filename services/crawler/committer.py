"""The committer: fetched batches in, blocks and database rows out, all or nothing.

Batches arrive in sequence order. ``flush`` first writes the content and
record blocks to the blob store, then records everything in ONE database
transaction: document rows (dense ``doc_num``), the batches' frontier rows,
the newly discovered URLs, the counters and the ledger. A crash before the
transaction leaves only orphan blobs (harmless: nothing names them), and the
batches' leases expire and are fetched again; a crash after it loses nothing.
So "a document row exists" always means "its bytes are readable".

Archive imports will feed the same committer with results that were read
from WARC files instead of fetched.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from services.crawler import frontier
from services.crawler.frontier import NewUrl, Outcome
from services.crawler.parse import ParsedDoc
from services.crawler.urls import url_id
from services.storage.blobstore import BlobStore
from services.storage.blocks import ENTRY_SIZE, PREAMBLE_SIZE, ContentBlockWriter, sha1
from services.storage.db import bump_counters, chunked
from services.storage.models import Document
from services.storage.records import Link, Record, RecordBlockWriter

log = logging.getLogger(__name__)

_ATTEMPTS = 3  # another committer took our doc numbers: rebuild the blocks and try again


class CommitConflictError(RuntimeError):
    """The documents table changed under a flush (another committer ran)."""


@dataclass
class FetchedDoc:
    """A page that becomes a document: its final URL, raw bytes and parsed fields."""

    url: str  # normalized final URL: the document's URL (differs from the entry's after a redirect)
    body: bytes
    parsed: ParsedDoc
    fetched_at: float
    status: int = 200


@dataclass
class UrlResult:
    """How one leased frontier URL ended, and what it produced."""

    url_id: str
    url: str
    depth: int
    state: str  # done | failed | new (released unfetched)
    status: int | None = None
    error: str | None = None
    doc: FetchedDoc | None = None
    links: list[Link] = field(default_factory=list)  # to enqueue at depth + 1
    counters: Counter[str] = field(default_factory=Counter)


@dataclass
class FlushResult:
    documents: int = 0
    blocks: list[str] = field(default_factory=list)
    new_urls: int = 0
    counters: Counter[str] = field(default_factory=Counter)


class Committer:
    """Buffers results of completed batches until ``flush``."""

    def __init__(self, sessions: sessionmaker[Session], blobs: BlobStore, *,
                 max_block_bytes: int, max_block_docs: int) -> None:
        self.sessions = sessions
        self.blobs = blobs
        self.max_block_bytes = max_block_bytes
        self.max_block_docs = max_block_docs
        self._seqs: list[int] = []
        self._results: list[UrlResult] = []
        self._doc_bytes = 0
        self._docs = 0

    @property
    def pending(self) -> bool:
        return bool(self._seqs)

    @property
    def seqs(self) -> list[int]:
        """Sequence numbers of the buffered (completed, not yet committed) batches."""
        return list(self._seqs)

    @property
    def full(self) -> bool:
        """Enough buffered for a full-size block: time to flush."""
        return self._doc_bytes >= self.max_block_bytes or self._docs >= self.max_block_docs

    def add_batch(self, seq: int, results: list[UrlResult]) -> None:
        """Buffer a completed batch; the caller adds batches in sequence order."""
        self._seqs.append(seq)
        self._results.extend(results)
        for result in results:
            if result.doc is not None:
                self._docs += 1
                self._doc_bytes += len(result.doc.body)

    def flush(self) -> FlushResult:
        """Write blocks, then commit every buffered batch in one transaction."""
        if not self._seqs:
            return FlushResult()
        for attempt in range(1, _ATTEMPTS + 1):
            try:
                result = self._flush_once()
                break
            except (CommitConflictError, IntegrityError) as exc:
                if attempt == _ATTEMPTS:
                    raise
                log.warning("commit conflict (%s); rebuilding blocks, attempt %d", exc, attempt + 1)
        self._seqs, self._results, self._doc_bytes, self._docs = [], [], 0, 0
        return result

    def _flush_once(self) -> FlushResult:
        now = time.time()
        counts: Counter[str] = Counter()
        for result in self._results:
            counts.update(result.counters)
        with self.sessions() as session:
            docs = self._unique_docs(session, counts)
            base = _next_doc_num(session)
        rows, blocks = self._write_blocks(docs, base)
        try:
            with self.sessions.begin() as session:
                if _next_doc_num(session, lock=True) != base:
                    raise CommitConflictError(f"doc numbers from {base} were taken meanwhile")
                session.add_all(rows)
                new_urls = self._record_frontier(session, docs, now)
                counts["documents"] += len(rows)
                counts["frontier_added"] += new_urls
                bump_counters(session, dict(counts))
                frontier.commit_batches(session, self._seqs, now)
        except BaseException:
            for name in blocks:
                self.blobs.delete(name)
            raise
        return FlushResult(documents=len(rows), blocks=blocks, new_urls=new_urls, counters=counts)

    def _unique_docs(self, session: Session, counts: Counter[str]) -> list[tuple[UrlResult, FetchedDoc]]:
        """Documents in batch order, one per URL; a URL already stored is skipped.

        Duplicates come from redirects: two URLs redirecting to one target, or a
        redirect to a page that was crawled under its own name.
        """
        candidates: dict[str, tuple[UrlResult, FetchedDoc]] = {}
        for result in self._results:
            if result.doc is None:
                continue
            key = url_id(result.doc.url)
            if key in candidates:
                counts["duplicate_url"] += 1
            else:
                candidates[key] = (result, result.doc)
        for ids in chunked(list(candidates), 500):
            for key in session.scalars(select(Document.url_id).where(Document.url_id.in_(ids))):
                del candidates[key]
                counts["duplicate_url"] += 1
        return list(candidates.values())

    def _write_blocks(self, docs: list[tuple[UrlResult, FetchedDoc]],
                      base: int) -> tuple[list[Document], list[str]]:
        """Cut the documents into blocks under the caps and put each block pair."""
        rows: list[Document] = []
        names: list[str] = []
        start = 0
        while start < len(docs):
            size, end = PREAMBLE_SIZE, start
            while end < len(docs) and end - start < self.max_block_docs:
                size += ENTRY_SIZE + len(docs[end][1].body)
                if end > start and size > self.max_block_bytes:
                    break
                end += 1
            group_rows, group_names = self._write_block(docs[start:end], base + start)
            rows += group_rows
            names += group_names
            start = end
        return rows, names

    def _write_block(self, docs: list[tuple[UrlResult, FetchedDoc]],
                     base: int) -> tuple[list[Document], list[str]]:
        stem = f"{base:010d}-{uuid.uuid4().hex[:8]}"
        content_name, record_name = f"content/{stem}.ncb", f"records/{stem}.rec.gz"
        content = ContentBlockWriter(max_bytes=self.max_block_bytes)
        records = RecordBlockWriter()
        rows: list[Document] = []
        for i, (result, doc) in enumerate(docs):
            uid = url_id(doc.url)
            index = content.add(doc.body, doc.parsed.content_type, bytes.fromhex(uid))
            p = doc.parsed
            record = Record(
                doc_num=base + i, url=doc.url, url_id=uid, doc_id=sha1(doc.body).hex(),
                content_type=p.content_type.mime, title=p.title, text=p.text,
                description=p.description, lang=p.lang, links=p.links, fetched_at=doc.fetched_at,
                content_block=content_name, content_index=index,
            )
            offset, length = records.add(record)
            rows.append(Document(
                url_id=uid, doc_num=base + i, url=doc.url, doc_id=record.doc_id,
                content_type=record.content_type, title=p.title[:2000], lang=p.lang[:16],
                length=len(doc.body), status=doc.status, depth=result.depth,
                last_crawled=doc.fetched_at, content_block=content_name, content_index=index,
                content_offset=0, record_block=record_name, record_offset=offset,
                record_length=length,
            ))
        for row, entry in zip(rows, content.entries(), strict=True):
            row.content_offset = entry.offset
        self.blobs.put(content_name, content.to_bytes())
        self.blobs.put(record_name, records.to_bytes())
        return rows, [content_name, record_name]

    def _record_frontier(self, session: Session, docs: list[tuple[UrlResult, FetchedDoc]],
                         now: float) -> int:
        """Finish the batches' frontier rows and add what they discovered."""
        outcomes = [Outcome(r.url_id, r.state, r.status, r.error) for r in self._results]
        # A redirect target becomes a done frontier row, so it is never fetched under its own name.
        targets = [(NewUrl(doc.url, r.depth, discovered_from=r.url_id), url_id(doc.url))
                   for r, doc in docs if doc.url != r.url]
        frontier.add_urls(session, [t for t, _ in targets], now)
        outcomes += [Outcome(uid, "done", 200) for _, uid in targets]
        frontier.finish(session, outcomes, now)
        discovered = [
            NewUrl(link.url, r.depth + 1, discovered_from=r.url_id)
            for r in self._results for link in r.links
        ]
        return frontier.add_urls(session, discovered, now)


def _next_doc_num(session: Session, lock: bool = False) -> int:
    """One past the highest doc_num (0 for an empty table)."""
    query = select(func.max(Document.doc_num))
    if lock:
        query = query.with_for_update()
    highest = session.scalar(query)
    return 0 if highest is None else highest + 1
