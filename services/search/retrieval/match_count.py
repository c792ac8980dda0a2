"""The count of an OR query's matches where its top-k pruned (``blockmax`` calls it after
``blockmax_kernels.window_top_k``): every document of the lists that bring candidates, once,
compiled (numba) as the top-k is, reading a segment's lists in place through their blocks
(``services.storage.formats.doc_blocks``)."""

from __future__ import annotations

import numpy as np

from services.compiled import compiled_on_first_use


@compiled_on_first_use
def lead_count(
    db, dbits, dstart, dwords, od, src, start, length, bstart, lead, num_docs, excluded, allowed, stop_at
):
    """Documents holding any of the ``lead`` lists, not ``excluded``, ``allowed`` (when given):
    a byte per document marks those met; ``allowed`` is read only where a list leads (a pass
    over every document's flag cost more than the lists of most queries). Counting stops
    once it reaches ``stop_at`` (> 0): the result is then ``stop_at``, a lower bound."""
    seen = np.zeros(num_docs, dtype=np.uint8)
    for x in range(excluded.shape[0]):
        seen[excluded[x]] = 1
    use_allowed = allowed.shape[0] > 0
    total = np.int64(0)
    # Without a branch on whether a document was met (half the postings of overlapping lists
    # go each way: a branch the CPU mispredicts); whether counting reached ``stop_at`` is asked
    # once a block, the count clamped to it.
    for j in range(src.shape[0]):
        if not lead[j]:
            continue
        a = start[j]
        if src[j] == 0:
            width = np.int64(0)
            first_doc = np.int64(0)
            bit = np.int64(0)
            for p in range(length[j]):
                if p % 128 == 0:  # a block's width, first document and bit, once
                    if 0 < stop_at <= total:
                        return stop_at
                    b = bstart[j] + p // 128
                    width = np.int64(dbits[b])
                    first_doc = np.int64(db[b])
                    bit = dstart[b] * 32
                at = bit >> 5
                window = (np.int64(dwords[at]) | (np.int64(dwords[at + 1]) << 32)) >> (bit & 31)
                d = first_doc + (window & ((np.int64(1) << width) - 1))
                bit += width
                met = np.int64(1) - np.int64(seen[d])
                seen[d] = 1
                if use_allowed:
                    met &= np.int64(allowed[d])
                total += met
        else:
            for p in range(a, a + length[j]):
                if (p - a) % 128 == 0 and 0 < stop_at <= total:
                    return stop_at
                d = np.int64(od[p])
                met = np.int64(1) - np.int64(seen[d])
                seen[d] = 1
                if use_allowed:
                    met &= np.int64(allowed[d])
                total += met
    if 0 < stop_at <= total:
        return stop_at
    return total
