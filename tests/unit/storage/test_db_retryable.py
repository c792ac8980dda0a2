"""Which database errors the crawler runs again: lock conflicts only."""

from __future__ import annotations

import pymysql
from sqlalchemy.exc import IntegrityError, OperationalError

from services.storage.db import is_retryable


def wrapped(code: int) -> OperationalError:
    return OperationalError("INSERT ...", {}, pymysql.err.OperationalError(code, "message"))


def test_deadlocks_and_lock_wait_timeouts_are_retried_nothing_else():
    assert is_retryable(wrapped(1213)) and is_retryable(wrapped(1205))
    assert not is_retryable(wrapped(1045))  # access denied: running it again will not help
    assert not is_retryable(IntegrityError("INSERT ...", {}, Exception("duplicate")))
    assert not is_retryable(OperationalError("SELECT 1", {}, Exception("database is locked")))
