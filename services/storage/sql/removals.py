"""Which documents were removed since an index version was built: the search side hides them
at once (``services.search.retrieval.segment.IndexHolder``), the next version leaves them out.

A version's commit mark (``through_seq`` and the seqs still pending when it read the
documents, in its segment's meta; ``services.indexing.commit_mark``) says which commits it
includes. A recrawl that finds a page gone or noindex marks it removed in the commit that
stamps its ``commit_seq``, so the documents removed since the version are those removed and
stamped after its mark: an indexed range scan of the newest commits, not of every removal
ever made.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from services.storage.sql.models import Document


def removed_since(session: Session, through_seq: int, pending_seqs: Sequence[int] = ()) -> list[int]:
    """Doc numbers (ascending) removed by a commit after the mark ``through_seq`` (or by one of
    ``pending_seqs``, committed below it after the mark was taken)."""
    after = Document.commit_seq > through_seq
    newer = or_(after, Document.commit_seq.in_(list(pending_seqs))) if pending_seqs else after
    rows = session.scalars(
        select(Document.doc_num).where(newer, Document.removed_at.is_not(None)).order_by(Document.doc_num)
    )
    return [int(n) for n in rows]
