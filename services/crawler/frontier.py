"""The frontier in the database: every URL ever seen, one row per ``url_id``.

A row is ``new`` until a fetch batch leases it (``leased``, with the batch's
sequence number), then ``done`` (fetched, denied, or not worth retrying) or
``failed`` (network trouble, 5xx: a later retry policy may pick it up). Rows
are never deleted, so the table doubles as the "seen" set: a URL is added
once, however many pages link to it, and a finished crawl resumed with the
same seeds fetches nothing again.

Batches are the unit of the ordered-commit ledger (``fetch_batches``): a
lease that expires (its process died) is handed out again under the same
sequence number, so its results are committed exactly once. All functions
run inside the caller's transaction.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy import func, select, update
from sqlalchemy.dialects.mysql import insert as mysql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from services.crawler.urls import host_key, url_id
from services.storage.db import chunked
from services.storage.models import FetchBatch, FrontierEntry

_IN_CHUNK = 500  # bound on IN (...) lists: well under SQLite's and MySQL's limits


@dataclass(frozen=True)
class NewUrl:
    """A URL to add; ``url`` must already be normalized."""

    url: str
    depth: int
    priority: float = 0.0
    discovered_from: str | None = None  # url_id of the linking page


@dataclass(frozen=True)
class LeasedUrl:
    url_id: str
    url: str
    host: str
    depth: int


@dataclass(frozen=True)
class Lease:
    seq: int
    entries: list[LeasedUrl]


@dataclass(frozen=True)
class Outcome:
    """How a leased URL ended: ``done``, ``failed``, or ``new`` (released unfetched)."""

    url_id: str
    state: str
    status: int | None = None
    error: str | None = None


def add_urls(session: Session, urls: Iterable[NewUrl], now: float = 0.0) -> int:
    """Insert the URLs not seen before; returns how many were new.

    Deduplicated by ``url_id`` first in memory, then against the table; the
    insert itself ignores conflicts, so a concurrent crawler adding the same
    URL is harmless.
    """
    fresh: dict[str, NewUrl] = {}
    for new in urls:
        fresh.setdefault(url_id(new.url), new)
    for ids in chunked(list(fresh), _IN_CHUNK):
        seen = session.scalars(select(FrontierEntry.url_id).where(FrontierEntry.url_id.in_(ids)))
        for uid in seen:
            fresh.pop(uid, None)
    if not fresh:
        return 0
    rows = [
        {
            "url_id": uid, "url": new.url, "host": host_key(new.url), "priority": new.priority,
            "state": "new", "available_at": now, "attempts": 0, "depth": new.depth,
            "discovered_from": new.discovered_from,
        }
        for uid, new in fresh.items()
    ]
    session.execute(_insert_ignore(session), rows)
    return len(rows)


def _insert_ignore(session: Session):  # noqa: ANN202 - a dialect-specific Insert
    dialect = session.get_bind().dialect.name
    if dialect == "sqlite":
        return sqlite_insert(FrontierEntry).on_conflict_do_nothing()
    if dialect in ("mysql", "mariadb"):
        return mysql_insert(FrontierEntry).prefix_with("IGNORE")
    raise NotImplementedError(f"frontier inserts support SQLite and MySQL/MariaDB, not {dialect}")


def lease_batch(session: Session, *, limit: int, now: float, lease_seconds: float,
                max_depth: int, worker: str = "") -> Lease | None:
    """Lease the next batch: an expired batch first (same seq), else up to ``limit`` new URLs.

    New URLs come by priority, then depth (breadth first), then ``url_id``,
    which mixes hosts pseudo-randomly so one batch rarely belongs to one host.
    Returns ``None`` when nothing is ready.
    """
    expires = now + lease_seconds
    expired = session.scalars(
        select(FetchBatch)
        .where(FetchBatch.state == "leased", FetchBatch.lease_expires <= now)
        .order_by(FetchBatch.seq).limit(1).with_for_update(skip_locked=True)
    ).first()
    if expired is not None:
        rows = session.scalars(
            select(FrontierEntry).where(FrontierEntry.batch_seq == expired.seq,
                                        FrontierEntry.state == "leased")
        ).all()
        expired.leased_by, expired.lease_expires = worker, expires
        if rows:
            for row in rows:
                row.available_at = expires
            return Lease(expired.seq, [_leased(r) for r in rows])
        expired.state, expired.committed_at = "committed", now  # nothing left in it
    if limit <= 0:
        return None
    rows = session.scalars(
        select(FrontierEntry)
        .where(FrontierEntry.state == "new", FrontierEntry.available_at <= now,
               FrontierEntry.depth <= max_depth)
        .order_by(FrontierEntry.priority.desc(), FrontierEntry.depth, FrontierEntry.url_id)
        .limit(limit).with_for_update(skip_locked=True)
    ).all()
    if not rows:
        return None
    batch = FetchBatch(state="leased", leased_by=worker, lease_expires=expires, created_at=now,
                       num_urls=len(rows))
    session.add(batch)
    session.flush()  # assigns batch.seq
    for row in rows:
        row.state, row.batch_seq, row.available_at = "leased", batch.seq, expires
    return Lease(batch.seq, [_leased(r) for r in rows])


def _leased(row: FrontierEntry) -> LeasedUrl:
    return LeasedUrl(url_id=row.url_id, url=row.url, host=row.host, depth=row.depth)


def finish(session: Session, outcomes: Iterable[Outcome], now: float = 0.0) -> None:
    """Record how leased URLs ended; released ones (state ``new``) become leasable again."""
    by_id = {o.url_id: o for o in outcomes}
    for ids in chunked(list(by_id), _IN_CHUNK):
        for row in session.scalars(select(FrontierEntry).where(FrontierEntry.url_id.in_(ids))):
            outcome = by_id[row.url_id]
            row.state = outcome.state
            row.batch_seq = None
            if outcome.state == "new":
                row.available_at = now
                continue
            row.attempts += 1
            row.last_status = outcome.status
            row.last_error = outcome.error


def renew_leases(session: Session, seqs: Iterable[int], until: float) -> None:
    """Extend the leases of batches still being worked on."""
    seqs = list(seqs)
    if seqs:
        session.execute(update(FetchBatch).where(FetchBatch.seq.in_(seqs), FetchBatch.state == "leased")
                        .values(lease_expires=until))
        session.execute(update(FrontierEntry).where(FrontierEntry.batch_seq.in_(seqs),
                                                    FrontierEntry.state == "leased")
                        .values(available_at=until))


def commit_batches(session: Session, seqs: Iterable[int], now: float) -> None:
    """Mark batches committed in the ledger (inside the committer's transaction)."""
    seqs = list(seqs)
    if seqs:
        session.execute(update(FetchBatch).where(FetchBatch.seq.in_(seqs))
                        .values(state="committed", committed_at=now))


def count_by_state(session: Session) -> dict[str, int]:
    rows = session.execute(select(FrontierEntry.state, func.count()).group_by(FrontierEntry.state))
    return {state: count for state, count in rows}
