"""The commit mark of the documents as the database holds them now: what a build or an
update records in its segment (``services.storage.sql.commit_marks.CommitMark``, which says
what a mark means). It reads the commit ledger's batch states, which are the crawler's.
"""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from services.crawler.frontier.ledger import BatchState
from services.storage.sql.commit_marks import CommitMark
from services.storage.sql.models import Document, FetchBatch


def commit_mark(session: Session) -> CommitMark:
    """The mark of the documents as ``session`` sees them now; read it before the documents
    a build indexes, so anything committed while the build runs is newer than its mark."""
    through = int(session.scalar(select(func.max(Document.commit_seq))) or 0)
    pending = session.scalars(
        select(FetchBatch.seq)
        .where(FetchBatch.state != BatchState.COMMITTED, FetchBatch.seq < through)
        .order_by(FetchBatch.seq)
    ).all()
    return CommitMark(through, tuple(int(s) for s in pending))
