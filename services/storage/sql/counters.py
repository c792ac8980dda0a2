"""Named counters in the database: policy counts the admin page and the CLI read, and rows
whose lock serializes transactions (``lock_counter``)."""

from __future__ import annotations

from typing import Any, cast

from sqlalchemy import CursorResult, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from services.storage.sql.models import CrawlCounter, table


def bump_counters(session: Session, counts: dict[str, int]) -> None:
    """Add to policy counters inside the caller's transaction (rows locked in name order)."""
    value = table(CrawlCounter).c.value
    for name, delta in sorted(counts.items()):
        if delta:
            set_counter(session, name, value + delta, first=delta)


def read_counters(session: Session) -> dict[str, int]:
    return {row.name: row.value for row in session.scalars(select(CrawlCounter))}


def lock_counter(session: Session, name: str) -> None:
    """Serialize transactions on the counter row ``name`` (held until the caller's
    transaction ends): each takes it as its first statement."""
    set_counter(session, name, table(CrawlCounter).c.value + 1, first=1)


def set_counter(session: Session, name: str, value: object, *, first: int) -> None:
    """UPDATE the counter row to ``value`` (a number or an expression); the very first
    time, INSERT it with ``first``. Two processes starting together may both find no row:
    the one whose insert loses (in a savepoint, so its transaction goes on) updates the
    row the other inserted, waiting for its lock, as if it had come second."""
    counters = table(CrawlCounter)
    change = update(counters).where(counters.c.name == name).values(value=value)
    done = cast(CursorResult[Any], session.execute(change))
    if done.rowcount == 0:
        try:
            with session.begin_nested():
                session.execute(insert(counters).values(name=name, value=first))
        except IntegrityError:
            session.execute(change)
