"""A fetch batch row in a given ledger state, for tests of the ledger and the ordered commit."""

from __future__ import annotations

from sqlalchemy.orm import Session

from services.storage.sql.models import FetchBatch


def add_batch(s: Session, state: str, worker: str = "w", manifest: str | None = None) -> int:
    """A ``fetch_batches`` row in ``state``, leased by ``worker``; its sequence number."""
    row = FetchBatch(
        state=state, leased_by=worker, lease_expires=1e9, created_at=0.0, num_urls=1, manifest=manifest
    )
    s.add(row)
    s.flush()
    return row.seq
