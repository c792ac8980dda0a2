"""Leases: the frontier's URLs handed to a crawler in numbered batches.

A batch (a ``fetch_batches`` row and its sequence number) is the unit of the ordered-commit
ledger (``ledger``): leased to a worker here (``lease_batches``), acknowledged with its
results manifest, then committed in sequence order. A lease that
expires (its process died) is handed out again under the same sequence number, so its
results are committed exactly once. Leasing due recrawls first, then new URLs by priority,
only from the caller's host partitions (``entries.partition_of``), so two crawlers never
share a host. An archive's planned batch (``archive_batches``) is leased the same way, under
a seq of the same ledger, by any crawler (archives have no hosts to share out). All
functions run inside the caller's transaction.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy import CursorResult, Double, Integer, Row, Select, bindparam, insert, select, update
from sqlalchemy.orm import Session

from services.crawler.frontier import archive_batches
from services.crawler.frontier.archive_batches import ArchiveWork
from services.crawler.frontier.entries import UrlState
from services.crawler.frontier.ledger import BatchState, outstanding
from services.storage.sql.counters import lock_counter
from services.storage.sql.models import FetchBatch, FrontierEntry, table


@dataclass(frozen=True)
class LeasedUrl:
    url_id: str
    url: str
    host: str
    depth: int
    priority: float = 0.0
    attempts: int = 0
    hops: int = 0
    recrawl: bool = False  # leased from ``done``: its recrawl is due
    interval: float | None = None  # the current recrawl interval


@dataclass(frozen=True)
class Lease:
    seq: int
    entries: list[LeasedUrl]
    archive: ArchiveWork | None = None  # an archive batch (``entries`` empty): its records


def lease_batch(
    session: Session,
    *,
    limit: int,
    now: float,
    lease_seconds: float,
    max_depth: int,
    worker: str = "",
    partitions: Sequence[int] | None = None,
) -> Lease | None:
    """Lease the next batch: an expired batch first (same seq), else up to ``limit`` URLs.

    Due recrawls come first, then new URLs by priority, then depth (breadth
    first), then ``url_id``, which mixes hosts pseudo-randomly. Only rows of
    ``partitions`` (``None``: all) are leased. Returns ``None`` when nothing is ready.
    """
    leases = lease_batches(
        session,
        batches=1,
        limit=limit,
        budget=limit,
        now=now,
        lease_seconds=lease_seconds,
        max_depth=max_depth,
        worker=worker,
        partitions=partitions,
    )
    return leases[0] if leases else None


def _lease_new(
    session: Session,
    limit: int,
    now: float,
    expires: float,
    max_depth: int,
    worker: str,
    partitions: Sequence[int] | None,
    min_priority: float | None = None,
) -> Lease | None:
    """A new batch of up to ``limit`` ready URLs (due recrawls first), or None."""
    # Plain rows of the columns a lease needs: ORM entities would be a large share of a
    # lease's time. The statements are built once with bound parameters (the IN lists
    # expanding), so a lease costs no per-value clause construction, otherwise most of its
    # CPU (docs/benchmarks.md).
    params: dict[str, Any] = {"now": now, "limit": limit}
    if partitions is not None:
        params["parts"] = list(partitions)
    rows = list(session.execute(_due_statement(partitions is not None), params))
    recrawls = {row.url_id for row in rows}
    if len(rows) < limit:
        params.update(limit=limit - len(rows), max_depth=max_depth)
        if min_priority is not None:
            params["min_priority"] = min_priority
        new = _new_statement(partitions is not None, min_priority is not None)
        rows += session.execute(new, params).all()
    if not rows:
        return None
    inserted = session.execute(
        _INSERT_BATCH,
        {"leased_by": worker, "lease_expires": expires, "created_at": now, "num_urls": len(rows)},
    )
    key = cast(CursorResult[Any], inserted).inserted_primary_key
    if key is None:
        raise RuntimeError("the database returned no sequence number for a new fetch batch")
    seq = int(key[0])
    session.execute(_MARK_LEASED, {"ids": [r.url_id for r in rows], "seq": seq, "expires": expires})
    return Lease(seq, [_leased(r, r.url_id in recrawls) for r in rows])


def lease_batches(
    session: Session,
    *,
    batches: int,
    limit: int,
    budget: int,
    now: float,
    lease_seconds: float,
    max_depth: int,
    worker: str = "",
    partitions: Sequence[int] | None = None,
    min_priority: float | None = None,
    window: int | None = None,
    archives: int = 0,
    web: bool = True,
) -> list[Lease]:
    """Up to ``batches`` leases of up to ``limit`` URLs each, ``budget`` URLs in all, in one transaction.

    A crawler that needs several batches takes them in one transaction: every
    transaction waits its turn for the database's write lock (on SQLite, one
    lock for all crawler processes), and one per 32-URL batch would be ~30 a
    second per process at a thousand pages a second.

    ``window`` (a cluster's worker): sequence numbers are handed out under one lock, so
    a batch the committer sees has no lower seq still to appear (MySQL assigns
    auto-increment values before commit, in any order); and no more than ``window``
    batches are out, leased or acknowledged but not yet committed.

    ``archives``: up to that many new archive batches too, before new URLs (``budget`` and
    ``limit`` count URLs only); ``web`` False: no URLs at all, new or expired (an archive
    crawl). Expired batches of either kind are taken over first, of the kinds asked for.
    """
    if window is not None:
        lock_counter(session, LEASE_LOCK)
        new_batches = max(0, window - sum(outstanding(session).values()))
    else:
        new_batches = batches + archives
    expires = now + lease_seconds
    leases: list[Lease] = []
    kinds = _Kinds(web=web, archives=archives > 0)
    while len(leases) < batches + archives:  # expired batches first
        lease = _lease_expired(session, now, expires, worker, partitions, kinds)
        if lease is None:
            break
        leases.append(lease)
        budget -= len(lease.entries)
    # Then new ones (none of these has expired); an expired batch is out already, so the
    # window never keeps it from being handed out again: it may be what the commit waits for.
    taken_archives = sum(lease.archive is not None for lease in leases)
    taken_web = len(leases) - taken_archives
    for lease in _lease_archives(session, min(archives - taken_archives, new_batches), now, expires, worker):
        leases.append(lease)
        new_batches -= 1
    new_batches = min(new_batches, batches - taken_web) if web else 0
    while new_batches > 0 and budget > 0:
        lease = _lease_new(
            session, min(limit, budget), now, expires, max_depth, worker, partitions, min_priority
        )
        if lease is None:
            break
        leases.append(lease)
        budget -= len(lease.entries)
        new_batches -= 1
    return leases


_FRONTIER = table(FrontierEntry)  # Core: the lease statements skip the ORM's compile and row layers
_BATCHES = table(FetchBatch)
_NOW, _LIMIT = bindparam("now", type_=Double), bindparam("limit", type_=Integer)
_LEASED_COLUMNS = tuple(
    _FRONTIER.c[name]
    for name in ("url_id", "url", "host", "depth", "priority", "attempts", "hops", "recrawl_interval")
)


def _ready(by_partition: bool) -> Select:
    """The columns a lease needs; ``by_partition``: of the rows in the ``parts`` parameter's
    partitions only."""
    query = select(*_LEASED_COLUMNS)
    if by_partition:
        query = query.where(_FRONTIER.c.host_partition.in_(bindparam("parts", expanding=True)))
    return query


@functools.cache
def _due_statement(by_partition: bool) -> Select:
    """Due recrawls, oldest due first (parameters: now, limit[, parts])."""
    return (
        _ready(by_partition)
        .where(_FRONTIER.c.state == UrlState.DONE, _FRONTIER.c.available_at <= _NOW)
        .order_by(_FRONTIER.c.available_at)
        .limit(_LIMIT)
        .with_for_update(skip_locked=True)
    )


@functools.cache
def _new_statement(by_partition: bool, by_priority: bool) -> Select:
    """New URLs in lease order (parameters: now, limit, max_depth[, parts][, min_priority]).

    It walks ix_frontier_lease in lease order and stops after ``limit`` rows. The "+ 0"
    keeps planners from choosing ix_frontier_ready for the available_at range instead,
    which sorts every ready row per lease, a cost growing with the frontier
    (docs/performance-notes.md)."""
    c = _FRONTIER.c
    ready = [
        c.state == UrlState.NEW,
        c.available_at + 0 <= _NOW,
        c.depth <= bindparam("max_depth", type_=Integer),
    ]
    if by_priority:  # leave the URLs of dead prefixes for later (frontier/dead_prefixes.py)
        ready.append(c.priority >= bindparam("min_priority", type_=Double))
    return (
        _ready(by_partition)
        .with_hint(_FRONTIER, "FORCE INDEX (ix_frontier_lease)", "mysql")
        .with_hint(_FRONTIER, "FORCE INDEX (ix_frontier_lease)", "mariadb")
        .where(*ready)
        .order_by(c.priority.desc(), c.depth, c.url_id)
        .limit(_LIMIT)
        .with_for_update(skip_locked=True)
    )


_INSERT_BATCH = insert(_BATCHES).values(
    state=BatchState.LEASED,
    leased_by=bindparam("leased_by"),
    lease_expires=bindparam("lease_expires"),
    created_at=bindparam("created_at"),
    num_urls=bindparam("num_urls"),
)
# No ORM objects of these rows are loaded: nothing to synchronize with the session.
_MARK_LEASED = (
    update(_FRONTIER)
    .where(_FRONTIER.c.url_id.in_(bindparam("ids", expanding=True)))
    .values(state=UrlState.LEASED, batch_seq=bindparam("seq"), available_at=bindparam("expires"))
)


_ANY_EXPIRED = (
    select(_BATCHES.c.seq)
    .where(_BATCHES.c.state == BatchState.LEASED, _BATCHES.c.lease_expires <= _NOW)
    .limit(1)
)


@dataclass(frozen=True)
class _Kinds:
    web: bool = True
    archives: bool = False


def _lease_archives(session: Session, limit: int, now: float, expires: float, worker: str) -> list[Lease]:
    """Up to ``limit`` planned archive batches, each under a new seq of the ledger."""
    out = []
    for row in archive_batches.next_planned(session, limit):
        inserted = session.execute(
            _INSERT_BATCH,
            {"leased_by": worker, "lease_expires": expires, "created_at": now, "num_urls": row.records_hint},
        )
        key = cast(CursorResult[Any], inserted).inserted_primary_key
        if key is None:
            raise RuntimeError("the database returned no sequence number for a new fetch batch")
        seq = int(key[0])
        session.execute(update(_BATCHES).where(_BATCHES.c.seq == seq).values(archive_batch=row.id))
        archive_batches.leased(session, row, seq, now)
        out.append(Lease(seq, [], archive_batches.work(session, row.id)))
    return out


def _lease_expired(
    session: Session,
    now: float,
    expires: float,
    worker: str,
    partitions: Sequence[int] | None,
    kinds: _Kinds = _Kinds(),
) -> Lease | None:
    """Take over the oldest expired batch with URLs in our partitions.

    Its URLs in other partitions go back to the frontier for their owners to lease. A
    batch may span partitions, and when a worker dies the live ones share its partitions
    anew (``heartbeat.share``), so no one may own all of a batch's hosts. Taking only
    whole batches would then leave it leased for good, and the ordered commit would wait on
    its sequence number forever."""
    if session.execute(_ANY_EXPIRED, {"now": now}).first() is None:
        return None  # the usual answer, from a prebuilt statement without ORM entities or locks
    expiring = select(FetchBatch).where(
        FetchBatch.state == BatchState.LEASED, FetchBatch.lease_expires <= now
    )
    if not kinds.archives:
        expiring = expiring.where(FetchBatch.archive_batch.is_(None))
    if not kinds.web:
        expiring = expiring.where(FetchBatch.archive_batch.is_not(None))
    expired = session.scalars(
        expiring.order_by(FetchBatch.seq).limit(20).with_for_update(skip_locked=True)
    ).all()
    mine = None if partitions is None else set(partitions)
    for batch in expired:
        if batch.archive_batch is not None:  # any crawler takes an archive batch over, whole
            batch.leased_by, batch.lease_expires = worker, expires
            batch.reschedules = (batch.reschedules or 0) + 1
            return Lease(batch.seq, [], archive_batches.work(session, batch.archive_batch))
        rows = session.scalars(
            select(FrontierEntry).where(
                FrontierEntry.batch_seq == batch.seq, FrontierEntry.state == UrlState.LEASED
            )
        ).all()
        if mine is not None:
            ours = [r for r in rows if r.partition in mine]
            if rows and not ours:
                continue  # another crawler's hosts: it takes this batch over
            _hand_back([r for r in rows if r.partition not in mine], now)
            rows, batch.num_urls = ours, len(ours)
        batch.leased_by, batch.lease_expires = worker, expires
        batch.reschedules = (batch.reschedules or 0) + 1
        if rows:
            for row in rows:
                row.available_at = expires
            return Lease(batch.seq, [_leased(r, False) for r in rows])
        batch.state, batch.committed_at = BatchState.COMMITTED, now  # nothing left in it
    return None


def _hand_back(rows: Sequence[FrontierEntry], now: float) -> None:
    """Unlease ``rows``, due now: first visits as new URLs, recrawls as due ones."""
    for row in rows:
        row.state = UrlState.NEW if row.recrawl_interval is None else UrlState.DONE
        row.batch_seq, row.available_at = None, now


def _leased(row: Row | FrontierEntry, recrawl: bool) -> LeasedUrl:
    return LeasedUrl(
        url_id=row.url_id,
        url=row.url,
        host=row.host,
        depth=row.depth,
        priority=row.priority,
        attempts=row.attempts,
        hops=row.hops or 0,
        recrawl=recrawl,
        interval=row.recrawl_interval,
    )


def renew_leases(session: Session, seqs: Iterable[int], until: float) -> None:
    """Extend the leases of batches still being worked on (``until=0``: give them up)."""
    seqs = list(seqs)
    if seqs:
        session.execute(
            update(FetchBatch)
            .where(FetchBatch.seq.in_(seqs), FetchBatch.state == BatchState.LEASED)
            .values(lease_expires=until)
        )
        session.execute(
            update(FrontierEntry)
            .where(FrontierEntry.batch_seq.in_(seqs), FrontierEntry.state == UrlState.LEASED)
            .values(available_at=until)
        )


def release_worker(session: Session, worker: str) -> int:
    """Expire every lease held under ``worker`` (a dead predecessor with our identity)."""
    return expire_leases_of(session, [worker])


LEASE_LOCK = "lease_seq"  # the counter row a cluster's leases lock (lease_batches)


def expire_leases_of(session: Session, workers: Iterable[str]) -> int:
    """Hand out again at once the batches leased by ``workers`` (nodes shown dead)."""
    workers = list(workers)
    if not workers:
        return 0
    seqs = list(
        session.scalars(
            select(FetchBatch.seq).where(
                FetchBatch.state == BatchState.LEASED,
                FetchBatch.leased_by.in_(workers),
                FetchBatch.lease_expires > 0,
            )
        )
    )
    renew_leases(session, seqs, 0.0)
    return len(seqs)
