"""Why a document ranked where it did for a query: the parts of its score, read back from
the segment (the same numbers the ranking used, not a second formula).

    text   = sum over query terms of  weight * impact      (+ RM3 terms, when feedback ran)
    final  = text * (1 + W * s / (s + 1)) * entry * (1 + words-as-typed bonus)     s = N * pagerank

``entry`` is the entry-page factor (``services.ranking.entry_pages``): above 1 for a home
or section page the query names, 1 otherwise; a home page the query names is also listed
before the other results, whatever its score.

Per term the breakdown gives the impact (BM25F over the fields at once: a field has no
score of its own, so its term frequencies are shown, which is what BM25F weighs). Pure:
no I/O, tested on a hand-made segment.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from services.search.query.language import ParsedQuery
from services.search.retrieval.entry_pages import named_entry_pages
from services.search.retrieval.rank import Ranked
from services.search.retrieval.segment import SegmentIndex

FIELDS = ("title", "body", "anchor", "url", "meta", "nav")


@dataclass(frozen=True)
class TermPart:
    term: str  # as indexed (stemmed)
    word: str  # as typed
    weight: float  # occurrences in the query
    impact: float  # BM25F impact of the term in the document (0 when absent)
    tfs: dict[str, int] = field(default_factory=dict)  # per-field term frequency (clipped)

    @property
    def score(self) -> float:
        return self.weight * self.impact


@dataclass(frozen=True)
class ScoreBreakdown:
    query: str
    mode: str  # how the query ran (services.search.retrieval.retrieve)
    rank: int | None  # 1-based position among the results; None beyond the reachable ones
    terms: list[TermPart]
    words_score: float  # sum of the query terms' parts
    feedback_score: float  # what RM3's expansion terms added (or took) on top of the words
    text_score: float
    pagerank: float
    prior: float  # W * s / (s + 1)
    entry_factor: float  # the entry-page factor: 1 unless the query names this home or section page
    exact_bonus: float  # words-as-typed bonus, as a fraction of the score (0..0.05)
    final_score: float


def term_parts(index: SegmentIndex, query: ParsedQuery, doc: int) -> list[TermPart]:
    """Each query term's share of ``doc``'s text score, looked up in its postings."""
    parts = []
    for term, weight in query.terms.items():
        word = query.forms.get(term, term)
        term_id = index.term_id(term)
        impact, tfs = 0.0, {name: 0 for name in FIELDS}
        if term_id is not None:
            hit, postings = index.locate(term_id, np.array([doc], dtype=np.uint32))
            if hit[0]:
                impact = float(index.posting_impacts(postings)[0])
                found = index.field_tfs_many(FIELDS, postings)
                tfs = {name: int(tf[0]) for name, tf in zip(FIELDS, found, strict=True)}
        parts.append(TermPart(term, word, float(weight), impact, tfs))
    return parts


def breakdown(
    index: SegmentIndex,
    query: ParsedQuery,
    q: str,
    doc: int,
    ranked: Ranked,
    mode: str,
    pagerank_weight: float,
    entry_page_weight: float = 0.0,
) -> ScoreBreakdown:
    """``doc``'s score parts for ``query``, given the ranking the search made (``ranked``,
    best first, as deep as results may be paged)."""
    parts = term_parts(index, query, doc)
    words = sum(p.score for p in parts)
    prior = float(index.prior(pagerank_weight)[doc])
    words_ids = [
        [i for form in query.forms_of(t) if (i := index.term_id(form)) is not None] for t in query.terms
    ]
    named = named_entry_pages(index, words_ids, entry_page_weight)
    entry = float(named.factors[named.docs == doc][0]) if (named.docs == doc).any() else 1.0
    where = np.flatnonzero(ranked.docs == doc)
    if where.shape[0]:
        i = int(where[0])
        text, final, rank = float(ranked.text[i]), float(ranked.final[i]), i + 1
    else:  # not among the reachable results: the words' score, no feedback, no bonus
        text, rank = words, None
        final = text * (1.0 + prior) * entry
    plain = text * (1.0 + prior) * entry
    return ScoreBreakdown(
        query=q,
        mode=mode,
        rank=rank,
        terms=parts,
        words_score=words,
        feedback_score=text - words if mode == "or+feedback" else 0.0,
        text_score=text,
        pagerank=float(index.pagerank[doc]),
        prior=prior,
        entry_factor=entry,
        exact_bonus=max(0.0, final / plain - 1.0) if plain > 0 else 0.0,
        final_score=final,
    )
