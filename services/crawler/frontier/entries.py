"""The frontier in the database: every URL ever seen, one row per ``url_id``.

A row is ``new`` until a fetch batch leases it (``leased``, with the batch's
sequence number), then ``done`` (fetched, denied, or not worth retrying) or
``failed`` (gave up after ``max_attempts``). A retry goes back to ``new``
with a later ``available_at``; a ``done`` row's ``available_at`` is its next
recrawl, and a lease takes it again once that time has come. Rows are never
deleted, so the table doubles as the "seen" set: a URL is added once, however
many pages link to it.

Priority (higher first): a link found on a page with many out-links (a hub
or list page) starts higher, ``log2(1 + out-links of the discoverer)``, and
every further link to a URL still waiting adds one (in-link counting, an
online importance estimate). Seeds outrank everything.

Hosts hash into virtual partitions (``partition_of``); a crawler leases only
from its own partitions, so two crawlers never share a host.

Rows are leased in batches, the unit of the ordered-commit ledger (``leases``, ``ledger``).
All functions run inside the caller's transaction; the hot ones (adding links,
finishing URLs) are single ``executemany`` statements, not row-at-a-time ORM work.
"""

from __future__ import annotations

import functools
import math
import re
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from services.storage.sql.bulk_sql import chunked, mysql_quote
from services.storage.sql.models import FrontierEntry
from services.text.urls import host_key, url_id


class UrlState(StrEnum):
    """Where a frontier row is in the life the module docstring tells; the value is what the
    ``frontier.state`` column holds."""

    NEW = "new"  # waiting: never fetched, a retry in its backoff, or released unfetched
    LEASED = "leased"  # out in a fetch batch (``batch_seq``)
    DONE = "done"  # fetched, denied, or not worth retrying; ``available_at`` is its recrawl
    FAILED = "failed"  # given up: a failure that will not recover, or ``max_attempts`` fetches


_NEW_SQL = f"'{UrlState.NEW}'"  # as a literal in the statements below

SEED_PRIORITY = 1e9  # seeds go first, even when resuming a large frontier
SITEMAP_PRIORITY = -1.0  # sitemap URLs wait behind anything a page linked to


@functools.lru_cache(maxsize=1 << 16)
def partition_of(host: str, partitions: int) -> int:
    """Stable partition of a ``scheme://host:port`` key (CRC-32: same in every process).

    Cached: the committer asks for every URL it adds, and a crawl's URLs share few hosts."""
    return zlib.crc32(host.encode("utf-8")) % partitions


def hub_priority(out_links: int) -> float:
    """Starting priority of a URL found on a page with ``out_links`` links."""
    return math.log2(1 + out_links)


@dataclass(slots=True)
class NewUrl:
    """A URL to add; ``url`` must already be normalized.

    Not frozen: a frozen dataclass's ``__init__`` costs several times a plain one's, and
    the committer makes ~20 of these per page.
    """

    url: str
    depth: int
    priority: float = 0.0
    discovered_from: str | None = None  # url_id of the linking page
    hops: int = 0  # redirect hops that led here
    inlinks: int = 1  # links to it in this flush (each adds one to a waiting URL's priority)
    # url_id and host_key of ``url`` when its discoverer computed them already (a cluster's
    # worker does, so that the one committer does not: "" means "compute it").
    key: str = ""
    host: str = ""


@dataclass(frozen=True)
class Outcome:
    """How a leased URL ended.

    ``done``/``failed`` count an attempt; ``new`` with ``available_at`` is a
    retry (counts an attempt, waits until then); ``new`` without it is a
    release (never fetched, leasable again at once). ``available_at`` of a
    ``done`` row is its next recrawl.
    """

    url_id: str
    state: UrlState
    status: int | None = None
    error: str | None = None
    available_at: float | None = None
    interval: float | None = None
    priority: float | None = None  # a release's new priority (None: unchanged)


def add_urls(session: Session, urls: Iterable[NewUrl], now: float = 0.0, *, partitions: int = 1) -> int:
    """Insert URLs not seen before and raise the priority of waiting ones; returns how many were new.

    One ``INSERT ... ON CONFLICT`` (SQLite) / ``ON DUPLICATE KEY`` (MySQL)
    statement per call, executed for all rows at once; a concurrent crawler
    adding the same URL is harmless.
    """
    fresh: dict[str, NewUrl] = {}
    for new in urls:
        uid = new.key or url_id(new.url)
        old = fresh.get(uid)
        if old is None:
            fresh[uid] = new
        else:  # the first discovery wins; later ones count as in-links
            fresh[uid] = NewUrl(
                old.url,
                min(old.depth, new.depth),
                max(old.priority, new.priority),
                old.discovered_from,
                old.hops,
                old.inlinks + new.inlinks,
                uid,
                old.host or new.host,
            )
    if not fresh:
        return 0
    rows = []
    for uid, new in sorted(fresh.items()):  # primary-key order: see ``finish``
        host = new.host or host_key(new.url)
        rows.append(
            (
                uid,
                new.url,
                host,
                partition_of(host, partitions),
                new.priority + new.inlinks - 1,
                now,
                new.depth,
                new.discovered_from,
                new.hops,
                new.inlinks - 1,
                UrlState.NEW,
                0,
            )
        )
    sqlite = session.get_bind().dialect.name == "sqlite"
    before = _last_rowid(session) if sqlite else _known(session, list(fresh))
    if sqlite:
        session.connection().exec_driver_sql(_upsert_sql(session), rows)
    else:
        # The statement's text built here: PyMySQL's executemany would escape each value
        # through its generic converters, most of a cluster committer's CPU (20 links
        # a page, 12 columns each: docs/performance-notes.md); these columns' types are known.
        head, tail = _upsert_sql(session).split(" VALUES ", 1)
        tail = tail.split(") ", 1)[1]
        conn = session.connection().execution_options(no_parameters=True)
        quote = mysql_quote(session)
        for chunk in chunked(rows, 2000):
            conn.exec_driver_sql(f"{head} VALUES {_mysql_values(chunk, quote)} {tail}")
    return _last_rowid(session) - before if sqlite else len(fresh) - before


def _mysql_values(rows: list[tuple], quote: Callable[[str], str]) -> str:
    """The rows of ``add_urls`` as MySQL literals. url_ids are hex digests and the numbers
    are ours; URL and host are quoted as the server reads strings (``mysql_quote``: its
    sql_mode decides). Sent with no parameters, so a ``%`` is only a character."""
    out = []
    for uid, url, host, part, prio, now, depth, source, hops, inlinks, _state, _attempts in rows:
        if not (math.isfinite(prio) and math.isfinite(now)):
            raise ValueError(f"priority {prio!r} or time {now!r} of {url} is not a finite number")
        frm = "NULL" if source is None else f"'{_hex(source)}'"
        out.append(
            f"('{_hex(uid)}',{quote(url)},{quote(host)},{int(part)},{prio!r},"
            f"{now!r},{int(depth)},{frm},{int(hops)},{int(inlinks)},{_NEW_SQL},0)"
        )
    return ",".join(out)


def _hex(key: str) -> str:
    if len(key) != 40 or not _HEX.fullmatch(key):
        raise ValueError(f"{key!r} is not a url_id (40 hex digits)")
    return key


_HEX = re.compile(r"[0-9a-f]{40}")


def _last_rowid(session: Session) -> int:
    """SQLite numbers new rows past the largest rowid, and our transaction holds the
    write lock: the difference before and after the insert is what it added (O(log n))."""
    return session.connection().exec_driver_sql("SELECT max(rowid) FROM frontier").scalar() or 0


def _known(session: Session, url_ids: list[str]) -> int:
    """How many of ``url_ids`` the frontier holds (MySQL): primary-key lookups, O(batch).

    Not a count of the table before and after the insert: InnoDB counts rows
    one by one, twice per flush, a cost growing with the crawl
    (docs/performance-notes.md). Two crawlers adding one URL in the same instant
    may both count it as new; the frontier still holds it once.
    """
    known = 0
    for ids in chunked(url_ids, 500):
        known += (
            session.scalar(
                select(func.count()).select_from(FrontierEntry).where(FrontierEntry.url_id.in_(ids))
            )
            or 0
        )
    return known


_COLUMNS = (
    "url_id, url, host, host_partition, priority, available_at, depth, discovered_from, "
    "hops, inlinks, state, attempts"
)


def _upsert_sql(session: Session) -> str:
    dialect = session.get_bind().dialect.name
    if dialect == "sqlite":
        return (
            f"INSERT INTO frontier ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (url_id) DO UPDATE SET inlinks = frontier.inlinks + excluded.inlinks + 1, "
            f"priority = frontier.priority + excluded.inlinks + 1 WHERE frontier.state = {_NEW_SQL}"
        )
    if dialect in ("mysql", "mariadb"):
        # pymysql batches an executemany into multi-row INSERTs only when VALUES holds
        # nothing but placeholders; VALUES(col) (not MySQL 8's alias) also runs on MariaDB.
        return (
            f"INSERT INTO frontier ({_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, "
            "%s, %s) ON DUPLICATE KEY UPDATE "
            f"priority = IF(state = {_NEW_SQL}, priority + VALUES(inlinks) + 1, priority), "
            f"inlinks = IF(state = {_NEW_SQL}, inlinks + VALUES(inlinks) + 1, inlinks)"
        )
    # Settings.validate admits only these two URL schemes, so this names a programming error.
    raise ValueError(
        f"the frontier runs on SQLite and MySQL/MariaDB, not {dialect}: "
        "set NIMBUS_DATABASE_URL to sqlite:///path or mysql+pymysql://..."
    )


def finish(
    session: Session, outcomes: Iterable[Outcome], now: float = 0.0, *, recrawl_after: float = 30 * 86_400.0
) -> None:
    """Record how leased URLs ended, in one ``executemany`` per kind of outcome.

    Finished rows without their own ``available_at`` come back after ``recrawl_after`` seconds.
    """
    # Plain tuples for the driver: SQLAlchemy's per-row parameter processing of a Core
    # executemany costs more than SQLite's own work on these rows (the committer's hot path).
    released: list[tuple[object, ...]] = []  # (uid, at, prio)
    ended: list[tuple[object, ...]] = []  # (uid, state, status, error, at, interval)
    for o in outcomes:
        if o.state == UrlState.NEW and o.available_at is None:
            released.append((o.url_id, now, o.priority))
        else:
            at = now + recrawl_after if o.available_at is None else o.available_at
            ended.append((o.url_id, o.state, o.status, o.error, at, o.interval))
    # In primary-key order, as add_urls and the lease's UPDATE take their row locks:
    # transactions that lock rows in one order cannot deadlock on them (InnoDB).
    released.sort(key=lambda row: str(row[0]))
    ended.sort(key=lambda row: str(row[0]))
    if _mysql(session):
        _finish_mysql(session, released, ended)
        return
    connection = session.connection()
    if released:
        connection.exec_driver_sql(_RELEASE_SQLITE, [(at, prio, uid) for uid, at, prio in released])
    if ended:
        connection.exec_driver_sql(_END_SQLITE, [(*row[1:], row[0]) for row in ended])


_RELEASE_SQLITE = (
    f"UPDATE frontier SET state = {_NEW_SQL}, batch_seq = NULL, available_at = ?, "
    "priority = COALESCE(?, priority) WHERE url_id = ?"
)
_END_SQLITE = (
    "UPDATE frontier SET state = ?, batch_seq = NULL, attempts = attempts + 1, last_status = ?, "
    "last_error = ?, available_at = ?, recrawl_interval = COALESCE(?, recrawl_interval) WHERE url_id = ?"
)


def _mysql(session: Session) -> bool:
    return session.get_bind().dialect.name in ("mysql", "mariadb")


# MySQL: PyMySQL sends an executemany of UPDATE as one statement per row (only INSERT and
# REPLACE become multi-row statements), so a committed page would cost a round trip here alone.
# Instead, one UPDATE per chunk joins the frontier to the chunk's rows (a UNION ALL derived
# table), driven by the chunk (STRAIGHT_JOIN): its rows are locked in the chunk's order, which
# is primary-key order, as everywhere else.
_FINISH_CHUNK = 1000
_RELEASE_SET = (
    f"SET f.state = {_NEW_SQL}, f.batch_seq = NULL, f.available_at = v.at, "
    "f.priority = COALESCE(v.prio, f.priority)"
)
_END_SET = (
    "SET f.state = v.state, f.batch_seq = NULL, f.attempts = f.attempts + 1, "
    "f.last_status = v.status, f.last_error = v.error, f.available_at = v.at, "
    "f.recrawl_interval = COALESCE(v.ival, f.recrawl_interval)"
)


def _finish_mysql(
    session: Session, released: list[tuple[object, ...]], ended: list[tuple[object, ...]]
) -> None:
    connection = session.connection()
    for columns, rows, assignments in (
        (("uid", "at", "prio"), released, _RELEASE_SET),
        (("uid", "state", "status", "error", "at", "ival"), ended, _END_SET),
    ):
        for chunk in chunked(rows, _FINISH_CHUNK):
            values = tuple(value for row in chunk for value in row)
            connection.exec_driver_sql(_joined_update(columns, len(chunk), assignments), values)


def _joined_update(columns: tuple[str, ...], n: int, assignments: str) -> str:
    marks = ", ".join(["%s"] * len(columns))
    first = ", ".join(f"%s AS {c}" for c in columns)
    rows = " UNION ALL ".join([f"SELECT {first}"] + [f"SELECT {marks}"] * (n - 1))
    return f"UPDATE ({rows}) AS v STRAIGHT_JOIN frontier AS f ON f.url_id = v.uid {assignments}"


def next_available(
    session: Session, *, max_depth: int, partitions: Sequence[int] | None = None
) -> float | None:
    """When the next waiting URL (a retry in backoff) becomes leasable; None when none waits."""
    query = select(func.min(FrontierEntry.available_at)).where(
        FrontierEntry.state == UrlState.NEW, FrontierEntry.depth <= max_depth
    )
    if partitions is not None:
        query = query.where(FrontierEntry.partition.in_(list(partitions)))
    return session.scalar(query)


def count_by_state(session: Session) -> dict[str, int]:
    rows = session.execute(select(FrontierEntry.state, func.count()).group_by(FrontierEntry.state))
    return {state: count for state, count in rows}


def recrawl_now(session: Session, urls: Iterable[str]) -> int:
    """Known URLs (normalized) due again at once, ahead of everything: what an operator asks
    for a page that changed ("fetch it again now"). A fetched page becomes the first due
    recrawl, a given-up one waits afresh, a waiting one goes first; a leased one is left to
    its lease. Returns how many rows changed."""
    ids = [url_id(url) for url in urls]
    if not ids:
        return 0
    changed = 0
    due_first: dict[UrlState, dict[str, object]] = {  # new first: a given-up row made new counts once
        UrlState.NEW: {"available_at": 0.0, "priority": SEED_PRIORITY},
        UrlState.FAILED: {
            "state": UrlState.NEW,
            "attempts": 0,
            "available_at": 0.0,
            "priority": SEED_PRIORITY,
        },
        UrlState.DONE: {"available_at": 0.0},  # due recrawls are leased oldest-due first
    }
    for state, values in due_first.items():
        for chunk in chunked(ids, 500):
            rows = update(FrontierEntry).where(FrontierEntry.url_id.in_(chunk), FrontierEntry.state == state)
            changed += session.execute(rows.values(**values)).rowcount  # type: ignore[attr-defined]
    return changed
