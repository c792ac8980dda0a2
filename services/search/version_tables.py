"""What search builds once per index version from the metadata database: the spelling
vocabulary (titles) and the documents' hosts and types (``site:``, ``filetype:``); a version
that only adds deltas reads only the documents they hold (``PerVersion``'s carry)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from sqlalchemy import select

from services.search.query.suggest import Vocabulary
from services.search.retrieval.filters import DocFacts
from services.search.retrieval.segment import SegmentIndex
from services.search.retrieval.segment_set import SegmentSet
from services.storage.sql.bulk_sql import chunked
from services.storage.sql.models import Document


class VersionTables:
    """The readers ``SearchService``'s per-version tables are built by."""

    def __init__(self, sessions: Callable[[], Any]) -> None:
        self.sessions = sessions

    def vocabulary(self, index: SegmentIndex) -> Vocabulary:
        """Title words and phrases with the index's document frequencies (suggest, did you mean)."""
        df = index.arrays["df"]

        def df_of(stem: str) -> int:
            term_id = index.term_id(stem)
            return 0 if term_id is None else int(df[term_id])

        with self.sessions() as session:
            titles = session.scalars(select(Document.title).where(Document.doc_num < index.num_docs)).all()
        return Vocabulary.build((t or "" for t in titles), df_of, index.vocabulary())

    def facts(self, index: SegmentIndex) -> DocFacts:
        """Hosts and types of the index's documents (site:, filetype:), one read per version."""
        with self.sessions() as session:
            rows = session.execute(
                select(Document.doc_num, Document.url, Document.content_type).where(
                    Document.doc_num < index.num_docs
                )
            )
            return DocFacts.from_rows(((int(n), u, t) for n, u, t in rows), index.num_docs)

    def add_facts(self, facts: DocFacts, index: SegmentIndex, first: int) -> DocFacts:
        """``facts`` with the documents the deltas from part ``first`` on hold read again."""
        held = index.held_since(first) if isinstance(index, SegmentSet) else np.zeros(0, np.int64)
        rows: list[tuple[int, str, str]] = []
        with self.sessions() as session:
            for chunk in chunked(held.tolist(), 1000):
                rows += [
                    (int(n), u, t)
                    for n, u, t in session.execute(
                        select(Document.doc_num, Document.url, Document.content_type).where(
                            Document.doc_num.in_(chunk)
                        )
                    )
                ]
        return facts.with_rows(rows, index.num_docs)
