"""What a recrawl changes in a stored document: a new version (changed bytes), nothing but
the time (the same bytes), or its removal (the page is gone, a soft 404, noindex, or now
disallowed by robots.txt); a purged host's pages stay removed. And when the page is visited
next (adaptive recrawl: the interval halves when the content changed, doubles when not).
"""

from __future__ import annotations

import math
from collections import Counter

from sqlalchemy import select
from sqlalchemy.orm import Session

from services.crawler.commit import purge
from services.crawler.commit.duplicates import SortedDoc
from services.crawler.commit.results import UrlResult
from services.storage.formats.block_pair import PLACEMENT_COLUMNS
from services.storage.sql.bulk_sql import chunked
from services.storage.sql.models import Document

# Answers that say a page is gone for good (RFC 9110: 404 not found, 410 gone); a stored
# document whose recrawl answers one leaves the index (``record_removals``).
GONE_STATUSES = frozenset({404, 410})
# A recrawl found the page noindex, a soft 404, or disallowed by the host's robots.txt now:
# the owner asked us not to read it, so the copy we hold goes too (as Nutch's ROBOTS_DENIED
# counts as gone). robots.txt unavailable (5xx) is not a disallow: that page stays.
GONE_COUNTERS = ("noindex", "soft_404", "robots_denied")


def _says_gone(result: UrlResult) -> bool:
    return result.status in GONE_STATUSES or any(result.counters.get(c) for c in GONE_COUNTERS)


def update_recrawled(
    session: Session,
    docs: list[SortedDoc],
    changed: dict[str, dict],
    counts: Counter[str],
    commit_seq: int | None,
    purged: frozenset[str],
    now: float,
) -> None:
    """Point recrawled documents at their new version (``changed``: the new rows by
    url_id), or note that nothing changed. A page of a purged host (``purged``) stays
    removed, or is removed now."""
    for d in docs:
        row = d.existing
        if row is None:
            continue
        live = session.get(Document, row.url_id)
        if live is None:  # cannot happen: documents are never deleted
            continue
        if purge.kept_out(live.url, purged):
            if live.removed_at is None:
                live.removed_at = now
                live.commit_seq = commit_seq
            counts["purged_host_pages"] += 1
        elif live.removed_at is not None:  # gone or noindex before, a page again now
            live.removed_at = None
            live.commit_seq = commit_seq
            counts["documents_restored"] += 1
        new = changed.get(row.url_id)
        if new is None:
            live.unchanged = (live.unchanged or 0) + 1
            live.last_crawled = d.doc.fetched_at
            counts["recrawl_unchanged"] += 1
            continue
        for key in ("doc_id", "content_type", "title", "lang", "length", "status", "last_crawled"):
            setattr(live, key, new[key])
        for key in PLACEMENT_COLUMNS:
            setattr(live, key, new[key])
        live.versions = (live.versions or 1) + 1
        live.commit_seq = commit_seq
        counts["recrawl_changed"] += 1


def record_removals(
    session: Session,
    results: list[UrlResult],
    counts: Counter[str],
    commit_seq: int | None,
    now: float,
) -> None:
    """Mark stored documents whose page a recrawl found gone (``GONE_STATUSES``), a soft
    404, or marked noindex: the index leaves them out from its next update or build, as
    web engines drop a page whose recrawl says it is gone. A server error or a timeout
    is not gone: the page stays until a fetch says so."""
    gone = [r.url_id for r in results if r.doc is None and not r.archived and _says_gone(r)]
    for ids in chunked(gone, 500):
        for row in session.scalars(select(Document).where(Document.url_id.in_(ids))):
            if row.removed_at is None:
                row.removed_at = now
                row.commit_seq = commit_seq
                counts["documents_removed"] += 1


def next_interval(d: SortedDoc, recrawl_min: float, recrawl_max: float) -> float:
    """Adaptive recrawl: halve when the content changed, double when not, within the bounds."""
    previous = d.result.interval
    if d.existing is None or previous is None:
        return math.sqrt(recrawl_min * recrawl_max)  # first visit: the geometric middle
    changed = d.existing.doc_id != d.doc.doc_id
    return min(recrawl_max, max(recrawl_min, previous / 2 if changed else previous * 2))
