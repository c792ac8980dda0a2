"""The AND top-k's entries: the lists a query holds, by term id or built by the query, handed
to the compiled kernel (``conjunction_kernel``, where the algorithm is described), which
returns the best ``k`` documents best first and how many hold every list."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from services.ranking.impact_levels import LEVEL_DTYPE, dequantize
from services.search.retrieval.conjunction_kernel import and_top_k
from services.search.retrieval.posting_layout import (
    NO_DOCS,
    NO_IMPACTS,
    NO_SOURCE,
    Docs,
    Impacts,
    PostingSource,
    lay_out,
    left_out,
    source_of,
)


def top_k_and(
    source: PostingSource | None,
    lists: Sequence[tuple[float, int | None, Docs, Impacts]],
    prior: np.ndarray,
    k: int,
    excluded: np.ndarray | None = None,
    allowed: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """(the best ``k`` documents holding every list, best first; their final and text scores;
    how many documents hold them all). Per list: its weight, its term id in ``source`` or
    None, its documents ascending, their impacts (``posting_layout.lay_out``). ``excluded``
    (ascending) and documents not ``allowed`` are neither ranked nor counted."""
    if source is not None and all(term is not None for _, term, _, _ in lists):
        terms = [term for _, term, _, _ in lists if term is not None]
        return top_k_and_in_place(source, terms, [w for w, _, _, _ in lists], prior, k, excluded, allowed)
    lay = lay_out(source, [(term, docs, impacts) for _, term, docs, impacts in lists], blocks=False)
    ids = [term if term is not None and source is not None else -1 for _, term, _, _ in lists]
    return _and(
        source,
        ids,
        [w for w, _, _, _ in lists],
        lay.own_docs,
        lay.own_impacts,
        lay.start,
        lay.length,
        prior,
        k,
        excluded,
        allowed,
    )


def top_k_and_in_place(
    source: PostingSource,
    terms: Sequence[int],
    weights: Sequence[float],
    prior: np.ndarray,
    k: int,
    excluded: np.ndarray | None = None,
    allowed: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """``top_k_and`` of the segment's own lists, by term id, each weighted: nothing for the
    query to build or lay out (the words of most queries on one segment)."""
    ids = np.array(terms, dtype=np.int64)
    return _and(source, ids, weights, NO_DOCS, NO_IMPACTS, ids, ids, prior, k, excluded, allowed)


def _and(
    source: PostingSource | None,
    terms: Sequence[int] | np.ndarray,
    weights: Sequence[float],
    own_docs: np.ndarray,
    own_impacts: np.ndarray,
    own_start: np.ndarray,
    own_length: np.ndarray,
    prior: np.ndarray,
    k: int,
    excluded: np.ndarray | None,
    allowed: np.ndarray | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """The kernel's call. It finds the segment's lists by their term ids (-1: the query's own,
    at ``own_start``), orders them and sorts the best itself: laying the lists out, ordering
    and sorting in numpy took as long as the kernel on a typical query (about 10 µs of numpy
    calls against 11 µs of intersection)."""
    base = source if source is not None else NO_SOURCE
    docs, final, text, count = and_top_k(
        base.doc_base,
        base.doc_bits,
        base.doc_start,
        base.doc_words,
        base.levels,
        base.offsets,
        base.block_first,
        base.scale,
        own_docs,
        own_impacts,
        own_start,
        own_length,
        np.asarray(terms, dtype=np.int64),
        np.array(weights, dtype=np.float64),
        np.asarray(prior, dtype=np.float64),
        int(k),
        *left_out(excluded, allowed),
    )
    return docs, final, text, int(count)


def warm_up() -> None:
    """Compile the kernel (or load it from numba's cache) now, not in the first query, for the
    types queries pass: a segment's lists read-only (memory maps), the query's own writable."""
    docs = np.array([1, 3], np.uint32)
    levels = np.array([1, 2], LEVEL_DTYPE)
    scale = np.ones(1, np.float32)
    source = source_of(docs, levels, scale, np.array([0, 2], np.int64))
    impacts = dequantize(levels, 1.0)
    top_k_and(source, [(1.0, 0, docs, impacts), (1.0, None, docs, impacts)], np.zeros(4), 1)
