"""Two processes opening a new SQLite file at once: the second waits to switch it to WAL."""

from __future__ import annotations

import sqlite3
import threading

from sqlalchemy import text

from services.storage.sql.engines import make_engine


def test_switching_to_wal_waits_while_another_connection_holds_the_file(tmp_path):
    path = tmp_path / "new.db"
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("CREATE TABLE t (x)")
    # Another process writing (a crawler creating its tables): SQLite answers the switch
    # to WAL with "database is locked" at once, without waiting for the busy timeout.
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("INSERT INTO t VALUES (1)")
    committed = threading.Event()

    def commit() -> None:
        holder.execute("COMMIT")
        committed.set()

    # The holder lets go a little later, while make_engine is (by then) retrying.
    threading.Timer(0.5, commit).start()
    engine = make_engine(f"sqlite:///{path}")
    with engine.connect() as conn:
        assert conn.execute(text("PRAGMA journal_mode")).scalar() == "wal"
    assert committed.is_set()  # WAL came only after the other connection let go: it waited
    engine.dispose()
    holder.close()
