"""Rows of a database query to documents, as Yioop's database bundles are.

The bundle names the query, the columns holding the text (and optionally the title and
the URL, or a URL template filled in with the row's columns) and the NAME of the
environment variable holding the database URL (``mysql+pymysql://...``,
``sqlite:///...``): credentials never sit in the bundle. Batches are ranges of a key
column (``key_column``, else ``url_column``, else the query's first column): rows
inserted later fall into their range, and no batch depends on OFFSET's order.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from services.archives.errors import ArchiveError, BundleError
from services.archives.formats.jsonl import collection_host
from services.archives.records import ArchiveRecord, Document, Skip, skipped
from services.text.errors import BadUrlError
from services.text.urls import normalize_url

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Query:
    query: str
    database_url_env: str
    key_column: str = ""
    url_column: str = ""
    url_template: str = ""
    title_column: str = ""
    text_column: str = ""
    collection: str = "sql"

    def database_url(self) -> str:
        url = os.environ.get(self.database_url_env, "")
        if not url:
            raise BundleError(
                f"environment variable {self.database_url_env} is not set: it must hold the database URL "
                "(e.g. mysql+pymysql://user:password@host/db); the bundle names it, never the URL itself"
            )
        return url

    def key(self, columns: list[str]) -> str:
        key = self.key_column or self.url_column or (columns[0] if columns else "")
        if key not in columns:
            raise BundleError(f"the query returns no column {key!r} (it returns {', '.join(columns)})")
        if not _NAME.fullmatch(key):
            raise BundleError(f"key column {key!r}: use a plain column name (letters, digits, _)")
        return key


def _engine(query: Query) -> Any:
    from sqlalchemy import create_engine

    return create_engine(query.database_url())


def keys(query: Query) -> Iterator[Any]:
    """Every row's key, in order (registration cuts them into ranges)."""
    from sqlalchemy import text
    from sqlalchemy.exc import SQLAlchemyError

    engine = _engine(query)
    try:
        with engine.connect() as conn:
            columns = list(conn.execute(text(f"SELECT * FROM ({query.query}) AS q WHERE 1 = 0")).keys())
            key = query.key(columns)
            result = conn.execution_options(stream_results=True).execute(
                text(f"SELECT q.{key} FROM ({query.query}) AS q ORDER BY q.{key}")
            )
            for row in result:
                yield row[0]
    except SQLAlchemyError as exc:
        raise ArchiveError(f"the bundle's query failed on ${query.database_url_env}: {exc}") from exc
    finally:
        engine.dispose()


def read_rows(
    query: Query, key_from: Any, key_to: Any, *, cap: int, fetched_at: float, language: str = ""
) -> Iterator[ArchiveRecord]:
    """The rows whose key is in [key_from, key_to) (``key_to`` None: to the last)."""
    from sqlalchemy import text
    from sqlalchemy.exc import SQLAlchemyError

    engine = _engine(query)
    host = collection_host(query.collection)
    try:
        with engine.connect() as conn:
            columns = list(conn.execute(text(f"SELECT * FROM ({query.query}) AS q WHERE 1 = 0")).keys())
            key = query.key(columns)
            for name in (query.text_column, query.title_column, query.url_column):
                if name and name not in columns:
                    raise BundleError(
                        f"the query returns no column {name!r} (it returns {', '.join(columns)})"
                    )
            upper = "" if key_to is None else f" AND q.{key} < :to"
            params = {"from": key_from} | ({} if key_to is None else {"to": key_to})
            sql = f"SELECT * FROM ({query.query}) AS q WHERE q.{key} >= :from{upper} ORDER BY q.{key}"
            for index, row in enumerate(
                conn.execution_options(stream_results=True).execute(text(sql), params)
            ):
                yield _row_record(dict(row._mapping), index, key, query, host, cap, fetched_at, language)
    except SQLAlchemyError as exc:
        raise ArchiveError(f"the bundle's query failed on ${query.database_url_env}: {exc}") from exc
    finally:
        engine.dispose()


def _row_record(
    row: dict[str, Any],
    index: int,
    key: str,
    query: Query,
    host: str,
    cap: int,
    fetched_at: float,
    language: str,
) -> ArchiveRecord:
    where = f"row {key}={row[key]!r}"
    try:
        if query.url_column:
            url = normalize_url(str(row[query.url_column]))
        elif query.url_template:
            url = normalize_url(
                query.url_template.format(**{k: quote(str(v), safe="") for k, v in row.items()})
            )
        else:
            url = normalize_url(f"https://{host}/row/{quote(str(row[key]), safe='')}")
    except (BadUrlError, KeyError, IndexError, ValueError) as exc:
        error = f"{query.collection}: {where}: no usable URL ({exc})"
        return ArchiveRecord("", index, fetched_at, skipped=Skip.CORRUPT, error=error)
    text = str(row.get(query.text_column) or "")
    title = str(row.get(query.title_column) or "") if query.title_column else ""
    if len(text.encode("utf-8", "replace")) > cap:
        return skipped(url, index, fetched_at, Skip.TOO_LARGE, "row")
    if not text.strip() and not title.strip():
        return skipped(url, index, fetched_at, Skip.EMPTY, "row")
    return ArchiveRecord(url, index, fetched_at, document=Document(title, text, [], language))
