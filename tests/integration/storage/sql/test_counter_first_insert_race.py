"""Two processes creating the same counter row at the same moment (two committers, or two
workers, starting together): both find no row, both insert it, and the one whose insert
loses must go on, not fail. A crawl cluster's standby committer died of this
IntegrityError in a fault-test run."""

from __future__ import annotations

import threading

import pytest
from sqlalchemy import event, text

from services.storage.sql.counters import lock_counter, read_counters
from services.storage.sql.engines import make_engine, session_factory
from services.storage.sql.schema import init_db
from tests.polling import wait_for

pytestmark = pytest.mark.mariadb


def test_the_loser_of_the_first_insert_updates_the_winners_row(mysql_url: str) -> None:
    first, second = make_engine(mysql_url), make_engine(mysql_url)
    init_db(first)
    second_found_no_row = threading.Event()
    second_id: list[int] = []
    errors: list[BaseException] = []

    @event.listens_for(second, "after_cursor_execute")
    def updated(_conn, cursor, statement, *_args):  # type: ignore[no-untyped-def]
        if statement.startswith("UPDATE crawl_counters") and cursor.rowcount == 0:
            second_found_no_row.set()

    first_inserted = threading.Event()

    @event.listens_for(first, "before_cursor_execute")
    def before_insert(_conn, _cursor, statement, *_args):  # type: ignore[no-untyped-def]
        if statement.startswith("INSERT INTO crawl_counters"):
            second_found_no_row.wait(timeout=30)  # both have looked: both will insert

    @event.listens_for(first, "after_cursor_execute")
    def inserted(_conn, _cursor, statement, *_args):  # type: ignore[no-untyped-def]
        if statement.startswith("INSERT INTO crawl_counters"):
            first_inserted.set()

    @event.listens_for(second, "before_cursor_execute")
    def second_inserts_after(_conn, _cursor, statement, *_args):  # type: ignore[no-untyped-def]
        if statement.startswith("INSERT INTO crawl_counters"):
            first_inserted.wait(timeout=30)  # the first wins the insert

    def run_second() -> None:
        try:
            with session_factory(second).begin() as s:
                second_id.append(int(s.execute(text("SELECT CONNECTION_ID()")).scalar_one()))
                lock_counter(s, "race")
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)

    with session_factory(first).begin() as s:
        thread = threading.Thread(target=run_second)
        thread.start()
        wait_for(lambda: bool(second_id), timeout=30, what="the second transaction")
        lock_counter(s, "race")  # inserts once the second has found no row

        def second_waits() -> bool:  # its insert waits for our uncommitted row
            with first.connect() as c:
                info = c.execute(
                    text("SELECT info FROM information_schema.processlist WHERE id = :i"), {"i": second_id[0]}
                ).scalar()
            return bool(info) and str(info).startswith("INSERT INTO crawl_counters")

        wait_for(second_waits, timeout=30, what="the second insert waiting for the first")
    thread.join(timeout=60)
    assert not errors, errors[0]
    with session_factory(first)() as s:
        assert read_counters(s)["race"] == 2  # both took the lock, one after the other
    first.dispose()
    second.dispose()
