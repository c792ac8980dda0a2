"""Which commits an index version includes, so the next incremental update knows what is new.

Every commit stamps the documents it writes with its ledger seq (``documents.commit_seq``,
the crawler's committers); so does the operator's purge of a blocked host, a commit without
fetches that takes a seq of its own (``services.crawler.commit.purge``), so the pages it
removes are newer than any mark read before it, however old they are. Batches commit in seq
order in a crawl cluster, but several single-process crawlers on one database may commit out
of order, and a batch leased before a build may commit after it with a smaller seq. So a
version records both the highest seq its documents had (``through_seq``) and the seqs below
it that were still leased or acknowledged when it read the documents (``pending_seqs``): the
documents new to it are those stamped above ``through_seq`` or with one of those seqs. A document the
version already held and that is taken again is only indexed twice, never missed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, func, or_, select
from sqlalchemy.orm import Session

from services.crawler.frontier.ledger import BatchState
from services.storage.sql.models import Document, FetchBatch


@dataclass(frozen=True)
class CommitMark:
    through_seq: int
    pending_seqs: tuple[int, ...] = ()

    def to_meta(self) -> dict[str, Any]:
        return {"through_seq": self.through_seq, "pending_seqs": list(self.pending_seqs)}

    @classmethod
    def from_meta(cls, meta: Mapping[str, Any]) -> CommitMark | None:
        """The mark a segment's meta holds; None for a segment built before marks existed."""
        if "through_seq" not in meta:
            return None
        return cls(int(meta["through_seq"]), tuple(int(s) for s in meta.get("pending_seqs", [])))

    def newer(self) -> ColumnElement[bool]:
        """The documents committed after this mark (a WHERE clause on ``documents``)."""
        after = Document.commit_seq > self.through_seq
        return or_(after, Document.commit_seq.in_(self.pending_seqs)) if self.pending_seqs else after

    def joined(self, later: CommitMark) -> CommitMark:
        """This mark moved on to ``later`` (read after it): the larger seq, and the seqs
        pending at the later look (one pending before and committed since was indexed)."""
        through = max(self.through_seq, later.through_seq)
        return CommitMark(through, tuple(s for s in later.pending_seqs if s < through))


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
