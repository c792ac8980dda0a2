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

Duplicates and recrawls (by docId, the SHA-1 of the bytes):
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
import math
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import bindparam, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from services.config import Settings
from services.crawler.commit import purge
from services.crawler.commit.finished_urls import FinishedUrls
from services.crawler.commit.results import FetchedDoc, FlushResult, Pending, UrlResult
from services.crawler.errors import BatchStateError
from services.crawler.frontier import entries, ledger
from services.crawler.frontier.dead_prefixes import LinkYield
from services.crawler.frontier.entries import NewUrl, Outcome, UrlState, hub_priority
from services.crawler.frontier.ledger import BatchState
from services.storage.blobs.blobstore import BlobStore
from services.storage.documents import DocumentWriter, NewDocument
from services.storage.formats.block_pair import PLACEMENT_COLUMNS
from services.storage.sql.bulk_sql import chunked
from services.storage.sql.counters import bump_counters
from services.storage.sql.models import Document, DuplicateUrl, Host, UrlAlias, table
from services.storage.sql.retry import is_retryable, is_transient, retry_transaction, retry_with_backoff
from services.text.urls import host_key, url_id

__all__ = ["Committer", "FetchedDoc", "FlushResult", "Pending", "UrlResult"]

log = logging.getLogger(__name__)

# An insert race with another process (the first ``commits`` row, one URL's
# duplicate row) rolls the flush back; it is simply tried again.
_ATTEMPTS = 5
_LOST_CONNECTION_ATTEMPTS = 8  # backoff 0.25 s doubling, capped at 8 s: about 40 s in all
DAY = 86_400.0
# Answers that say a page is gone for good (RFC 9110: 404 not found, 410 gone); a stored
# document whose recrawl answers one leaves the index (``_record_removals``).
GONE_STATUSES = frozenset({404, 410})
# A recrawl found the page noindex, a soft 404, or disallowed by the host's robots.txt now:
# the owner asked us not to read it, so the copy we hold goes too (as Nutch's ROBOTS_DENIED
# counts as gone). robots.txt unavailable (5xx) is not a disallow: that page stays.
GONE_COUNTERS = ("noindex", "soft_404", "robots_denied")


def _says_gone(result: UrlResult) -> bool:
    return result.status in GONE_STATUSES or any(result.counters.get(c) for c in GONE_COUNTERS)


@dataclass
class _Doc:
    result: UrlResult
    doc: FetchedDoc
    existing: Document | None = None  # the URL's document (a recrawl)


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
            docs, duplicates = self._sort_docs(session, pending.results, counts, now)
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
        docs: list[_Doc],
        fresh: list[dict[str, Any]],
        changed: dict[str, dict[str, Any]],
        duplicates: list[tuple[UrlResult, Document | _Doc]],
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
        self._update_recrawled(session, docs, changed, counts, commit_seq, purged, now)
        self._record_removals(session, results, counts, commit_seq, now)
        self._record_duplicates(session, duplicates, now)
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

    def _sort_docs(
        self, session: Session, results: list[UrlResult], counts: Counter[str], now: float
    ) -> tuple[list[_Doc], list[tuple[UrlResult, Document | _Doc]]]:
        """Split fetched documents into new/recrawled ones and content duplicates of others.

        One document per URL per flush (two URLs redirecting to one target
        count ``duplicate_url``); a URL that is a document already is a recrawl;
        a body whose docId another URL's document has is a duplicate.
        """
        candidates: dict[str, _Doc] = {}
        for result in results:
            if result.doc is None:
                continue
            key = url_id(result.doc.url)
            earlier = candidates.get(key)
            if earlier is None:
                candidates[key] = _Doc(result, result.doc)
            elif result.archived:  # several captures of one URL: the newest is the page
                counts["older_capture"] += 1
                if result.doc.fetched_at > earlier.doc.fetched_at:
                    candidates[key] = _Doc(result, result.doc)
            else:
                counts["duplicate_url"] += 1
        for ids in chunked(list(candidates), 500):
            for row in session.scalars(select(Document).where(Document.url_id.in_(ids))):
                candidates[row.url_id].existing = row
        for key, d in list(candidates.items()):
            if d.result.archived and d.existing is not None and d.existing.last_crawled > d.doc.fetched_at:
                counts["older_capture"] += 1  # the stored page is a newer capture
                del candidates[key]
        by_doc_id: dict[str, Document | _Doc] = {}
        new_ids = [d.doc.doc_id for d in candidates.values() if d.existing is None]
        for ids in chunked(new_ids, 500):
            for row in session.scalars(select(Document).where(Document.doc_id.in_(ids))):
                by_doc_id.setdefault(row.doc_id, row)
        docs: list[_Doc] = []
        duplicates: list[tuple[UrlResult, Document | _Doc]] = []
        for d in candidates.values():
            original = by_doc_id.get(d.doc.doc_id) if d.existing is None else None
            if original is not None:
                duplicates.append((d.result, original))
                counts["duplicate_content"] += 1
                continue
            if d.existing is None:
                by_doc_id[d.doc.doc_id] = d
            docs.append(d)
        return docs, duplicates

    @staticmethod
    def _documents(docs: list[_Doc], base: int) -> list[NewDocument]:
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

    def _update_recrawled(
        self,
        session: Session,
        docs: list[_Doc],
        changed: dict[str, dict],
        counts: Counter[str],
        commit_seq: int | None,
        purged: frozenset[str],
        now: float,
    ) -> None:
        """Point recrawled documents at their new version (``changed``: the new rows by
        url_id), or note that nothing changed. A page of a purged host (``purged``) stays
        removed, or is removed now."""
        for d in docs:
            row = d.existing
            if row is None:
                continue
            live = session.get(Document, row.url_id)
            if live is None:  # cannot happen: documents are never deleted
                continue
            if purge.kept_out(live.url, purged):
                if live.removed_at is None:
                    live.removed_at = now
                    live.commit_seq = commit_seq
                counts["purged_host_pages"] += 1
            elif live.removed_at is not None:  # gone or noindex before, a page again now
                live.removed_at = None
                live.commit_seq = commit_seq
                counts["documents_restored"] += 1
            new = changed.get(row.url_id)
            if new is None:
                live.unchanged = (live.unchanged or 0) + 1
                live.last_crawled = d.doc.fetched_at
                counts["recrawl_unchanged"] += 1
                continue
            for key in ("doc_id", "content_type", "title", "lang", "length", "status", "last_crawled"):
                setattr(live, key, new[key])
            for key in PLACEMENT_COLUMNS:
                setattr(live, key, new[key])
            live.versions = (live.versions or 1) + 1
            live.commit_seq = commit_seq
            counts["recrawl_changed"] += 1

    def _record_removals(
        self,
        session: Session,
        results: list[UrlResult],
        counts: Counter[str],
        commit_seq: int | None,
        now: float,
    ) -> None:
        """Mark stored documents whose page a recrawl found gone (``GONE_STATUSES``), a soft
        404, or marked noindex: the index leaves them out from its next update or build, as
        web engines drop a page whose recrawl says it is gone. A server error or a timeout
        is not gone: the page stays until a fetch says so."""
        gone = [r.url_id for r in results if r.doc is None and not r.archived and _says_gone(r)]
        for ids in chunked(gone, 500):
            for row in session.scalars(select(Document).where(Document.url_id.in_(ids))):
                if row.removed_at is None:
                    row.removed_at = now
                    row.commit_seq = commit_seq
                    counts["documents_removed"] += 1

    def _record_duplicates(
        self, session: Session, duplicates: list[tuple[UrlResult, Document | _Doc]], now: float
    ) -> None:
        for result, original in duplicates:
            doc = result.doc
            if doc is None:
                continue
            number: int | None
            if isinstance(original, _Doc):  # same flush: its doc number is fixed by now
                number = session.scalar(
                    select(Document.doc_num).where(Document.url_id == url_id(original.doc.url))
                )
            else:
                number = original.doc_num
            if number is None:  # cannot happen: the original's row is in this transaction
                log.warning("no document row for %s, the original of duplicate %s", original, doc.url)
                continue
            uid = url_id(doc.url)
            row = session.get(DuplicateUrl, uid)
            if row is None:
                session.add(
                    DuplicateUrl(
                        url_id=uid,
                        url=doc.url,
                        doc_num=number,
                        doc_id=doc.doc_id,
                        first_seen=now,
                        last_seen=now,
                    )
                )
            else:
                row.doc_num, row.doc_id, row.last_seen = number, doc.doc_id, now

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
        self, session: Session, results: list[UrlResult], docs: list[_Doc], now: float
    ) -> int:
        """Finish the batches' frontier rows (next recrawl included) and add what they found."""
        intervals = {d.result.url_id: self._next_interval(d) for d in docs}
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

    def _next_interval(self, d: _Doc) -> float:
        """Adaptive recrawl: halve when the content changed, double when not, within the bounds."""
        previous = d.result.interval
        if d.existing is None or previous is None:
            return math.sqrt(self.recrawl_min * self.recrawl_max)  # first visit: the geometric middle
        changed = d.existing.doc_id != d.doc.doc_id
        return min(self.recrawl_max, max(self.recrawl_min, previous / 2 if changed else previous * 2))

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
