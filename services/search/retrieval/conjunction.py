"""The AND top-k: documents holding every term, counted and ranked in one compiled pass (numba).

``rank.conjunctive`` intersects in numpy (a binary search per candidate and list, or a
table per list when the candidates are many), then the caller filters the matches, scores
them with their priors and picks the best: about twenty numpy calls and their arrays, most
of an AND query's time at this engine's sizes. Here the shortest list leads and the others
follow with galloping cursors (Lucene's ``ConjunctionDISI``; candidates ascend, so each
cursor only moves forward; a segment's list skips whole blocks by their first documents
before it gallops, ``services.storage.formats.doc_blocks``), and each match is filtered,
scored and offered to a heap of the best ``k`` as it is found. Every match is met, so the
count is exact, as the numpy path counts it.

Exactness: a match's text score is the sum over terms, in query order, of
``impact * weight`` in float64 from 0.0, and its final score ``text * (1 + prior)``: the
operations of ``rank.conjunctive`` and ``rank.combine``, so both give bit-identical scores;
ties go to the lower document number, as ``rank.top_k`` orders them (a test compares the
two on random queries).

The cursor and heap helpers repeat ``blockmax``'s as closures: numba inlines a closure for
free, where a module-level helper taking the arrays costs about 30 ns a call, more than the
read it wraps (docs/performance-notes.md).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numba import njit

from services.compiled import compiled_on_first_use
from services.ranking.impact_levels import LEVEL_DTYPE, dequantize
from services.search.retrieval.posting_layout import Docs, Impacts, PostingSource, lay_out, source_of

SENTINEL = np.iinfo(np.int64).max  # past every document number


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
    lay = lay_out(source, [(term, docs, impacts) for _, term, docs, impacts in lists], blocks=False)
    weights = np.array([w for w, _, _, _ in lists], dtype=np.float64)
    lead = np.argsort(lay.length, kind="stable")  # the shortest list first
    docs, final, text, count = _top_k_and(
        lay.base_doc_base,
        lay.base_doc_bits,
        lay.base_doc_start,
        lay.base_doc_words,
        lay.base_levels,
        lay.own_docs,
        lay.own_impacts,
        lay.src,
        lay.start,
        lay.length,
        lay.block_start,
        lay.scale,
        weights,
        lead.astype(np.int64),
        np.asarray(prior, dtype=np.float64),
        int(k),
        np.zeros(0, np.uint32) if excluded is None else np.asarray(excluded, dtype=np.uint32),
        np.zeros(0, np.bool_) if allowed is None else np.asarray(allowed, dtype=np.bool_),
    )
    order = np.lexsort((docs, -final))
    return docs[order].astype(np.uint32), final[order], text[order], int(count)


def warm_up() -> None:
    """Compile the kernel (or load it from numba's cache) now, not in the first query, for the
    types queries pass: a segment's lists read-only (memory maps), the query's own writable."""
    docs = np.array([1, 3], np.uint32)
    levels = np.array([1, 2], LEVEL_DTYPE)
    scale = np.ones(1, np.float32)
    source = source_of(docs, levels, scale, np.array([0, 2], np.int64))
    impacts = dequantize(levels, 1.0)
    top_k_and(source, [(1.0, 0, docs, impacts), (1.0, None, docs, impacts)], np.zeros(4), 1)


@compiled_on_first_use
def _top_k_and(
    db,
    dbits,
    dstart,
    dwords,
    bi,
    od,
    oi,
    src,
    start,
    length,
    bstart,
    scale,
    weights,
    lead,
    prior,
    k,
    excluded,
    allowed,
):
    m = weights.shape[0]
    size = 0
    count = 0
    heap_doc = np.zeros(max(k, 1), dtype=np.int64)
    heap_final = np.zeros(max(k, 1), dtype=np.float64)
    heap_text = np.zeros(max(k, 1), dtype=np.float64)
    if m == 0:
        return heap_doc[:0], heap_final[:0], heap_text[:0], 0
    pos = np.zeros(m, dtype=np.int64)
    cur = np.zeros(m, dtype=np.int64)  # the document at pos (SENTINEL: past the end)
    at = np.zeros(m, dtype=np.int64)  # where each list holds the current match

    held_block = np.full(m, -1, dtype=np.int64)  # per list: the block doc_at last read
    held_width = np.zeros(m, dtype=np.int64)
    held_first = np.zeros(m, dtype=np.int64)
    held_bit = np.zeros(m, dtype=np.int64)

    def doc_at(j, p):
        if src[j] == 0:  # its block's first document plus its offset (window_top_k's base_doc)
            b = p >> 7
            if b != held_block[j]:
                block = bstart[j] + b
                held_block[j] = b
                held_width[j] = np.int64(dbits[block])
                held_first[j] = np.int64(db[block])
                held_bit[j] = dstart[block] * 32
            width = held_width[j]
            bit = held_bit[j] + (p & 127) * width
            at = bit >> 5
            window = (np.int64(dwords[at]) | (np.int64(dwords[at + 1]) << 32)) >> (bit & 31)
            return held_first[j] + (window & ((np.int64(1) << width) - 1))
        return np.int64(od[start[j] + p])

    def impact_at(j, p):
        if src[j] == 0:
            return np.float64(np.float32(bi[start[j] + p]) * scale[j])
        return np.float64(oi[start[j] + p])

    def seek(j, target):
        """Move list ``j`` (``cur[j] < target``) to its first posting at or after ``target``:
        a segment list's blocks skipped by their first documents (read as stored), then
        galloping and binary search within; ``cur[j]`` its document (``SENTINEL`` past the end)."""
        n = length[j]
        p = pos[j]
        end = n
        if src[j] == 0:
            blocks = (n + 127) // 128
            b0 = bstart[j]
            here = p // 128
            if here + 1 >= blocks or np.int64(db[b0 + here + 1]) > target:
                # Held, if at all, in this block from p on: its postings read in turn (a few
                # shifts each, every posting once however many seeks), as a merge of decoded
                # blocks does, not galloped and searched (each probe a random read).
                b = b0 + here
                width = np.int64(dbits[b])
                first_doc = np.int64(db[b])
                bit = dstart[b] * 32 + (p % 128) * width
                stop = min(n, here * 128 + 128)
                while p < stop:
                    word = bit >> 5
                    window = (np.int64(dwords[word]) | (np.int64(dwords[word + 1]) << 32)) >> (bit & 31)
                    d = first_doc + (window & ((np.int64(1) << width) - 1))
                    if d >= target:
                        pos[j] = p
                        cur[j] = d
                        return
                    p += 1
                    bit += width
                pos[j] = p  # past the block: the next one's first document, above target
                cur[j] = np.int64(db[b0 + here + 1]) if p < n else SENTINEL
                return
            lo = here  # its first document is below target
            step = 1
            hi = lo + 1
            while hi < blocks and np.int64(db[b0 + hi]) < target:
                lo = hi
                step *= 2
                hi = lo + step
            if hi > blocks:
                hi = blocks
            while lo + 1 < hi:
                mid = (lo + hi) // 2
                if np.int64(db[b0 + mid]) < target:
                    lo = mid
                else:
                    hi = mid
            p = max(p, lo * 128)  # in block lo, or the next block's first
            end = min(n, lo * 128 + 128)
        lo = p  # doc(lo) < target
        step = 1
        hi = p + 1
        found = SENTINEL  # doc(hi), once read
        while hi < end:
            d = doc_at(j, hi)
            if d >= target:
                found = d
                break
            lo = hi
            step *= 2
            hi = lo + step
        if hi >= end:
            hi = end
        while lo + 1 < hi:
            mid = (lo + hi) // 2
            d = doc_at(j, mid)
            if d < target:
                lo = mid
            else:
                hi = mid
                found = d
        pos[j] = hi
        if found == SENTINEL and hi < n:  # the block's end: the next block's first document
            found = doc_at(j, hi)
        cur[j] = found

    def worse(a, b):
        return heap_final[a] < heap_final[b] or (heap_final[a] == heap_final[b] and heap_doc[a] > heap_doc[b])

    def sift_down(i):
        while True:
            low = i
            left = 2 * i + 1
            if left < k and worse(left, low):
                low = left
            if left + 1 < k and worse(left + 1, low):
                low = left + 1
            if low == i:
                return
            heap_doc[i], heap_doc[low] = heap_doc[low], heap_doc[i]
            heap_final[i], heap_final[low] = heap_final[low], heap_final[i]
            heap_text[i], heap_text[low] = heap_text[low], heap_text[i]
            i = low

    for j in range(m):
        cur[j] = doc_at(j, 0) if length[j] > 0 else SENTINEL
    n_excluded = excluded.shape[0]
    at_excluded = 0
    use_allowed = allowed.shape[0] > 0
    first = lead[0]
    width = np.int64(0)
    first_doc = np.int64(0)
    bit = np.int64(0)
    for p0 in range(length[first]):
        if src[first] == 0:  # the leading list read in turn: a block's width and bit once
            if p0 % 128 == 0:
                b = bstart[first] + p0 // 128
                width = np.int64(dbits[b])
                first_doc = np.int64(db[b])
                bit = dstart[b] * 32
            word = bit >> 5
            window = (np.int64(dwords[word]) | (np.int64(dwords[word + 1]) << 32)) >> (bit & 31)
            d = first_doc + (window & ((np.int64(1) << width) - 1))
            bit += width
        else:
            d = np.int64(od[start[first] + p0])
        at[first] = p0
        held = True
        for r in range(1, m):
            j = lead[r]
            if cur[j] < d:
                seek(j, d)
            if cur[j] == SENTINEL:
                return _best(heap_doc, heap_final, heap_text, size, count)
            if cur[j] != d:
                held = False
                break
            at[j] = pos[j]
        if not held:
            continue
        while at_excluded < n_excluded and np.int64(excluded[at_excluded]) < d:
            at_excluded += 1
        if at_excluded < n_excluded and np.int64(excluded[at_excluded]) == d:
            continue
        if use_allowed and not allowed[d]:
            continue
        count += 1
        if k <= 0:
            continue
        text = 0.0
        for j in range(m):  # query order, as rank.conjunctive adds them
            text += impact_at(j, at[j]) * weights[j]
        final = text * (1.0 + prior[d])
        if size < k:
            heap_doc[size], heap_final[size], heap_text[size] = d, final, text
            size += 1
            if size == k:
                for i in range(k // 2 - 1, -1, -1):
                    sift_down(i)
        elif final > heap_final[0]:  # documents ascend: an equal score comes later, and loses
            heap_doc[0], heap_final[0], heap_text[0] = d, final, text
            sift_down(0)
    return _best(heap_doc, heap_final, heap_text, size, count)


@njit(cache=True, nogil=True)
def _best(heap_doc, heap_final, heap_text, size, count):
    return heap_doc[:size], heap_final[:size], heap_text[:size], count
