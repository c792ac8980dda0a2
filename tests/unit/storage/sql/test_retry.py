"""Which database errors the crawler runs again: lock conflicts only."""

from __future__ import annotations

import pymysql
from sqlalchemy.exc import IntegrityError, OperationalError

from services.storage.sql.retry import is_retryable


def wrapped(code: int) -> OperationalError:
    return OperationalError("INSERT ...", {}, pymysql.err.OperationalError(code, "message"))


def test_deadlocks_and_lock_wait_timeouts_are_retried_nothing_else():
    assert is_retryable(wrapped(1213)) and is_retryable(wrapped(1205))
    assert not is_retryable(wrapped(1045))  # access denied: running it again will not help
    assert not is_retryable(IntegrityError("INSERT ...", {}, Exception("duplicate")))
    assert not is_retryable(OperationalError("SELECT 1", {}, Exception("database is locked")))


def test_retry_transaction_runs_again_after_a_lock_conflict_and_gives_up_in_time():
    from services.storage.sql.retry import retry_transaction

    calls = []

    def deadlocks_twice() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise wrapped(1213)
        return "done"

    assert retry_transaction(deadlocks_twice, attempts=5, what="t") == "done" and len(calls) == 3
    calls.clear()
    try:
        retry_transaction(deadlocks_twice, attempts=2, what="t")
    except OperationalError:
        assert len(calls) == 2
    else:
        raise AssertionError("expected the second deadlock to surface")
    calls.clear()

    def denied() -> None:
        calls.append(1)
        raise wrapped(1045)

    try:
        retry_transaction(denied, attempts=5, what="t")
    except OperationalError:
        assert len(calls) == 1  # not a lock conflict: no second try
