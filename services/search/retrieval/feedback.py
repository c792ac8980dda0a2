"""RM3 pseudo-relevance feedback (Abdul-Jaleel et al., TREC 2004): one compiled (numba) pass
over the feedback documents' entries, ``_expansion``.

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


def rm3_expansion(
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
) -> tuple[np.ndarray, np.ndarray]:
    """The expanded query (the original terms included): its term ids ascending and their
    weights. ``fb_forward``: the feedback documents' forward index entries
    (``SegmentIndex.forward``: the number of each document's entries, then their term ids and
    title + body + meta frequencies, concatenated in ``fb_docs``' order); ``df`` (document
    frequency by term id) with ``max_df`` < 1 leaves common terms out of the expansion.

    Every sum is taken in order, one term at a time (the feedback documents' scores, the
    kept terms' weights), so that the compiled pass and the tests' reference agree to the
    bit; the relevance model, the mixing and the cap are one compiled call (``_expansion``):
    in numpy and Python they cost ~50 µs a feedback query in place."""
    q_terms = np.fromiter(query.keys(), dtype=np.int64, count=len(query))
    q_weights = np.fromiter(query.values(), dtype=np.float64, count=len(query))
    if fb_docs.shape[0] == 0 or fb_terms <= 0 or not float(sum(query.values())) > 0:
        return _ascending(q_terms, q_weights)
    counts, doc_terms, doc_tfs = fb_forward
    terms = np.asarray(doc_terms, dtype=np.int64)
    keep_terms = _EVERY_TERM
    if df is not None and max_df < 1.0:
        num_docs = max(int(doc_lengths.shape[0]), 1)
        common = df[terms].astype(np.float64) > max_df * num_docs
        keep_terms = ~common | np.isin(terms, q_terms)
        if not keep_terms.any():
            return _ascending(q_terms, q_weights)
    expanded: tuple[np.ndarray, np.ndarray] = _expansion(
        q_terms,
        q_weights,
        np.asarray(fb_scores, dtype=np.float64),
        np.asarray(doc_lengths[fb_docs], dtype=np.float64),
        np.asarray(counts, dtype=np.int64),
        terms,
        np.asarray(doc_tfs, dtype=np.int64),
        keep_terms,
        int(fb_terms),
        float(original_weight),
        bool(cap_to_query),
    )
    return expanded


# ``_expansion``'s ``keep`` when every term is a candidate (no entry-sized mask built per query).
_EVERY_TERM = np.zeros(0, dtype=np.bool_)


def _ascending(terms: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    order = np.argsort(terms, kind="stable")
    return terms[order], weights[order]


def warm_up() -> None:
    """Compile the expansion (or load it from numba's cache) before a feedback query."""
    one = np.ones(1, np.int64)
    rm3_expansion(
        {0: 1.0}, np.zeros(1, np.int64), np.ones(1), (one, one, one), np.ones(2, np.uint32), 10, 0.5
    )


@compiled_on_first_use
def _expansion(q_terms, q_weights, scores, lengths, counts, terms, tfs, keep, fb_terms, original_weight, cap):
    """RM3 over the feedback documents' entries (each document's run ascending by term): p(d)
    from the scores (uniform when none is positive) over the document's length, RM1 with its
    ``fb_terms`` most likely terms (ties by term id), mixed with the query and scaled to its
    length, expansion terms capped at the lightest query word when ``cap``. ``keep``: the
    entries that are candidates (empty: all). The runs are merged (no sort): a term's weights
    are added in document order from 0.0."""
    n_docs = counts.shape[0]
    qlen = 0.0
    for i in range(q_weights.shape[0]):
        qlen += q_weights[i]
    mass = 0.0
    for x in range(n_docs):
        mass += max(scores[x], 0.0)
    per_doc = np.empty(n_docs, dtype=np.float64)
    for x in range(n_docs):
        p = max(scores[x], 0.0) / mass if mass > 0.0 else 1.0 / n_docs
        per_doc[x] = p / max(lengths[x], 1.0)
    filtering = keep.shape[0] > 0
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
            while at[x] < ends[x] and filtering and not keep[at[x]]:
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
    kept_mass = 0.0
    for r in range(held):
        kept_mass += best[r]
    # The query's terms at ``original_weight``, the model's added at the rest.
    n_query = q_terms.shape[0]
    ids = np.empty(n_query + held, dtype=np.int64)
    weight = np.empty(n_query + held, dtype=np.float64)
    for i in range(n_query):
        ids[i] = q_terms[i]
        weight[i] = original_weight * q_weights[i] / qlen
    size = n_query
    if kept_mass > 0.0:
        for r in range(held):
            add = (1.0 - original_weight) * (best[r] / kept_mass)
            found = -1
            for i in range(n_query):
                if ids[i] == best_terms[r]:
                    found = i
            if found >= 0:
                weight[found] = weight[found] + add
            else:
                ids[size] = best_terms[r]
                weight[size] = add
                size += 1
    floor = np.inf  # the lightest word the user typed (0.0 where its weight is none)
    for i in range(n_query):
        floor = min(floor, weight[i] * qlen if weight[i] > 0.0 else 0.0)
    out_ids = np.empty(size, dtype=np.int64)
    out = np.empty(size, dtype=np.float64)
    n_out = 0
    for i in range(size):
        if not weight[i] > 0.0:
            continue
        w = weight[i] * qlen
        if cap and i >= n_query and n_query > 0:
            w = min(w, floor)
        out_ids[n_out] = ids[i]
        out[n_out] = w
        n_out += 1
    order = np.argsort(out_ids[:n_out], kind="mergesort")
    return out_ids[:n_out][order], out[:n_out][order]
