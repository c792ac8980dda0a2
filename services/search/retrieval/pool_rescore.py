"""A second phase over a first pass's hits: a feedback query's condensed list (Diaz's: the
first pass's best documents) ranked again by the expanded query, whose terms' impacts in
those documents were looked up in place (``SegmentIndex.term_impacts``), as Lucene's
``QueryRescorer`` advances the second query to each hit.

One compiled (numba) pass sums each document's impacts and scores it: in numpy the same
took a dozen calls (a product, a running sum down the rows, a mask, gathers, a partition and
a sort), ~50 µs a feedback query where a query's earlier kernels have just evicted numpy's
working set from the caches (docs/benchmarks.md, "Issue 31: the feedback steps compiled").
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from services.compiled import compiled_on_first_use
from services.search.retrieval.rank import DOC, Ranked


def rescore(
    docs: np.ndarray,
    weights: Sequence[float] | np.ndarray,
    held: np.ndarray,
    impacts: np.ndarray,
    prior: np.ndarray,
    k: int,
    total: int,
) -> Ranked:
    """The ``k`` best of ``docs`` (ascending) for a query whose term ``j`` weighs
    ``weights[j]`` and has ``impacts[j]`` in them where ``held[j]`` (one row per term, in
    query order). A document holding none of the terms is no match. Scores are summed term
    by term in query order from 0.0, as ``rank.text_scores`` and the kernels sum them (the
    same floats); the order is ``rank.top_k``'s (score descending, then document)."""
    if not held.shape[0] or not docs.shape[0] or k <= 0:
        return Ranked(np.zeros(0, DOC), np.zeros(0), np.zeros(0), total)
    matched, final, text = _pool_scores(
        np.asarray(docs, dtype=DOC),
        np.asarray(weights, dtype=np.float64),
        np.asarray(held, dtype=np.bool_),
        np.asarray(impacts, dtype=np.float32),
        np.asarray(prior, dtype=np.float64),
    )
    order = np.lexsort((matched, -final))[:k]
    return Ranked(matched[order], final[order], text[order], total)


def warm_up() -> None:
    """Compile the pool's scoring (or load it from numba's cache) before a feedback query,
    for the arrays a query passes (all its own: writable)."""
    one = np.ones((1, 1), np.bool_)
    _pool_scores(np.zeros(1, DOC), np.ones(1), one, np.ones((1, 1), np.float32), np.zeros(1))


@compiled_on_first_use
def _pool_scores(docs, weights, held, impacts, prior):
    """(the documents holding a term, their final and text scores): a document's text score
    is ``float64(impact) * weight`` added from 0.0 over the terms it holds, in row order;
    its final ``text * (1 + prior)`` (``rank.combine``)."""
    m = held.shape[0]
    n = docs.shape[0]
    out_docs = np.empty(n, dtype=docs.dtype)
    final = np.empty(n, dtype=np.float64)
    text = np.empty(n, dtype=np.float64)
    kept = 0
    for x in range(n):
        score = 0.0
        matched = False
        for j in range(m):
            if held[j, x]:
                score += np.float64(impacts[j, x]) * weights[j]
                matched = True
        if matched:
            out_docs[kept] = docs[x]
            text[kept] = score
            final[kept] = score * (1.0 + prior[np.int64(docs[x])])
            kept += 1
    return out_docs[:kept], final[:kept], text[:kept]
