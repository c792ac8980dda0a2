"""Rows to the database driver without SQLAlchemy's per-row work, in bounded batches, and MySQL literals.

The committer inserts a documents row per page and upserts ~20 frontier rows; Core's
executemany processes every row's parameters in Python, and PyMySQL's generic escaping
of them costs more than the database's own work. These helpers compile a statement once
and hand the driver plain tuples (SQLite) or a statement's text built from literals
(MySQL, whose strings are quoted by the connection as its server reads them).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from sqlalchemy import Table
from sqlalchemy.engine.interfaces import Dialect
from sqlalchemy.orm import Session
from sqlalchemy.sql.schema import ScalarElementColumnDefault

T = TypeVar("T")


def chunked(items: list[T], size: int) -> Iterable[list[T]]:
    """``items`` in lists of at most ``size``: one statement per list keeps a statement's
    parameters and text within the driver's and the server's limits."""
    for i in range(0, len(items), size):
        yield items[i : i + size]


def mysql_quote(session: Session) -> Callable[[str], str]:
    """Quote a str as a string literal the way the session's MySQL server reads it.

    PyMySQL's connection (``escape``, given a str) follows the server's status flags:
    backslash escapes by default, only a doubled quote under ``NO_BACKSLASH_ESCAPES`` (an
    operator's sql_mode). Backslash escaping in that mode let a quote in a URL end the
    literal and the rest run as SQL."""
    quote: Callable[[str], str] = session.connection().connection.dbapi_connection.escape  # type: ignore[union-attr]
    return quote


def mysql_literal(value: object, quote: Callable[[str], str]) -> str:
    """``value`` as a MySQL literal: NULL, a number, or a string by ``quote``
    (``mysql_quote``). Anything else raises TypeError."""
    if value is None:
        return "NULL"
    if isinstance(value, str):
        return quote(value)
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{value!r} is not a finite number: MySQL stores none")
        return repr(value)
    raise TypeError(f"no MySQL literal for {type(value).__name__} {value!r}")


def insert_rows(session: Session, into: Table, rows: Sequence[dict[str, Any]]) -> None:
    """INSERT ``rows`` (dicts by column key) in the caller's transaction; a column a row
    leaves out takes its scalar default (NULL if it has none and is nullable).

    SQLAlchemy's Core executemany processes every row's parameters in Python (for a row of
    ``documents``, as much as SQLite's own insert), and PyMySQL's generic escaping of a
    parameter dict costs more than twice what literals built by type do
    (docs/performance-notes.md); the committer inserts a row per page. So SQLite gets plain
    tuples and MySQL the rows' literals, in multi-row INSERTs."""
    if not rows:
        return
    connection = session.connection()
    sql, keys, defaults = _insert_plan(into, connection.dialect)
    if connection.dialect.name in ("mysql", "mariadb"):
        quote = mysql_quote(session)
        head = sql.split(" VALUES ", 1)[0]
        raw = connection.execution_options(no_parameters=True)  # a "%" is only a character
        for chunk in chunked(list(rows), 1000):
            values = ",".join(
                "(" + ",".join([mysql_literal(v, quote) for v in _in_order(row, keys, defaults)]) + ")"
                for row in chunk
            )
            raw.exec_driver_sql(f"{head} VALUES {values}")
        return
    connection.exec_driver_sql(sql, [_in_order(row, keys, defaults) for row in rows])  # SQLite: "?" marks


def _in_order(row: dict[str, Any], keys: list[str], defaults: dict[str, Any]) -> tuple[Any, ...]:
    """The row's values in ``keys`` order; a missing column without a default raises KeyError."""
    return tuple(row[k] if k in row else defaults[k] for k in keys)


@functools.cache
def _insert_plan(into: Table, dialect: Dialect) -> tuple[str, list[str], dict[str, Any]]:
    """The INSERT of all ``into``'s columns in ``dialect``'s parameter style, the column keys
    in the order of its parameters, and the columns' scalar defaults."""
    keys = [c.key for c in into.columns]
    compiled = into.insert().compile(dialect=dialect, column_keys=keys)
    order = list(compiled.positiontup or keys)
    defaults = {
        c.key: c.default.arg for c in into.columns if isinstance(c.default, ScalarElementColumnDefault)
    }
    for c in into.columns:  # a nullable column a row leaves out is NULL, as in an ORM insert
        if c.nullable and c.default is None and c.server_default is None and not c.primary_key:
            defaults.setdefault(c.key, None)
    return str(compiled), order, defaults
