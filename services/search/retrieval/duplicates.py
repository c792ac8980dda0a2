"""Other URLs with the same content: the crawler stores identical bytes once
(one document) and records every further URL serving them as a DuplicateUrl
row; a search hit lists a few of them.

One query per results page, whatever the number of hits, and bounded per
document: a window function numbers each document's duplicates (oldest
first) and the database returns only the first ``limit``, so a page served at
ten thousand URLs (a soft 404, a session-id trap) costs the same as one.
ROW_NUMBER() needs SQLite >= 3.25 or MariaDB >= 10.2 / MySQL 8.
"""

from __future__ import annotations

from collections.abc import Collection

from sqlalchemy import bindparam, func, select
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session

from services.storage.sql.models import DuplicateUrl

ALSO_AT_LIMIT = 5  # enough to show "same page, other address" without burying the next hit

# Built once: composing this statement (a window function over a subquery) costs more than
# running it on SQLite (docs/performance-notes.md).
_RANK = (
    func.row_number()
    .over(partition_by=DuplicateUrl.doc_num, order_by=(DuplicateUrl.first_seen, DuplicateUrl.url_id))
    .label("rank")
)
_RANKED = (
    select(DuplicateUrl.doc_num, DuplicateUrl.url, _RANK)
    .where(DuplicateUrl.doc_num.in_(bindparam("doc_nums", expanding=True)))
    .subquery()
)
_FIRST_URLS = (
    select(_RANKED.c.doc_num, _RANKED.c.url)
    .where(_RANKED.c.rank <= bindparam("limit"))
    .order_by(_RANKED.c.doc_num, _RANKED.c.rank)
)


def other_urls(
    db: Session | Connection, doc_nums: Collection[int], limit: int = ALSO_AT_LIMIT
) -> dict[int, list[str]]:
    """doc_num -> up to ``limit`` duplicate URLs (first seen first); absent when none."""
    if not doc_nums or limit <= 0:
        return {}
    rows = db.execute(_FIRST_URLS, {"doc_nums": sorted(set(doc_nums)), "limit": limit})
    found: dict[int, list[str]] = {}
    for doc_num, url in rows:
        found.setdefault(int(doc_num), []).append(url)
    return found
