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

Lists of like lengths (the followers together at most ``DENSE`` postings per lead posting
and follower: two common words) are read a window of ``WINDOW`` documents at a time instead:
each follower's postings there in turn, counted per document with where it holds it, then
the lead's documents that every follower held. A seek costs tens of nanoseconds (a branch
the CPU cannot guess, and random reads of bit-packed blocks), a posting read in turn a few:
on the benchmark's slowest AND queries 0.43-0.64 -> 0.25-0.51 ms
(docs/performance-notes.md). Sparse followers keep the seeks, which skip what the lead
never reaches.

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
# Followers holding at most this many postings per lead posting (all of them together, per
# follower) are read whole, a window of WINDOW documents at a time (a read in turn costs a few
# ns a posting, a seek tens), when they hold at least DENSE_FROM postings (below, the
# window's tables cost more than the seeks).
DENSE = 4
DENSE_FROM = 4096
WINDOW = 4096


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
        within a segment list's current block (the next block starts after ``target``) its
        postings read in turn; else blocks skipped by their first documents (read as stored),
        then galloping and binary search within one; ``cur[j]`` its document (``SENTINEL``
        past the end)."""
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

    n_excluded = excluded.shape[0]
    use_allowed = allowed.shape[0] > 0
    tally = np.zeros(3, dtype=np.int64)  # the heap's size, the matches counted, the next excluded

    def take(d):
        """Match ``d`` (``at``: where each list holds it), in ascending order: left out when
        excluded or not allowed, else counted, scored and offered to the heap of the best k."""
        e = tally[2]
        while e < n_excluded and np.int64(excluded[e]) < d:
            e += 1
        tally[2] = e
        if e < n_excluded and np.int64(excluded[e]) == d:
            return
        if use_allowed and not allowed[d]:
            return
        tally[1] += 1
        if k <= 0:
            return
        text = 0.0
        for j in range(m):  # query order, as rank.conjunctive adds them
            text += impact_at(j, at[j]) * weights[j]
        final = text * (1.0 + prior[d])
        size = tally[0]
        if size < k:
            heap_doc[size], heap_final[size], heap_text[size] = d, final, text
            tally[0] = size + 1
            if size + 1 == k:
                for i in range(k // 2 - 1, -1, -1):
                    sift_down(i)
        elif final > heap_final[0]:  # documents ascend: an equal score comes later, and loses
            heap_doc[0], heap_final[0], heap_text[0] = d, final, text
            sift_down(0)

    for j in range(m):
        cur[j] = doc_at(j, 0) if length[j] > 0 else SENTINEL
    first = lead[0]
    followers = 0
    for r in range(1, m):
        followers += length[lead[r]]
    # (At most 255 followers: a document's count is one byte.)
    if 1 < m <= 256 and DENSE_FROM <= followers <= DENSE * (m - 1) * length[first]:
        # Lists of like lengths: a window of documents at a time, each follower's postings in
        # it read in turn into a count per document (no branch on whether the lead holds it),
        # then the lead's documents that every follower held taken in order.
        held = np.zeros(WINDOW, dtype=np.uint8)
        held_at = np.zeros(WINDOW * m, dtype=np.int64)
        p0 = 0
        n0 = length[first]
        while p0 < n0:
            lo = doc_at(first, p0)
            hi = lo + WINDOW
            held[:] = 0
            for r in range(1, m):
                j = lead[r]
                if cur[j] < lo:
                    seek(j, lo)
                p = pos[j]
                n = length[j]
                while p < n:
                    d = doc_at(j, p)
                    if d >= hi:
                        break
                    held[d - lo] += 1
                    held_at[(d - lo) * m + j] = p
                    p += 1
                pos[j] = p
                cur[j] = doc_at(j, p) if p < n else SENTINEL
            while p0 < n0:
                d = doc_at(first, p0)
                if d >= hi:
                    break
                if held[d - lo] == m - 1:
                    at[first] = p0
                    for r in range(1, m):
                        at[lead[r]] = held_at[(d - lo) * m + lead[r]]
                    take(d)
                p0 += 1
            for r in range(1, m):
                if cur[lead[r]] == SENTINEL:  # a list ended: no later document holds them all
                    return _best(heap_doc, heap_final, heap_text, tally[0], tally[1])
        return _best(heap_doc, heap_final, heap_text, tally[0], tally[1])
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
        matched = True
        for r in range(1, m):
            j = lead[r]
            if cur[j] < d:
                seek(j, d)
            if cur[j] == SENTINEL:
                return _best(heap_doc, heap_final, heap_text, tally[0], tally[1])
            if cur[j] != d:
                matched = False
                break
            at[j] = pos[j]
        if matched:
            take(d)
    return _best(heap_doc, heap_final, heap_text, tally[0], tally[1])


@njit(cache=True, nogil=True)
def _best(heap_doc, heap_final, heap_text, size, count):
    return heap_doc[:size], heap_final[:size], heap_text[:size], count
