"""Which fetched documents of a flush are new, which are recrawls of a URL's document and
which are copies of another URL's document (the same docId, the SHA-1 of the bytes), and
the ``DuplicateUrl`` rows of those copies: a body is stored once, every URL that served it
points at that document. Shared by the single-process committer and the cluster's.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from services.crawler.commit.results import FetchedDoc, UrlResult
from services.storage.sql.bulk_sql import chunked
from services.storage.sql.models import Document, DuplicateUrl
from services.text.urls import url_id

log = logging.getLogger(__name__)


@dataclass
class SortedDoc:
    """A fetched document to store, and the URL's document when it is a recrawl."""

    result: UrlResult
    doc: FetchedDoc
    existing: Document | None = None  # the URL's document (a recrawl)


def sort_docs(
    session: Session, results: list[UrlResult], counts: Counter[str], now: float
) -> tuple[list[SortedDoc], list[tuple[UrlResult, Document | SortedDoc]]]:
    """Split fetched documents into new/recrawled ones and content duplicates of others.

    One document per URL per flush (two URLs redirecting to one target
    count ``duplicate_url``); a URL that is a document already is a recrawl;
    a body whose docId another URL's document has is a duplicate.
    """
    candidates: dict[str, SortedDoc] = {}
    for result in results:
        if result.doc is None:
            continue
        key = url_id(result.doc.url)
        earlier = candidates.get(key)
        if earlier is None:
            candidates[key] = SortedDoc(result, result.doc)
        elif result.archived:  # several captures of one URL: the newest is the page
            counts["older_capture"] += 1
            if result.doc.fetched_at > earlier.doc.fetched_at:
                candidates[key] = SortedDoc(result, result.doc)
        else:
            counts["duplicate_url"] += 1
    for ids in chunked(list(candidates), 500):
        for row in session.scalars(select(Document).where(Document.url_id.in_(ids))):
            candidates[row.url_id].existing = row
    for key, d in list(candidates.items()):
        if d.result.archived and d.existing is not None and d.existing.last_crawled > d.doc.fetched_at:
            counts["older_capture"] += 1  # the stored page is a newer capture
            del candidates[key]
    by_doc_id: dict[str, Document | SortedDoc] = {}
    new_ids = [d.doc.doc_id for d in candidates.values() if d.existing is None]
    for ids in chunked(new_ids, 500):
        for row in session.scalars(select(Document).where(Document.doc_id.in_(ids))):
            by_doc_id.setdefault(row.doc_id, row)
    docs: list[SortedDoc] = []
    duplicates: list[tuple[UrlResult, Document | SortedDoc]] = []
    for d in candidates.values():
        original = by_doc_id.get(d.doc.doc_id) if d.existing is None else None
        if original is not None:
            duplicates.append((d.result, original))
            counts["duplicate_content"] += 1
            continue
        if d.existing is None:
            by_doc_id[d.doc.doc_id] = d
        docs.append(d)
    return docs, duplicates


def record_duplicates(
    session: Session, duplicates: list[tuple[UrlResult, Document | SortedDoc]], now: float
) -> None:
    for result, original in duplicates:
        doc = result.doc
        if doc is None:
            continue
        number: int | None
        if isinstance(original, SortedDoc):  # same flush: its doc number is fixed by now
            number = session.scalar(
                select(Document.doc_num).where(Document.url_id == url_id(original.doc.url))
            )
        else:
            number = original.doc_num
        if number is None:  # cannot happen: the original's row is in this transaction
            log.warning("no document row for %s, the original of duplicate %s", original, doc.url)
            continue
        uid = url_id(doc.url)
        row = session.get(DuplicateUrl, uid)
        if row is None:
            session.add(
                DuplicateUrl(
                    url_id=uid,
                    url=doc.url,
                    doc_num=number,
                    doc_id=doc.doc_id,
                    first_seen=now,
                    last_seen=now,
                )
            )
        else:
            row.doc_num, row.doc_id, row.last_seen = number, doc.doc_id, now
