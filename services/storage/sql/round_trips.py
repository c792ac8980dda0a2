"""Counting the round trips an engine's work costs the database (benchmarks, the crawl's report)."""

from __future__ import annotations

import threading
from typing import Any

from sqlalchemy import Engine, event
from sqlalchemy.pool import PoolResetState


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
