"""The fetch batches' ledger: leased, then acknowledged, then committed, in sequence order.

Each ``fetch_batches`` row moves ``leased`` (``leases``) -> ``acked`` (a cluster's worker
wrote its blocks and a results manifest) -> ``committed`` (its documents and frontier rows
are in the database). The committer commits strictly in sequence order; these functions
only move rows, inside the caller's transaction. An archive batch is a row like any other
(``fetch_batches.archive_batch`` names it): committing it marks it in ``archive_batches`` too.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from enum import StrEnum
from typing import Any, cast

from sqlalchemy import CursorResult, func, select, update
from sqlalchemy.orm import Session

from services.crawler.frontier import archive_batches
from services.storage.sql.models import FetchBatch


class BatchState(StrEnum):
    """Where a fetch batch is in the ledger; the value is what ``fetch_batches.state`` holds."""

    LEASED = "leased"  # out to a crawler process, until ``lease_expires``
    ACKED = "acked"  # a cluster's worker wrote its blocks and results manifest
    COMMITTED = "committed"  # its documents and frontier rows are in the database


def commit_batches(
    session: Session,
    seqs: Iterable[int],
    now: float,
    *,
    pages: int = 0,
    errors: int = 0,
    from_state: BatchState | None = None,
) -> int:
    """Mark batches committed in the ledger (inside the committer's transaction); the flush's
    pages and errors go on its last batch (the dashboard sums them per minute). With
    ``from_state``, only batches in that state change. Returns how many changed."""
    seqs = list(seqs)
    changed = 0
    if seqs:
        mark = update(FetchBatch).where(FetchBatch.seq.in_(seqs))
        if from_state is not None:
            mark = mark.where(FetchBatch.state == from_state)
        done = cast(
            CursorResult[Any], session.execute(mark.values(state=BatchState.COMMITTED, committed_at=now))
        )
        changed = done.rowcount
        archive_batches.mark_committed(session, seqs, now)
        if pages or errors:
            session.execute(
                update(FetchBatch).where(FetchBatch.seq == max(seqs)).values(pages=pages, errors=errors)
            )
    return changed


def ack_batches(session: Session, seqs: Sequence[int], worker: str, manifest: str, now: float) -> list[int]:
    """Acknowledge ``worker``'s batches with the blob name of their results manifest.

    Only batches still leased to ``worker`` take it: a late acknowledgement (the lease
    expired and another worker has the batch) or a repeated one changes nothing. Returns
    the seqs acknowledged.
    """
    mine = list(
        session.scalars(
            select(FetchBatch.seq)
            .where(
                FetchBatch.seq.in_(list(seqs)),
                FetchBatch.state == BatchState.LEASED,
                FetchBatch.leased_by == worker,
            )
            .with_for_update()
        )
    )
    if mine:
        session.execute(
            update(FetchBatch)
            .where(FetchBatch.seq.in_(mine))
            .values(state=BatchState.ACKED, manifest=manifest, acked_at=now)
        )
    return mine


def outstanding(session: Session, *, archives_only: bool = False) -> dict[str, int]:
    """Batches leased or acknowledged and not yet committed, by state (``archives_only``: of
    archive batches)."""
    query = select(FetchBatch.state, func.count()).where(
        FetchBatch.state.in_((BatchState.LEASED, BatchState.ACKED))
    )
    if archives_only:
        query = query.where(FetchBatch.archive_batch.is_not(None))
    rows = session.execute(query.group_by(FetchBatch.state))
    return {state: count for state, count in rows}
