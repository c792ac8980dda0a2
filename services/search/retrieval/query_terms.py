"""A query's words as the index's lists: each word's term ids (its forms the index holds),
looked up once for all of a query's steps, and the ``QueryTerm`` a scorer reads for a word
(one list, or a word's forms in several languages joined)."""

from __future__ import annotations

import numpy as np

from services.search.query.language import ParsedQuery
from services.search.retrieval.rank import QueryTerm
from services.search.retrieval.segment import SegmentIndex


def query_term(index: SegmentIndex, term_id: int, weight: float) -> QueryTerm:
    docs, stored, base_term, scale, length = index.query_postings(term_id)
    return QueryTerm(float(weight), docs, stored, index.max_impact(term_id), base_term, scale, length)


def _present(index: SegmentIndex, forms: list[str]) -> list[int]:
    """The term ids of those of a word's ``forms`` the index holds, in order."""
    return [i for form in forms if (i := index.term_id(form)) is not None]


def looked_up_words(index: SegmentIndex, query: ParsedQuery) -> dict[str, list[int]]:
    """Each query word's term ids in the index (its forms the index holds; none: it lacks
    the word), looked up once for all of a query's steps."""
    return {term: _present(index, query.forms_of(term)) for term in query.terms}


def query_term_group(index: SegmentIndex, term_ids: list[int], weight: float) -> QueryTerm:
    """One query word whose forms are several terms (its analyses in several languages): the
    documents holding any, each scored by its best form's impact (a disjunction scored as
    its best clause, Lucene's ``DisjunctionMaxQuery``: a page holding two forms of one word
    is not counted as holding two words)."""
    if len(term_ids) == 1:
        return query_term(index, term_ids[0], weight)
    parts = [index.postings(i) for i in term_ids]
    docs = np.concatenate([d for d, _ in parts])
    impacts = np.concatenate([m for _, m in parts])
    order = np.lexsort((-impacts, docs))  # by document, its best impact first
    docs, impacts = docs[order], impacts[order]
    first = np.concatenate([[True], docs[1:] != docs[:-1]]) if docs.shape[0] else np.zeros(0, bool)
    return QueryTerm(float(weight), docs[first], impacts[first], max(index.max_impact(i) for i in term_ids))
