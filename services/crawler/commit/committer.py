"""The committer: fetched batches in, blocks and database rows out, all or nothing.

Batches arrive in sequence order. A flush reserves its doc numbers in a
short transaction under the committers' lock (so crawler processes sharing a
database never take the same numbers), writes the content and record blocks
to the blob store with no lock held, then records everything in one
transaction: document rows, the batches' frontier rows, the newly discovered
URLs, duplicate URLs, host page counts, the counters and the ledger. A crash
before that transaction leaves only orphan blobs (harmless: nothing names
them) and unused doc numbers (indexed as empty documents), and the batches'
leases are handed out again; a crash after it loses nothing. So "a document
row exists" always means "its bytes are readable".

The crawler hands a flush to a background thread (``take`` on the event
loop, ``commit`` in the thread), so fetching goes on while blocks are
serialized, uploaded and committed. All documents of one flush share one
content block and one record block (split only at the size caps): the
crawl's workers share the block writer.

Duplicates and recrawls (by docId, the SHA-1 of the bytes; ``duplicates``, ``recrawls``):
* a body equal to another URL's document is stored once: the URL gets a
  ``DuplicateUrl`` row pointing at that document (counter ``duplicate_content``);
* a recrawl that finds the same bytes stores nothing (``unchanged`` += 1,
  the recrawl interval doubles); changed bytes are appended to the current
  blocks and the document row (same ``doc_num``) points at them
  (``versions`` += 1, the interval halves).

Archive crawls feed the same committer with results read from archives
instead of fetched (``UrlResult.archived``): they finish no frontier row; of
several captures of one URL the newest is the page (an older one than the
stored document's is counted ``older_capture`` and left out); an alias (a wiki
redirect, an archived 3xx) becomes a ``UrlAlias`` row of its target.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from sqlalchemy import bindparam, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from services.config import Settings
from services.crawler.commit import purge
from services.crawler.commit.duplicates import SortedDoc, record_duplicates, sort_docs
from services.crawler.commit.finished_urls import FinishedUrls
from services.crawler.commit.recrawls import next_interval, record_removals, update_recrawled
from services.crawler.commit.results import FetchedDoc, FlushResult, Pending, UrlResult
from services.crawler.errors import BatchStateError
from services.crawler.frontier import entries, ledger
from services.crawler.frontier.dead_prefixes import LinkYield
from services.crawler.frontier.entries import NewUrl, Outcome, UrlState, hub_priority
from services.crawler.frontier.ledger import BatchState
from services.storage.blobs.blobstore import BlobStore
from services.storage.documents import DocumentWriter, NewDocument
from services.storage.sql.bulk_sql import chunked
from services.storage.sql.counters import bump_counters
from services.storage.sql.models import Document, Host, UrlAlias, table
from services.storage.sql.retry import is_retryable, is_transient, retry_transaction, retry_with_backoff
from services.text.urls import host_key, url_id

__all__ = ["Committer", "FetchedDoc", "FlushResult", "Pending", "UrlResult"]

log = logging.getLogger(__name__)

# An insert race with another process (the first ``commits`` row, one URL's
# duplicate row) rolls the flush back; it is simply tried again.
_ATTEMPTS = 5
_LOST_CONNECTION_ATTEMPTS = 8  # backoff 0.25 s doubling, capped at 8 s: about 40 s in all
DAY = 86_400.0


class Committer:
    """Buffers results of completed batches until they are committed."""

    def __init__(
        self,
        sessions: sessionmaker[Session],
        blobs: BlobStore,
        *,
        max_block_bytes: int,
        max_block_docs: int,
        partitions: int = 1,
        recrawl_min: float = DAY,
        recrawl_max: float = 30 * DAY,
        transactions: threading.Lock | None = None,
        clock: Callable[[], float] = time.time,
        yields: LinkYield | None = None,
    ) -> None:
        self.sessions = sessions
        # The crawl's tally of dead prefixes (read here from the flush thread, written on the
        # event loop; lookups only, never iterated here): links into a dead prefix start low.
        self.yields = yields or LinkYield()
        self.clock = clock
        # Held around each of our transactions (not around block writing): the crawler
        # passes the lock its leases take, so one process's transactions never
        # interleave; on MySQL, interleaved, they deadlock each other.
        self.transactions = transactions or threading.Lock()
        self.blobs = blobs
        self.writer = DocumentWriter(blobs, max_block_docs=max_block_docs, max_block_bytes=max_block_bytes)
        self.max_block_bytes = max_block_bytes
        self.max_block_docs = max_block_docs
        self.partitions = partitions
        self.recrawl_min, self.recrawl_max = recrawl_min, recrawl_max
        self._pending = Pending()
        self.finished = FinishedUrls()
        self._doc_bytes = 0
        self._docs = 0

    @property
    def pending(self) -> bool:
        return bool(self._pending.seqs)

    @property
    def seqs(self) -> list[int]:
        """Sequence numbers of the buffered (completed, not yet committed) batches."""
        return list(self._pending.seqs)

    @property
    def buffered_bytes(self) -> int:
        return self._doc_bytes

    @property
    def full(self) -> bool:
        """Enough buffered for a full-size block: time to flush."""
        return self._doc_bytes >= self.max_block_bytes or self._docs >= self.max_block_docs

    def add_batch(self, seq: int, results: list[UrlResult]) -> None:
        """Buffer a completed batch; the caller adds batches in sequence order."""
        self._pending.seqs.append(seq)
        self._pending.results.extend(results)
        self._pending.sizes.append(len(results))
        for result in results:
            if result.doc is not None:
                self._docs += 1
                self._doc_bytes += len(result.doc.body)

    def take(self) -> Pending:
        """Hand the buffered batches to a flush (``commit``); the buffer starts empty."""
        pending, self._pending = self._pending, Pending()
        self._doc_bytes = self._docs = 0
        return pending

    def flush(self) -> FlushResult:
        """Write blocks, then commit every buffered batch in one transaction."""
        return self.commit(self.take())

    def commit(self, pending: Pending) -> FlushResult:
        """Write ``pending``'s blocks and commit it; safe to run in another thread."""
        if not pending.seqs:
            return FlushResult()
        # A unique-key race with another process, or a deadlock the database rolled
        # back: the transaction (and its blocks, deleted) starts over at once. A lost
        # connection (a failover, a killed connection, a password rotation's reconnect)
        # rolled it back too: it starts over on a fresh connection after a growing pause,
        # as a cluster worker's acknowledgement does, instead of ending the crawl.
        return retry_with_backoff(
            lambda: retry_transaction(
                lambda: self._commit_once(pending),
                attempts=_ATTEMPTS,
                what="commit conflict",
                retry_on=lambda e: isinstance(e, IntegrityError) or is_retryable(e),
            ),
            what=f"committing batches {pending.seqs}",
            retry_on=is_transient,
            attempts=_LOST_CONNECTION_ATTEMPTS,
            first=0.25,
            cap=8.0,
        )

    def _commit_once(self, pending: Pending) -> FlushResult:
        now = self.clock()
        counts: Counter[str] = Counter()
        for result in pending.results:
            counts.update(result.counters)
        with self.transactions, self.sessions() as session:
            docs, duplicates = sort_docs(session, pending.results, counts, now)
        stored = [d for d in docs if d.existing is None or d.existing.doc_id != d.doc.doc_id]
        needed = sum(d.existing is None for d in stored)
        if pending.reserved is None or pending.reserved[1] < needed:
            with self.transactions, self.sessions.begin() as session:
                # Doc numbers first, in a short transaction under the commit lock; the
                # blocks (which hold them) are written with no lock held, so another
                # crawler process's leases and commits never wait for our gzip. A retry
                # of this flush keeps them: only a crash leaves unused numbers.
                self.writer.lock(session)
                pending.reserved = (self.writer.reserve(session, needed), needed)
        written = self.writer.write(self._documents(stored, pending.reserved[0]))
        blocks = written.blocks
        fresh = [row for row, d in zip(written.rows, stored, strict=True) if d.existing is None]
        changed = {
            d.existing.url_id: row
            for row, d in zip(written.rows, stored, strict=True)
            if d.existing is not None
        }
        try:
            with self.transactions, self.sessions.begin() as session:
                # Committers take turns again for the rows (short: the blocks are written).
                # Two flushes interleaving on MySQL deadlock on counters and host rows.
                self.writer.lock(session)
                new_urls = self._record(
                    session, pending.results, pending.seqs, docs, fresh, changed, duplicates, counts, now
                )
        except BaseException:
            self.writer.discard(blocks)
            raise
        return FlushResult(documents=len(fresh), blocks=blocks, new_urls=new_urls, counters=counts)

    def _record(
        self,
        session: Session,
        results: list[UrlResult],
        seqs: list[int],
        docs: list[SortedDoc],
        fresh: list[dict[str, Any]],
        changed: dict[str, dict[str, Any]],
        duplicates: list[tuple[UrlResult, Document | SortedDoc]],
        counts: Counter[str],
        now: float,
        *,
        from_state: BatchState | None = None,
    ) -> int:
        """Everything a commit writes once its document rows are known (both committers, in
        their transaction under the commit lock): the rows, recrawls, duplicates, frontier,
        host counts, counters and the ledger. Returns the new frontier URLs."""
        # The batch that wrote a document's current record: an incremental index update
        # indexes the documents committed after the sequence its base version includes.
        commit_seq = max(seqs) if seqs else None
        # Pages of a host the operator blocked and purged, fetched before its crawler saw the
        # block, are stored removed: the purge holds (services.crawler.commit.purge).
        purged = purge.purged_hosts(session)
        rows = [{**row, "commit_seq": commit_seq, "removed_at": None} for row in fresh]
        for row in rows:
            if purge.kept_out(row["url"], purged):
                row["removed_at"] = now
                counts["purged_host_pages"] += 1
        self.writer.insert(session, rows)
        update_recrawled(session, docs, changed, counts, commit_seq, purged, now)
        record_removals(session, results, counts, commit_seq, now)
        record_duplicates(session, duplicates, now)
        self._record_aliases(session, results, now)
        new_urls = self._record_frontier(session, results, docs, now)
        self._count_host_pages(session, results)
        counts["documents"] += len(fresh)
        counts["frontier_added"] += new_urls
        bump_counters(session, dict(counts))
        marked = ledger.commit_batches(
            session,
            seqs,
            now,
            pages=sum(r.counters.get("pages", 0) for r in results),
            errors=sum(counts_as_error(r) for r in results),
            from_state=from_state,
        )
        if from_state is not None and marked != len(seqs):  # cannot happen under the fence
            raise BatchStateError(f"batches {seqs} changed state while being committed; rolled back")
        return new_urls

    @staticmethod
    def _documents(docs: list[SortedDoc], base: int) -> list[NewDocument]:
        """What to store: a recrawled document keeps its number, new ones count up from ``base``."""
        out: list[NewDocument] = []
        number = base
        for d in docs:
            if d.existing is not None:
                doc_num = d.existing.doc_num
            else:
                doc_num, number = number, number + 1
            out.append(new_document(d.result, doc_num))
        return out

    @staticmethod
    def _record_aliases(session: Session, results: list[UrlResult], now: float) -> None:
        """Aliases (``UrlResult.alias_of``): one row per alias URL, its latest target."""
        aliases = {url_id(r.url): r for r in results if r.alias_of}
        for ids in chunked(list(aliases), 500):
            known = {
                row.url_id: row for row in session.scalars(select(UrlAlias).where(UrlAlias.url_id.in_(ids)))
            }
            for uid in ids:
                r, row = aliases[uid], known.get(uid)
                if row is None:
                    session.add(
                        UrlAlias(
                            url_id=uid,
                            url=r.url,
                            target_url_id=url_id(r.alias_of),
                            target_url=r.alias_of,
                            title=r.alias_title or None,
                            first_seen=now,
                            last_seen=now,
                        )
                    )
                else:
                    row.target_url_id, row.target_url, row.last_seen = url_id(r.alias_of), r.alias_of, now
                    row.title = r.alias_title or None

    def _record_frontier(
        self, session: Session, results: list[UrlResult], docs: list[SortedDoc], now: float
    ) -> int:
        """Finish the batches' frontier rows (next recrawl included) and add what they found."""
        intervals = {d.result.url_id: next_interval(d, self.recrawl_min, self.recrawl_max) for d in docs}
        outcomes = []
        for r in results:
            if r.archived:  # read from an archive: no frontier row of its own
                continue
            if r.state == UrlState.NEW:
                outcomes.append(
                    Outcome(r.url_id, UrlState.NEW, r.status, r.error, r.retry_at, priority=r.priority)
                )
            elif r.url_id in intervals:
                interval = intervals[r.url_id]
                outcomes.append(Outcome(r.url_id, r.state, r.status, r.error, now + interval, interval))
            else:
                outcomes.append(Outcome(r.url_id, r.state, r.status, r.error))
        # A redirect followed inside fetch: the target is a done row, never fetched under its own name.
        targets = [
            (NewUrl(d.doc.url, d.result.depth, discovered_from=d.result.url_id), url_id(d.doc.url))
            for d in docs
            if d.doc.url != d.result.url and not d.result.archived
        ]
        entries.add_urls(session, [t for t, _ in targets], now, partitions=self.partitions)
        outcomes += [Outcome(uid, UrlState.DONE, 200) for _, uid in targets]
        entries.finish(session, outcomes, now, recrawl_after=self.recrawl_max)
        self.finished.add(o.url_id for o in outcomes if o.state != UrlState.NEW)
        discovered = self.finished.unknown([t for r in results for t in r.found])
        for r in results:
            if r.links:
                hub, limit, depth = hub_priority(len(r.links)), self.yields.limit, r.depth + 1
                # Links to finished pages are left out before a NewUrl and a priority is made.
                keyed = self.finished.unknown_keys([(link.url, url_id(link.url)) for link in r.links])
                discovered += [NewUrl(url, depth, limit(url, hub), r.url_id, key=key) for url, key in keyed]
        return entries.add_urls(session, discovered, now, partitions=self.partitions)

    def _count_host_pages(self, session: Session, results: list[UrlResult]) -> None:
        """Pages requested per host, for the per-host page cap across runs."""
        per_host = Counter(host_key(r.url) for r in results if r.counters.get("pages"))
        if per_host:
            hosts = table(Host)
            session.execute(
                hosts.update()
                .where(hosts.c.host == bindparam("h"))
                .values(pages=hosts.c.pages + bindparam("n")),
                [{"h": h, "n": n} for h, n in per_host.items()],
            )


def new_document(result: UrlResult, doc_num: int) -> NewDocument:
    """What to store of a fetched page under ``doc_num`` (-1: a cluster worker's, numbered
    later by the committer)."""
    doc = result.doc
    if doc is None:
        raise ValueError(f"{result.url} has no fetched document to store")
    p = doc.parsed
    return NewDocument(
        doc_num=doc_num,
        url=doc.url,
        url_id=url_id(doc.url),
        body=doc.body,
        content_type=p.content_type,
        title=p.title,
        text=p.text,
        description=p.description,
        keywords=p.keywords,
        nav=p.nav,
        lang=p.lang,
        links=p.links,
        fetched_at=doc.fetched_at,
        status=doc.status,
        depth=result.depth,
        doc_id=doc.doc_id,
        noarchive=p.noarchive,
    )


def committer_options(settings: Settings) -> dict[str, Any]:
    """A committer's settings (block caps, partitions, recrawl bounds), as keyword arguments."""
    return {
        "max_block_bytes": settings.crawl.block_max_bytes,
        "max_block_docs": settings.crawl.block_max_docs,
        "partitions": settings.crawl.partitions,
        "recrawl_min": settings.crawl.recrawl_min_interval,
        "recrawl_max": settings.crawl.recrawl_max_interval,
    }


def counts_as_error(result: UrlResult) -> bool:
    """A fetch that failed, or an HTTP status of 400 or more (the dashboard's error rate)."""
    if result.status is not None:
        return result.status >= 400
    return result.error is not None and result.counters.get("pages", 0) > 0
