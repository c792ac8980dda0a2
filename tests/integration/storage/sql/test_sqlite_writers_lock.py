"""Writers of one SQLite file queue on the writers' file lock, held from BEGIN to the end
of COMMIT or ROLLBACK (two crawler processes starved each other on SQLite's busy sleeps)."""

from __future__ import annotations

import fcntl
import os
import threading

import pytest
from sqlalchemy import text

from services.storage.sql.engines import make_engine


def _lock_is_free(path) -> bool:
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(fd)
    return True


def test_the_file_lock_is_held_from_begin_to_the_end_of_commit_or_rollback(tmp_path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'one.db'}", immediate=True)
    lock = tmp_path / "one.db.writers"
    with engine.begin() as conn:
        assert not _lock_is_free(lock)
        conn.execute(text("CREATE TABLE t (x INTEGER)"))
    assert _lock_is_free(lock)
    with pytest.raises(RuntimeError, match="boom"), engine.begin() as conn:
        conn.execute(text("INSERT INTO t VALUES (1)"))
        assert not _lock_is_free(lock)
        raise RuntimeError("boom")
    assert _lock_is_free(lock)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM t")).scalar() == 0  # the rollback happened
    engine.dispose()


@pytest.fixture
def engines(tmp_path):
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    first, second = make_engine(url, immediate=True), make_engine(url, immediate=True)
    with first.begin() as conn:
        conn.execute(text("CREATE TABLE t (x INTEGER)"))
    yield first, second
    first.dispose()
    second.dispose()


def _second_writer(engine, started: threading.Event, seen: list) -> threading.Thread:
    def run() -> None:
        started.set()
        with engine.begin() as conn:  # waits on the file lock until the first writer is done
            seen.append(conn.execute(text("SELECT count(*) FROM t")).scalar())
            conn.execute(text("INSERT INTO t VALUES (2)"))

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def test_a_second_writer_begins_only_after_the_first_committed(engines) -> None:
    first, second = engines
    started, seen = threading.Event(), []
    with first.begin() as conn:
        conn.execute(text("INSERT INTO t VALUES (1)"))
        thread = _second_writer(second, started, seen)
        assert started.wait(10)
        thread.join(0.3)
        assert thread.is_alive() and seen == []  # still waiting: we hold the lock
    thread.join(10)
    assert seen == [1]  # it began after our COMMIT, so it saw our row
    with first.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM t")).scalar() == 2


def test_a_rolled_back_writer_releases_the_lock(engines) -> None:
    first, second = engines
    started, seen = threading.Event(), []
    with pytest.raises(RuntimeError, match="boom"), first.begin() as conn:
        conn.execute(text("INSERT INTO t VALUES (1)"))
        thread = _second_writer(second, started, seen)
        assert started.wait(10)
        raise RuntimeError("boom")
    thread.join(10)
    assert not thread.is_alive()
    assert seen == [0]  # our row was rolled back before it began
