"""Database engines for the one URL the settings name (SQLite or MySQL/MariaDB).

Several processes share one database: on SQLite the file is switched to WAL and
writing transactions queue on a lock beside it, on MySQL the pool pings and
reads committed rows, and takes each new connection's password from the secret
the URL names (``services.aws_database``). Everything that opens the database
goes through ``make_engine``.
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.engine.interfaces import DBAPIConnection
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.pool import ConnectionPoolEntry


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
    return _mysql_engine(parsed)


def _mysql_engine(parsed: URL) -> Engine:
    """A pinged pool; credentials from the secret the URL names, if it names one, read per new
    connection (``connect.py``), so a rotated password needs no restart."""
    from services.aws_database import SECRET_QUERY_KEYS, SecretSource, credentials_for

    source = SecretSource.from_query(parsed.query)
    parsed = parsed.difference_update_query(SECRET_QUERY_KEYS)
    # READ COMMITTED, not InnoDB's REPEATABLE READ: with the latter, the crawler's
    # "SELECT ... FOR UPDATE SKIP LOCKED" of expired batches takes gap locks up to
    # the end of the index, so two crawler processes inserting their new batches
    # deadlock each other (as the two-process MariaDB benchmark shows).
    engine = create_engine(parsed, pool_pre_ping=True, pool_recycle=3600, isolation_level="READ COMMITTED")
    tls_ca = parsed.query.get("ssl_ca")
    if source is not None or tls_ca:
        from services.storage.sql.connect import install_connect_hook

        install_connect_hook(
            engine,
            credentials_for(source) if source else None,
            tls_ca if isinstance(tls_ca, str) else None,
        )
    return engine


def session_factory(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(engine, expire_on_commit=False)


def _writers_lock(engine: Engine, database: str | None) -> None:
    """Queue writing transactions on a file lock beside the database, not on SQLite's busy handler.

    SQLite's busy handler polls with sleeps growing to 100 ms, and whoever
    finds the lock free takes it: a crawler process that commits and leases in
    turn starves the other, whose leases wait in those sleeps (two crawler
    processes then sit idle much of the time: docs/benchmarks.md). A blocked
    ``flock`` wakes the moment the lock is released. The lock is held from BEGIN
    to the end of COMMIT or ROLLBACK, which are done here so that the release
    comes after them.
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


WAL_ATTEMPTS = 200  # x 50 ms: two processes opening a new database file at once


def _set_wal(cur: sqlite3.Cursor) -> None:
    """Switch the file to WAL (a lasting property of the file, set by whoever comes first).

    The switch needs the file to itself and SQLite answers "database is
    locked" at once, without waiting for the busy timeout, when another
    process is just creating its tables: two crawler processes starting
    together on a new file fail this way. Wait and try again.
    """
    for attempt in range(WAL_ATTEMPTS):
        try:
            cur.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or attempt == WAL_ATTEMPTS - 1:
                raise
            time.sleep(0.05)
