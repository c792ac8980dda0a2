"""Random posting lists for the top-k kernels' tests: hostile lengths, ties and zeros."""

from __future__ import annotations

import numpy as np

from services.ranking.impact_levels import LEVEL_DTYPE, LEVELS, dequantize
from services.search.retrieval.posting_layout import BLOCK, PostingSource, source_of
from services.search.retrieval.rank import QueryTerm


def random_source(
    rng: np.random.Generator, num_docs: int, num_terms: int, ties: bool, zeros: bool = False
) -> PostingSource:
    """A segment's worth of posting lists: lengths from one posting to most documents, some
    longer than many blocks; impact levels on a coarse grid when ``ties`` (equal scores
    abound), each term with a step of its own; with ``zeros``, a fifth of the impacts 0 and
    some lists all 0 (a window whose bound is 0 still holds matches)."""
    docs, levels, offsets = [], [], [0]
    for _ in range(num_terms):
        n = int(rng.choice([1, 3, 40, BLOCK, BLOCK + 1, 700, num_docs // 2, num_docs]))
        held = np.sort(rng.choice(num_docs, size=min(n, num_docs), replace=False)).astype(np.uint32)
        values = (
            rng.integers(1, 6, held.shape[0]) * 40 if ties else rng.integers(1, LEVELS + 1, held.shape[0])
        )
        if zeros:
            values = np.where(rng.random(held.shape[0]) < (0.2 if rng.random() < 0.7 else 1.0), 0, values)
        docs.append(held)
        levels.append(values.astype(LEVEL_DTYPE))
        offsets.append(offsets[-1] + held.shape[0])
    all_levels = np.concatenate(levels)
    scale = (rng.gamma(2.0, 1.5, num_terms) / 100).astype(np.float32)
    # As a segment's open presents them (documents in blocks, read-only): the kernels' one signature.
    return source_of(np.concatenate(docs), all_levels, scale, np.array(offsets, np.int64))


def terms_of(rng: np.random.Generator, source: PostingSource, count: int) -> list[QueryTerm]:
    """``count`` query terms: most read in place from ``source`` (levels and a step), some
    built by the query (float32 impacts)."""
    out = []
    for t in rng.choice(source.offsets.shape[0] - 1, size=count, replace=False):
        a, b = int(source.offsets[t]), int(source.offsets[t + 1])
        docs, levels, step = source.docs_of(int(t)), source.levels[a:b], float(source.scale[t])
        impacts = dequantize(levels, step)
        weight = float(rng.choice([1.0, 2.0, 0.37, 0.05]))
        if rng.random() < 0.3:
            out.append(QueryTerm(weight, docs.copy(), impacts, float(impacts.max())))
        else:
            out.append(QueryTerm(weight, docs, levels, float(impacts.max()), int(t), step))
    return out
