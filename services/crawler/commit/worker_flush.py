"""A crawl cluster's worker side of the ordered commit: blocks and an acknowledgement, no rows.

The worker's crawl loop hands completed batches here exactly as it hands them
to the single-process ``Committer`` (the same buffer, ``take``/``commit`` on
the flush thread). A flush writes the pages' content and record blocks (their
records carry doc_num -1: numbers are the committer's to give), then the
manifest of the batches' results (``manifest``), then marks the batches "acked"
in the ledger, naming the manifest, in one short transaction. That is all a
worker writes to the database besides its leases and heartbeats: document
rows, duplicates, new frontier URLs, counters and dense document numbers are
the committer's (``ordered_commit``), in sequence order.

A flush that fails on a transient fault (the blob store resetting
connections, the database gone for a moment) is tried again with backoff;
blocks and manifests it leaves behind are named by nothing and harmless. An
acknowledgement for batches that are no longer ours (our lease expired and
another worker has them) is ignored by the ledger, and its blobs deleted.
"""

from __future__ import annotations

import logging
import uuid
from collections import Counter

from services.crawler.commit import manifest
from services.crawler.commit.committer import Committer, new_document
from services.crawler.commit.results import FlushResult, Pending, UrlResult
from services.crawler.frontier import ledger
from services.crawler.frontier.entries import NewUrl, hub_priority
from services.storage.errors import StorageError
from services.storage.sql.retry import is_transient, retry_with_backoff
from services.text.urls import host_key, url_id

log = logging.getLogger(__name__)

ATTEMPTS = 8  # a flush tried this often (backoff 0.25 s doubling, capped at 8 s: about 40 s)


class WorkerFlush(Committer):
    """Buffers completed batches; a flush writes blocks and acknowledges them (module docstring)."""

    worker: str = ""

    def commit(self, pending: Pending) -> FlushResult:
        if not pending.seqs:
            return FlushResult()
        return retry_with_backoff(
            lambda: self._ack_once(pending),
            what=f"acknowledging batches {pending.seqs}",
            retry_on=lambda exc: isinstance(exc, StorageError) or is_transient(exc),
            attempts=ATTEMPTS,
            first=0.25,
            cap=8.0,
        )

    def _ack_once(self, pending: Pending) -> FlushResult:
        counts: Counter[str] = Counter()
        for result in pending.results:
            counts.update(result.counters)
            self._links_to_frontier(result)
        fetched = [r for r in pending.results if r.doc is not None]
        written = self.writer.write((new_document(r, -1) for r in fetched), name_from=pending.seqs[0])
        placements = {r.url_id: row for r, row in zip(fetched, written.rows, strict=True)}
        batches, start = [], 0
        for seq, size in zip(pending.seqs, pending.sizes, strict=True):
            results = pending.results[start : start + size]
            start += size
            batches.append(
                manifest.AckedBatch(
                    seq, results, {r.url_id: placements[r.url_id] for r in results if r.url_id in placements}
                )
            )
        name = manifest.manifest_name(pending.seqs[0], uuid.uuid4().hex[:12])
        blobs = [*written.blocks, name]
        try:
            self.blobs.put(name, manifest.encode(self.worker, batches))
            with self.transactions, self.sessions.begin() as session:
                taken = ledger.ack_batches(session, pending.seqs, self.worker, name, self.clock())
        except BaseException:
            self.writer.discard(blobs)
            raise
        ignored = len(pending.seqs) - len(taken)
        if ignored:
            counts["acks_ignored"] += ignored
            log.warning(
                "batches %s were no longer ours when acknowledged", sorted(set(pending.seqs) - set(taken))
            )
        if not taken:
            self.writer.discard(blobs)
        return FlushResult(documents=len(fetched), blocks=written.blocks, counters=counts)

    def _links_to_frontier(self, r: UrlResult) -> None:
        """Out-links become frontier URLs here, with the priority only this worker can give
        them (its tally of its hosts' dead prefixes)."""
        if r.links:
            hub, limit, depth = hub_priority(len(r.links)), self.yields.limit, r.depth + 1
            r.found += [
                NewUrl(
                    link.url,
                    depth,
                    limit(link.url, hub),
                    r.url_id,
                    0,
                    1,
                    url_id(link.url),
                    host_key(link.url),
                )
                for link in r.links
            ]
            r.links = []
