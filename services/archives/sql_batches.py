"""A database table or query (``type = "sql"``) as batches: key ranges of ``batch_size`` rows,
read back with one query per batch (``seek_state``: ``from``, ``to``; start and end are row
numbers).
"""

from __future__ import annotations

from typing import Any

from services.archives.batch import Batch
from services.archives.bundle import Bundle
from services.archives.formats import sql


def query(bundle: Bundle) -> sql.Query:
    """The bundle's query, as the sql reader runs it."""
    return sql.Query(
        bundle.query.strip().rstrip(";"), bundle.database_url_env, bundle.key_column, bundle.url_column,
        bundle.url_template, bundle.title_column, bundle.text_column, bundle.name,
    )  # fmt: skip


def sql_batches(bundle: Bundle, size: int) -> list[Batch]:
    """Batches of ``size`` rows by key range: ``[from, to)``, ``to`` None in the last."""
    keys = list(sql.keys(query(bundle)))
    batches = []
    for i in range(0, len(keys), size):
        upper = keys[i + size] if i + size < len(keys) else None
        state = {"format": "sql", "from": _json_key(keys[i]), "to": _json_key(upper)}
        batches.append(Batch("", i, min(i + size, len(keys)), min(size, len(keys) - i), state))
    return batches


def _json_key(key: Any) -> Any:
    return key if key is None or isinstance(key, int | str) else str(key)
