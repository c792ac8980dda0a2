"""Database engines for the one URL the settings name (SQLite or MySQL/MariaDB)."""

from __future__ import annotations

import fcntl
import itertools
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar, cast

from sqlalchemy import (
    Connection,
    CursorResult,
    Engine,
    create_engine,
    event,
    func,
    insert,
    inspect,
    select,
    update,
)
from sqlalchemy.engine import make_url
from sqlalchemy.engine.interfaces import DBAPIConnection
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError, ProgrammingError, SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.pool import ConnectionPoolEntry, PoolResetState

from services.storage.migrations import HEAD
from services.storage.models import CrawlCounter, Document, IndexVersion, table

log = logging.getLogger(__name__)
T = TypeVar("T")


def make_engine(url: str, *, immediate: bool = False) -> Engine:
    """An engine for ``url``; SQLite gets WAL and a busy timeout, MySQL a pinged pool.

    ``immediate`` (SQLite only) starts every transaction with ``BEGIN
    IMMEDIATE``, taking the write lock at once. Processes that write in most
    transactions (crawlers sharing one database file) need it: a deferred
    transaction that read first and writes after another process committed
    fails at once with "database is locked" (a stale WAL snapshot cannot wait
    for the busy timeout), while an immediate one simply waits its turn.
    Readers (search) keep deferred transactions and never block writers.
    """
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_conn: sqlite3.Connection, _record: ConnectionPoolEntry) -> None:
            cur = dbapi_conn.cursor()
            _set_wal(cur)
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.close()
            if immediate:
                dbapi_conn.isolation_level = None  # the driver's own BEGIN is off: ours below

        if immediate:
            _writers_lock(engine, parsed.database)

            @event.listens_for(engine, "begin")
            def _begin_immediate(conn: Connection) -> None:
                conn.exec_driver_sql("BEGIN IMMEDIATE")

        return engine
    # READ COMMITTED, not InnoDB's REPEATABLE READ: with the latter, the crawler's
    # "SELECT ... FOR UPDATE SKIP LOCKED" of expired batches takes gap locks up to
    # the end of the index, so two crawler processes inserting their new batches
    # deadlocked each other (found by the two-process MariaDB benchmark).
    return create_engine(url, pool_pre_ping=True, pool_recycle=3600, isolation_level="READ COMMITTED")


class RoundTrips:
    """The round trips an engine's work costs the database, counted as the driver sends them:
    a statement is one; an ``executemany`` is one on SQLite (in process) and for PyMySQL's
    INSERT and REPLACE (sent as one multi-row statement), but one per row for any other
    statement on MySQL (PyMySQL loops over ``execute``); a COMMIT or ROLLBACK is one, and so is
    the ROLLBACK the pool sends when a connection comes back, even after a COMMIT (not after
    the connection rolled back itself; MariaDB's Com_commit and Com_rollback agree); on MySQL
    the pool's ping at every checkout (``pool_pre_ping``) is one. Thread-safe."""

    def __init__(self, engine: Engine) -> None:
        self._count = 0
        self._lock = threading.Lock()
        self._per_row = engine.dialect.name in ("mysql", "mariadb")
        event.listen(engine, "before_cursor_execute", self._statement)
        event.listen(engine, "commit", self._one)
        event.listen(engine, "rollback", self._one)
        event.listen(engine, "reset", self._reset)
        if getattr(engine.pool, "_pre_ping", False):
            event.listen(engine, "checkout", self._one)

    @property
    def count(self) -> int:
        return self._count

    def _add(self, n: int) -> None:
        with self._lock:
            self._count += n

    def _one(self, *_args: object) -> None:
        self._add(1)

    def _statement(
        self, _conn: object, _cursor: object, statement: str, parameters: Any, _context: object, many: bool
    ) -> None:
        batched = not many or not self._per_row or statement.lstrip()[:7].upper() in ("INSERT ", "REPLACE")
        self._add(1 if batched else len(parameters))

    def _reset(self, _dbapi: object, _record: object, state: PoolResetState) -> None:
        if not state.transaction_was_reset and not state.terminate_only:
            self._add(1)


def _writers_lock(engine: Engine, database: str | None) -> None:
    """Queue writing transactions on a file lock beside the database, not on SQLite's busy handler.

    SQLite's busy handler polls with sleeps growing to 100 ms, and whoever
    finds the lock free takes it: a crawler process that commits and leases in
    turn starved the other, whose leases waited in those sleeps (two crawler
    processes idled 60 % of the time). A blocked ``flock`` wakes the moment
    the lock is released. The lock is held from BEGIN to the end of COMMIT or
    ROLLBACK, which are done here so that the release comes after them.
    """
    if not database or database == ":memory:":
        return
    lock_path = f"{database}.writers"

    @event.listens_for(engine, "connect")
    def _open_lock(_dbapi_conn: DBAPIConnection, record: ConnectionPoolEntry) -> None:
        record.info["writers_lock"] = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)

    @event.listens_for(engine, "close")
    def _close_lock(_dbapi_conn: DBAPIConnection, record: ConnectionPoolEntry) -> None:
        fd = record.info.pop("writers_lock", None)
        if fd is not None:
            os.close(fd)

    def _fd(conn: Connection) -> int | None:
        fd: int | None = conn.connection.info.get("writers_lock")
        return fd

    @event.listens_for(engine, "begin")
    def _lock(conn: Connection) -> None:
        fd = _fd(conn)
        if fd is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)

    def _end(how: str) -> Callable[[Connection], None]:
        def handler(conn: Connection) -> None:
            fd = _fd(conn)
            try:
                getattr(conn.connection.dbapi_connection, how)()
            finally:
                if fd is not None:
                    fcntl.flock(fd, fcntl.LOCK_UN)

        return handler

    event.listen(engine, "commit", _end("commit"))
    event.listen(engine, "rollback", _end("rollback"))


RETRYABLE_MYSQL_ERRORS = {1205, 1213}  # lock wait timeout; deadlock (InnoDB rolled it back)


def is_retryable(exc: BaseException) -> bool:
    """A transaction the database aborted for a lock conflict: running it again is right."""
    if not isinstance(exc, OperationalError):
        return False
    args: tuple[object, ...] = getattr(getattr(exc, "orig", None), "args", ())
    return bool(args) and args[0] in RETRYABLE_MYSQL_ERRORS


# The server went away or could not be reached (a restart, a failover, a dropped connection):
# the transaction never committed, and a new connection from the pool may well work.
CONNECTION_LOST_MYSQL_ERRORS = {1927, 2003, 2006, 2013}  # 1927: MariaDB, "connection was killed"


def is_transient(exc: BaseException) -> bool:
    """A lock conflict or a lost connection: the transaction did not commit; running it again,
    on a fresh connection, is right. (A crawl cluster's roles outlive a database failover.)"""
    if is_retryable(exc):
        return True
    if isinstance(exc, DBAPIError) and exc.connection_invalidated:
        return True
    if not isinstance(exc, OperationalError):
        return False
    args: tuple[object, ...] = getattr(getattr(exc, "orig", None), "args", ())
    return bool(args) and args[0] in CONNECTION_LOST_MYSQL_ERRORS


def retry_with_backoff(
    work: Callable[[], T],
    *,
    what: str,
    retry_on: Callable[[BaseException], bool],
    attempts: int | None = None,
    wait: Callable[[float], object] = time.sleep,
    first: float = 0.1,
    cap: float = 5.0,
    on_retry: Callable[[BaseException], None] | None = None,
) -> T:
    """``work()``, run again after a growing pause (``first`` doubling up to ``cap``) while it
    fails with an error ``retry_on`` accepts, at most ``attempts`` times (None: until it
    works). For faults that last a while (a failover, a store resetting connections), where
    ``retry_transaction``'s immediate retries would all fail together."""
    delay = first
    for attempt in itertools.count(1):
        try:
            return work()
        except Exception as exc:
            if attempt == attempts or not retry_on(exc):
                raise
            if on_retry is not None:
                on_retry(exc)
            log.warning("%s: %s; trying again in %.1f s", what, exc, delay)
            wait(delay)
            delay = min(cap, delay * 2)
    raise AssertionError("unreachable")


def retry_transaction(
    work: Callable[[], T],
    *,
    attempts: int,
    what: str,
    retry_on: Callable[[BaseException], bool] = is_retryable,
) -> T:
    """Run ``work`` (which opens and commits its own transaction) again when it fails with
    an error ``retry_on`` accepts (by default: the database rolled it back for a lock
    conflict), at most ``attempts`` times in all."""
    for attempt in range(1, attempts + 1):
        try:
            return work()
        except SQLAlchemyError as exc:
            if attempt == attempts or not retry_on(exc):
                raise
            log.warning("%s: %s; trying again (attempt %d of %d)", what, exc, attempt + 1, attempts)
            if not is_retryable(exc):  # a lost connection: give the server a moment
                time.sleep(min(2.0, 0.1 * 2**attempt))
    raise AssertionError("unreachable")


WAL_ATTEMPTS = 200  # x 50 ms: two processes opening a new database file at once


def _set_wal(cur: sqlite3.Cursor) -> None:
    """Switch the file to WAL (a lasting property of the file, set by whoever comes first).

    The switch needs the file to itself and SQLite answers "database is
    locked" at once, without waiting for the busy timeout, when another
    process is just creating its tables: two crawler processes starting
    together on a new file failed this way. Wait and try again.
    """
    for attempt in range(WAL_ATTEMPTS):
        try:
            cur.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or attempt == WAL_ATTEMPTS - 1:
                raise
            time.sleep(0.05)


def init_db(engine: Engine) -> None:
    """Bring the schema to this release's (``migrate.upgrade_to_head``: a fresh database is
    created, an older one migrated, under a lock several starting processes share). A
    database stamped with this release's head needs neither, nor Alembic's import."""
    if _stamped_revision(engine) != HEAD:
        from services.storage.migrate import upgrade_to_head

        upgrade_to_head(engine)
    _drop_obsolete_indexes(engine)


def _stamped_revision(engine: Engine) -> str | None:
    """The revision in ``alembic_version`` (None: no such table yet, or no row)."""
    try:
        with engine.connect() as conn:
            found = conn.exec_driver_sql("SELECT version_num FROM alembic_version").scalar()
    except (OperationalError, ProgrammingError):
        return None
    return None if found is None else str(found)


# Indexes earlier versions created that nothing uses now: each costs every frontier insert.
_OBSOLETE_INDEXES = {"frontier": ("ix_frontier_next",)}  # replaced by ix_frontier_lease


def _index_names(engine: Engine, table_name: str) -> set[str]:
    return {ix["name"] for ix in inspect(engine).get_indexes(table_name) if ix["name"]}


def _drop_obsolete_indexes(engine: Engine) -> None:
    for table_name, names in _OBSOLETE_INDEXES.items():
        present = _index_names(engine, table_name)
        for name in names:
            if name in present:
                on = "" if engine.dialect.name == "sqlite" else f" ON {table_name}"
                try:
                    with engine.begin() as conn:
                        conn.exec_driver_sql(f"DROP INDEX {name}{on}")
                except (OperationalError, ProgrammingError):
                    # Two processes starting together: the other one dropped it first.
                    if name in _index_names(engine, table_name):
                        raise


def session_factory(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(engine, expire_on_commit=False)


def bump_counters(session: Session, counts: dict[str, int]) -> None:
    """Add to policy counters inside the caller's transaction (rows locked in name order)."""
    value = table(CrawlCounter).c.value
    for name, delta in sorted(counts.items()):
        if delta:
            _set_counter(session, name, value + delta, first=delta)


def read_counters(session: Session) -> dict[str, int]:
    return {row.name: row.value for row in session.scalars(select(CrawlCounter))}


def active_index(session: Session) -> IndexVersion | None:
    return session.scalars(
        select(IndexVersion).where(IndexVersion.active.is_(True)).order_by(IndexVersion.id.desc())
    ).first()


def activate_index(
    session: Session, segment: str, num_docs: int, num_terms: int, now: float | None = None
) -> IndexVersion:
    """Record a new segment and make it the only active one, in one transaction."""
    for row in session.scalars(select(IndexVersion).where(IndexVersion.active.is_(True))):
        row.active = False
    version = IndexVersion(
        segment=segment, created_at=now or time.time(), num_docs=num_docs, num_terms=num_terms, active=True
    )
    session.add(version)
    session.flush()
    return version


def chunked(items: list[T], size: int) -> Iterable[list[T]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


COMMITS_COUNTER = "commits"


def lock_commits(session: Session) -> None:
    """Take the committers' lock: an UPDATE of the ``commits`` counter row.

    Whoever hands out doc numbers (the crawler's committer reserving them,
    ``nimbus eval``'s ingest for its whole transaction) takes it as the first
    statement of its transaction, so no number is handed out twice.

    On SQLite the first write of a transaction takes the database's write
    lock (others wait, busy timeout); on MySQL the row lock serializes (the
    very first time, two racing inserts are settled in ``_set_counter``).
    """
    lock_counter(session, COMMITS_COUNTER)


def lock_counter(session: Session, name: str) -> None:
    """Serialize transactions on the counter row ``name`` (held until the caller's
    transaction ends): each takes it as its first statement."""
    _set_counter(session, name, table(CrawlCounter).c.value + 1, first=1)


RESERVED_COUNTER = "doc_nums_reserved"  # one past the highest doc_num handed out


def next_doc_num(session: Session) -> int:
    """The first doc_num nobody holds: past the highest stored and the highest reserved.

    Call under the commit lock (``lock_commits``).
    """
    highest = session.scalar(select(func.max(Document.doc_num)))
    reserved = session.scalar(select(CrawlCounter.value).where(CrawlCounter.name == RESERVED_COUNTER))
    return max(0 if highest is None else highest + 1, reserved or 0)


def reserve_doc_nums(session: Session, count: int) -> int:
    """Hand out ``count`` doc numbers (the first is returned); call under the commit lock.

    The crawler's committer reserves its numbers in a short transaction, then
    writes its blocks (the records hold the numbers) with no lock held, then
    inserts the rows: two crawler processes on one SQLite file waited on each
    other's block writing before. A committer that dies after reserving
    leaves unused numbers (a retried flush keeps its own), which the index
    build treats as empty documents; numbers stay unique and increasing.
    """
    base = next_doc_num(session)
    _set_counter(session, RESERVED_COUNTER, base + count, first=base + count)
    return base


def _set_counter(session: Session, name: str, value: object, *, first: int) -> None:
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
