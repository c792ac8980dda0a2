"""The crawl cluster's committer: acknowledged batches in, rows out, strictly in sequence order.

Yioop's selective-repeat ordered commit. Workers lease batches (each a
``fetch_batches`` row and its seq: ``frontier.leases``), fetch them, write their blocks and acknowledge them
with a manifest (``commit.worker_flush``) in whatever order they finish. The one elected
committer (``election``) takes the lowest seq not yet committed; while that
batch is still out, everything behind it waits, however many later ones
were acknowledged. When it is acknowledged, the committer reads the
manifests of the run of acknowledged batches that starts there and commits
them in one transaction: dense document numbers (reserved in that very
transaction, so a crash leaves no gap), document and duplicate rows, the
batches' frontier rows, the URLs they found, host page counts, counters and
the ledger. The transaction begins with the election's fence, so a deposed
committer cannot commit; and it commits only batches still "acked", so
nothing is committed twice.

A manifest that cannot be read sends its batches back to be fetched again
(their frontier rows are still leased under the same seq).
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, cast

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from services.crawler.cluster import election
from services.crawler.commit import manifest
from services.crawler.commit.committer import Committer
from services.crawler.commit.duplicates import sort_docs
from services.crawler.commit.manifest import AckedBatch, AckedDoc
from services.crawler.commit.results import UrlResult
from services.crawler.errors import AckManifestError
from services.crawler.frontier.ledger import BatchState
from services.storage.documents import document_row
from services.storage.errors import BlobNotFoundError
from services.storage.sql.counters import bump_counters
from services.storage.sql.doc_numbers import lock_commits, reserve_doc_nums
from services.storage.sql.models import FetchBatch
from services.text.urls import url_id

log = logging.getLogger(__name__)

MAX_RUN = 64  # batches committed in one transaction at most


@dataclass
class CommitResult:
    seqs: list[int] = field(default_factory=list)
    documents: int = 0
    pages: int = 0
    new_urls: int = 0
    sent_back: list[int] = field(default_factory=list)  # unreadable manifests: fetched again
    counters: Counter[str] = field(default_factory=Counter)


def next_run(session: Session, limit: int = MAX_RUN) -> list[tuple[int, str]]:
    """(seq, manifest) of the acknowledged batches that come next in sequence order: from the
    lowest seq not committed, up to the first that is still out."""
    rows = session.execute(
        select(FetchBatch.seq, FetchBatch.state, FetchBatch.manifest)
        .where(FetchBatch.state != BatchState.COMMITTED)
        .order_by(FetchBatch.seq)
        .limit(limit)
    ).all()
    run: list[tuple[int, str]] = []
    for seq, state, name in rows:
        if state != BatchState.ACKED or not name:
            break
        run.append((seq, name))
    return run


class OrderedCommitter(Committer):
    """Commits acknowledged batches (module docstring); reuses the single-process committer's
    row logic (duplicates, recrawls, frontier, host counts)."""

    me: str = ""
    term: int = 0

    def load(self, run: list[tuple[int, str]]) -> tuple[list[AckedBatch], list[int]]:
        """The batches of ``run`` from their manifests (read once each), and the seqs whose
        manifest could not be read."""
        cache: dict[str, dict[int, AckedBatch]] = {}
        batches: list[AckedBatch] = []
        broken: list[int] = []
        for seq, name in run:
            if name not in cache:
                try:
                    _worker, acked = manifest.decode(self.blobs.get(name), name, self.finished.seen)
                    cache[name] = {b.seq: b for b in acked}
                except (AckManifestError, BlobNotFoundError) as exc:  # other storage errors: retried
                    log.error("%s", exc)
                    cache[name] = {}
            batch = cache[name].get(seq)
            if batch is None:
                broken.append(seq)
            elif not broken:  # in order: nothing after a broken batch is committed now
                batches.append(batch)
        return batches, broken

    def commit_next(self) -> CommitResult:
        """Commit the next run of acknowledged batches, if any (one transaction)."""
        with self.sessions() as session:
            run = next_run(session)
        if not run:
            return CommitResult()
        batches, broken = self.load(run)
        if broken and not batches:
            return self._send_back(broken)
        return self._commit(batches)

    def _send_back(self, seqs: list[int]) -> CommitResult:
        with self.sessions.begin() as session:
            election.fence(session, election.COMMITTER, self.me, self.term)
            session.execute(
                update(FetchBatch)
                .where(FetchBatch.seq.in_(seqs), FetchBatch.state == BatchState.ACKED)
                .values(state=BatchState.LEASED, manifest=None, acked_at=None, lease_expires=0.0)
            )
            bump_counters(session, {"ack_manifests_unreadable": len(seqs)})
        return CommitResult(sent_back=seqs)

    def _commit(self, batches: list[AckedBatch]) -> CommitResult:
        now = self.clock()
        results: list[UrlResult] = [r for b in batches for r in b.results]
        placements: dict[str, dict[str, Any]] = {}
        for b in batches:
            placements.update(b.placements)
        seqs = [b.seq for b in batches]
        counts: Counter[str] = Counter()
        for r in results:
            counts.update(r.counters)
        with self.sessions.begin() as session:
            election.fence(session, election.COMMITTER, self.me, self.term)
            lock_commits(session)
            docs, duplicates = sort_docs(session, results, counts, now)
            stored = [d for d in docs if d.existing is None or d.existing.doc_id != d.doc.doc_id]
            number = reserve_doc_nums(session, sum(d.existing is None for d in stored))
            fresh, changed = [], {}
            for d in stored:
                doc, placement = cast(AckedDoc, d.doc), placements[d.result.url_id]
                if d.existing is None:
                    fresh.append(_row(d.result, doc, placement, number))
                    number += 1
                else:
                    changed[d.existing.url_id] = _row(d.result, doc, placement, d.existing.doc_num)
            counts["batches_committed"] += len(seqs)
            new_urls = self._record(
                session, results, seqs, docs, fresh, changed, duplicates, counts, now,
                from_state=BatchState.ACKED,
            )  # fmt: skip
        pages = sum(r.counters.get("pages", 0) for r in results)
        return CommitResult(seqs, len(fresh), pages, new_urls, counters=counts)


def _row(result: UrlResult, doc: AckedDoc, placement: dict[str, Any], doc_num: int) -> dict[str, Any]:
    """A documents row from a manifest's page."""
    return document_row(
        doc_num=doc_num,
        url=doc.url,
        url_id=url_id(doc.url),
        doc_id=doc.doc_id,
        mime=doc.parsed.content_type.mime,
        title=doc.parsed.title,
        lang=doc.parsed.lang,
        length=doc.length,
        status=doc.status,
        depth=result.depth,
        fetched_at=doc.fetched_at,
        placement={k: placement[k] for k in manifest.PLACEMENT},
    )
