"""Which index segment the search service serves: the one active ``IndexVersion`` row."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.orm import Session

from services.storage.sql.models import IndexVersion


def active_index(session: Session, *, lock: bool = False) -> IndexVersion | None:
    """The active version; ``lock``: hold its row until the transaction ends (a publisher that
    checks which version is active before replacing it)."""
    query = select(IndexVersion).where(IndexVersion.active.is_(True)).order_by(IndexVersion.id.desc())
    return session.scalars(query.with_for_update() if lock else query).first()


def activate_index(
    session: Session,
    segment: str,
    num_docs: int,
    num_terms: int,
    now: float | None = None,
    *,
    deltas: Sequence[str] = (),
) -> IndexVersion:
    """Record a new version (base ``segment`` and its ``deltas``, oldest first) and make it
    the only active one, in one transaction."""
    for row in session.scalars(select(IndexVersion).where(IndexVersion.active.is_(True))):
        row.active = False
    version = IndexVersion(
        segment=segment,
        deltas=json.dumps(list(deltas)) if deltas else None,
        created_at=now or time.time(),
        num_docs=num_docs,
        num_terms=num_terms,
        active=True,
    )
    session.add(version)
    session.flush()
    return version
