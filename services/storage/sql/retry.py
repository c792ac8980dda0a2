"""Which database errors are worth running a transaction again for, and the loops that do.

A lock conflict (a deadlock, a lock wait timeout) is settled by running the
transaction again at once; a lost connection (a restart, a failover) by running it
again after a pause, on a fresh connection. Anything else is a real error.
"""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Callable
from typing import TypeVar

from sqlalchemy.exc import DBAPIError, OperationalError, SQLAlchemyError

log = logging.getLogger(__name__)
T = TypeVar("T")

RETRYABLE_MYSQL_ERRORS = {1205, 1213}  # lock wait timeout; deadlock (InnoDB rolled it back)


def is_retryable(exc: BaseException) -> bool:
    """A transaction the database aborted for a lock conflict: running it again is right."""
    if not isinstance(exc, OperationalError):
        return False
    args: tuple[object, ...] = getattr(getattr(exc, "orig", None), "args", ())
    return bool(args) and args[0] in RETRYABLE_MYSQL_ERRORS


# The server went away or could not be reached (a restart, a failover, a dropped connection):
# the transaction never committed, and a new connection from the pool may well work. 1045
# (access denied) on a new connection mid-run is a password rotation under way: the database
# has the new password, the secret not yet; a later connection reads the secret again.
CONNECTION_LOST_MYSQL_ERRORS = {1045, 1927, 2003, 2006, 2013}  # 1927: MariaDB, "connection was killed"


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
