"""RM3 pseudo-relevance feedback (Abdul-Jaleel et al., TREC 2004). numpy around one compiled
(numba) pass over the feedback documents' entries, ``_relevance_model``.

The best documents of a first retrieval are assumed relevant; the words
they share are added to the query. The relevance model is

    RM1(t)  = sum over feedback docs d of  p(d) * tf_td / |d|,   p(d) = score_d / sum of scores
    RM3(t)  = lambda * qtf_t / |q|  +  (1 - lambda) * RM1'(t)

where RM1' keeps the ``fb_terms`` most likely terms, renormalised. The
parameters are Anserini's defaults (10 documents, 10 terms, lambda 0.5),
used across TREC collections, not fitted here. The expanded weights are
scaled so that they sum to the original query's length: the text score keeps
its scale next to the PageRank prior.

Two guards keep expansion from drowning the words the query is about (the
BM25 impacts already carry idf, but RM1 favours frequent words so strongly
that a word in 40 % of the documents could get twice the weight of the rare
word the user typed):

* no expansion term weighs more than the lightest word of the original query
  (on by default);
* optionally, terms in more than ``max_df`` of the documents are not expansion
  candidates (the user's own words always stay). Off by default: it helped
  Cranfield, but on a small web site it left a long link-list page's rare
  words to dominate the expansion, and that page then outranked the article
  (docs/ranking.md).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from services.compiled import compiled_on_first_use


def rm3_weights(
    query: Mapping[int, float],
    fb_docs: np.ndarray,
    fb_scores: np.ndarray,
    fb_forward: tuple[np.ndarray, np.ndarray, np.ndarray],
    doc_lengths: np.ndarray,
    fb_terms: int,
    original_weight: float,
    df: np.ndarray | None = None,
    max_df: float = 1.0,
    cap_to_query: bool = False,
) -> dict[int, float]:
    """Expanded query weights by term id (the original terms included). ``fb_forward``: the
    feedback documents' forward index entries (``SegmentIndex.forward``: the number of each
    document's entries, then their term ids and title + body + meta frequencies, concatenated
    in ``fb_docs``' order); ``df`` (document frequency by term id) with ``max_df``
    < 1 leaves common terms out of the expansion."""
    qlen = float(sum(query.values()))
    if fb_docs.shape[0] == 0 or fb_terms <= 0 or qlen <= 0:
        return dict(query)
    scores = np.maximum(fb_scores.astype(np.float64), 0.0)
    p_doc = scores / scores.sum() if scores.sum() > 0 else np.full(scores.shape, 1 / scores.shape[0])
    counts, doc_terms, doc_tfs = fb_forward
    lengths = np.maximum(doc_lengths[fb_docs].astype(np.float64), 1.0)
    terms = np.asarray(doc_terms, dtype=np.int64)
    keep_terms = np.ones(terms.shape[0], dtype=np.bool_)
    if df is not None and max_df < 1.0:
        num_docs = max(int(doc_lengths.shape[0]), 1)
        original = np.fromiter(query.keys(), dtype=np.int64, count=len(query))
        common = df[terms].astype(np.float64) > max_df * num_docs
        keep_terms = ~common | np.isin(terms, original)
        if not keep_terms.any():
            return dict(query)
    kept, rm1_kept = _relevance_model(
        terms,
        np.asarray(doc_tfs, dtype=np.int64),
        np.asarray(counts, dtype=np.int64),
        p_doc / lengths,
        keep_terms,
        fb_terms,
    )
    total = rm1_kept.sum()
    expanded: dict[int, float] = {t: original_weight * w / qlen for t, w in query.items()}
    if total > 0:
        for term, w in zip(kept.tolist(), (rm1_kept / total).tolist(), strict=True):
            expanded[term] = expanded.get(term, 0.0) + (1.0 - original_weight) * w
    out = {t: w * qlen for t, w in expanded.items() if w > 0}
    if cap_to_query and query:
        floor = min(out.get(t, 0.0) for t in query)  # the lightest word the user typed
        out = {t: (w if t in query else min(w, floor)) for t, w in out.items()}
    return out


def warm_up() -> None:
    """Compile the relevance model (or load it from numba's cache) before a feedback query."""
    one = np.ones(1, np.int64)
    _relevance_model(np.zeros(1, np.int64), one, one, np.ones(1), np.ones(1, np.bool_), 10)


@compiled_on_first_use
def _relevance_model(terms, tfs, counts, per_doc, keep, fb_terms):
    """RM1 of the feedback documents' entries (each document's run ascending by term), and
    the ``fb_terms`` most likely terms, ties by term id: what numpy's ``unique``,
    ``bincount`` and ``lexsort`` give, to the bit. The runs are merged (no sort): a term's
    weights are added in document order from 0.0, as ``bincount`` adds them in entry order."""
    n_docs = counts.shape[0]
    at = np.zeros(n_docs, dtype=np.int64)
    ends = np.zeros(n_docs, dtype=np.int64)
    total = 0
    for x in range(n_docs):
        at[x] = total
        total += counts[x]
        ends[x] = total
    best_terms = np.zeros(max(fb_terms, 0), dtype=np.int64)
    best = np.zeros(max(fb_terms, 0), dtype=np.float64)
    held = 0
    while True:
        term = np.iinfo(np.int64).max
        for x in range(n_docs):
            while at[x] < ends[x] and not keep[at[x]]:
                at[x] += 1
            if at[x] < ends[x] and terms[at[x]] < term:
                term = terms[at[x]]
        if term == np.iinfo(np.int64).max:
            break
        rm1 = 0.0
        for x in range(n_docs):
            if at[x] < ends[x] and terms[at[x]] == term:
                rm1 += np.float64(tfs[at[x]]) * per_doc[x]
                at[x] += 1
        # Into the best ``fb_terms``, most likely first; an equal weight stays behind (its
        # term id is larger: terms arrive ascending).
        if held == fb_terms and (fb_terms == 0 or not rm1 > best[held - 1]):
            continue
        slot = held if held < fb_terms else held - 1
        while slot > 0 and rm1 > best[slot - 1]:
            best[slot] = best[slot - 1]
            best_terms[slot] = best_terms[slot - 1]
            slot -= 1
        best[slot] = rm1
        best_terms[slot] = term
        if held < fb_terms:
            held += 1
    return best_terms[:held], best[:held]
