"""Many terms looked up at once in a segment's byte-sorted dictionary (``term_bytes``,
``term_offsets``), memory-mapped: what a delta segment's build asks of the segments before
it (each of its terms' document frequency there: ``services.indexing.delta_stats``).

The search service looks up a query's few terms one by one; a delta holds tens of thousands,
and a dictionary of millions is not decoded whole for them: every ``SAMPLE``-th term is read
(a C ``bisect`` then finds each term's block), and only the blocks some term falls in.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

import numpy as np

SAMPLE = 64  # terms per block: 1/64 of the dictionary is read to find the blocks


def term_ids(term_bytes: np.ndarray, term_offsets: np.ndarray, keys: Sequence[bytes]) -> np.ndarray:
    """Each of ``keys``' term id in the dictionary (int64; -1: not in it), in ``keys``' order."""
    found = np.full(len(keys), -1, dtype=np.int64)
    terms = int(term_offsets.shape[0]) - 1
    if terms <= 0 or not keys:
        return found
    starts = term_offsets[:-1][::SAMPLE].tolist()
    ends = term_offsets[1:][::SAMPLE].tolist()
    sample = [term_bytes[a:b].tobytes() for a, b in zip(starts, ends, strict=True)]
    by_block: dict[int, list[int]] = {}
    for i, key in enumerate(keys):
        block = bisect.bisect_right(sample, key) - 1
        if block >= 0:
            by_block.setdefault(block, []).append(i)
    for block, which in by_block.items():
        first = block * SAMPLE
        offsets = term_offsets[first : min(first + SAMPLE, terms) + 1].tolist()
        base = offsets[0]
        text = term_bytes[base : offsets[-1]].tobytes()
        ids = {text[offsets[j] - base : offsets[j + 1] - base]: first + j for j in range(len(offsets) - 1)}
        for i in which:
            found[i] = ids.get(keys[i], -1)
    return found
