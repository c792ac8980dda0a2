"""Handing out doc numbers: dense, unique and increasing, under the committers' lock."""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from services.storage.sql.counters import lock_counter, set_counter
from services.storage.sql.models import CrawlCounter, Document

COMMITS_COUNTER = "commits"


def lock_commits(session: Session) -> None:
    """Take the committers' lock: an UPDATE of the ``commits`` counter row.

    Whoever hands out doc numbers (the crawler's committer reserving them, for web
    and archive crawls alike) takes it as the first statement of its transaction, so
    no number is handed out twice.

    On SQLite the first write of a transaction takes the database's write
    lock (others wait, busy timeout); on MySQL the row lock serializes (the
    very first time, two racing inserts are settled in ``counters.set_counter``).
    """
    lock_counter(session, COMMITS_COUNTER)


RESERVED_COUNTER = "doc_nums_reserved"  # one past the highest doc_num handed out


def next_doc_num(session: Session) -> int:
    """The first doc_num nobody holds: past the highest stored and the highest reserved.

    Call under the commit lock (``lock_commits``).
    """
    highest = session.scalar(select(func.max(Document.doc_num)))
    reserved = session.scalar(select(CrawlCounter.value).where(CrawlCounter.name == RESERVED_COUNTER))
    return max(0 if highest is None else highest + 1, reserved or 0)


def reserve_doc_nums(session: Session, count: int) -> int:
    """Hand out ``count`` doc numbers (the first is returned); call under the commit lock.

    The crawler's committer reserves its numbers in a short transaction, then
    writes its blocks (the records hold the numbers) with no lock held, then
    inserts the rows: two crawler processes on one SQLite file waited on each
    other's block writing before. A committer that dies after reserving
    leaves unused numbers (a retried flush keeps its own), which the index
    build treats as empty documents; numbers stay unique and increasing.
    """
    base = next_doc_num(session)
    set_counter(session, RESERVED_COUNTER, base + count, first=base + count)
    return base
