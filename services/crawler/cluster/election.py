"""Electing the crawl cluster's one committer through a lease row in the database.

Every committer process runs the same loop: whoever holds the ``role_leases``
row for ``committer`` renews it at each beat; the others wait as standbys and
take it over once it has gone unrenewed for ``ttl`` seconds (the holder
stopped beating: killed, partitioned, stuck). The database is the arbiter:
each attempt locks the row, so two standbys never both win.

A deposed holder may not know yet that it is deposed (a long pause, then it
resumes mid-commit). ``term`` counts holders, and each commit transaction
begins with ``fence``: it locks the row and checks that its holder and term
are still ours. So the old holder's commit either runs before the takeover
(the row lock orders them) or is refused: two committers never commit, and
sequence order holds across a takeover. Lease times come from the processes'
clocks; they must agree to within a fraction of ``ttl`` (NTP does far better).
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from services.crawler.errors import NotLeaderError
from services.storage.sql.models import RoleLease

COMMITTER = "committer"


def acquire(session: Session, role: str, me: str, now: float, ttl: float) -> int | None:
    """Take or renew ``role`` for ``me``; its term when we hold it, None when another does."""
    row = session.scalars(select(RoleLease).where(RoleLease.name == role).with_for_update()).first()
    if row is None:
        return insert_first(session, role, me, now, ttl)
    if row.holder == me and row.expires_at >= now:
        row.expires_at = now + ttl
        return row.term
    if row.expires_at < now:
        row.holder, row.term, row.expires_at, row.acquired_at = me, row.term + 1, now + ttl, now
        return row.term
    return None


def insert_first(session: Session, role: str, me: str, now: float, ttl: float) -> int | None:
    """The first holder ever: term 1, or None when another process inserted the row first
    (two committers starting together both find no row and race to insert it; the loser
    stands by, its transaction intact, instead of failing)."""
    try:
        with session.begin_nested():  # a savepoint: losing the race keeps the transaction
            session.add(RoleLease(name=role, holder=me, term=1, expires_at=now + ttl, acquired_at=now))
    except IntegrityError:
        return None
    return 1


def fence(session: Session, role: str, me: str, term: int) -> None:
    """Lock ``role``'s row for this transaction; raise unless ``me`` still holds it in ``term``."""
    row = session.scalars(select(RoleLease).where(RoleLease.name == role).with_for_update()).first()
    if row is None or row.holder != me or row.term != term:
        holder = "nobody" if row is None else f"{row.holder} (term {row.term})"
        raise NotLeaderError(f"{me} no longer holds the {role} role (term {term}); {holder} does")


def release(session: Session, role: str, me: str) -> None:
    """Give ``role`` up at once (a clean stop): a standby takes it at its next attempt."""
    row = session.get(RoleLease, role, with_for_update=True)
    if row is not None and row.holder == me:
        row.expires_at = 0.0
