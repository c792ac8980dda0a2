"""The compiled (numba) kernel of the AND top-k: documents holding every term, counted and
ranked in one pass (``conjunction`` calls it).

``rank.conjunctive`` intersects in numpy (a binary search per candidate and list, or a
table per list when the candidates are many), then the caller filters the matches, scores
them with their priors and picks the best: about twenty numpy calls and their arrays, most
of an AND query's time at this engine's sizes. Here the lists are intersected a window of
``WINDOW`` documents at a time, shortest list first, each list narrowing the candidates the
shorter ones left (small-versus-small, Culpepper & Moffat 2010; the order of Lucene's
``ConjunctionDISI``): the window's candidates are the leading list's documents there that
are not excluded or hidden (folded near-duplicates never reach the other lists), then each
following list either seeks each candidate (a galloping cursor that skips whole blocks by
their first documents, ``services.storage.formats.doc_blocks``) when the candidates are few
against its postings there, or has its postings there read in turn into a table of the
window's documents that each candidate then looks up (no branch on whether it holds it).
A seek costs tens of nanoseconds (branches the CPU cannot guess, random reads of bit-packed
blocks), a posting read in turn a few: ``SEEK_COST`` weighs the two. Three and four common
words with few documents in common no longer read the longer lists whole (docs/benchmarks.md,
"Issue 31: AND narrowed list by list"). Every match is met, so the count is exact, as the
numpy path counts it.

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

import numpy as np
from numba import njit

from services.compiled import compiled_on_first_use

SENTINEL = np.iinfo(np.int64).max  # past every document number
WINDOW = 4096  # documents intersected at a time: the window's tables stay in the L1/L2 caches
# A following list seeks each of the window's candidates when the candidates, times this, are
# fewer than its postings expected there (its share of the documents): a seek costs about as
# much as this many postings read in turn.
SEEK_COST = 16


@compiled_on_first_use
def and_top_k(
    db,
    dbits,
    dstart,
    dwords,
    bi,
    offsets,
    block_first,
    term_scale,
    od,
    oi,
    own_start,
    own_length,
    terms,
    weights,
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
        return _best(heap_doc, heap_final, heap_text, 0, 0)
    # Where each list lies: a segment's (``terms[j] >= 0``) found by its term id, the query's
    # own at ``own_start[j]`` in ``od``/``oi`` (``posting_layout.ListLayout``'s fields).
    src = np.zeros(m, dtype=np.int64)
    start = np.zeros(m, dtype=np.int64)
    length = np.zeros(m, dtype=np.int64)
    bstart = np.zeros(m, dtype=np.int64)
    scale = np.ones(m, dtype=np.float32)
    for j in range(m):
        t = terms[j]
        if t >= 0:
            start[j] = offsets[t]
            length[j] = offsets[t + 1] - offsets[t]
            bstart[j] = block_first[t]
            scale[j] = term_scale[t]
        else:
            src[j] = 1
            start[j] = own_start[j]
            length[j] = own_length[j]
    lead = np.zeros(m, dtype=np.int64)  # the lists by length, shortest first (ties: query order)
    for j in range(m):
        at = j
        while at > 0 and length[lead[at - 1]] > length[j]:
            lead[at] = lead[at - 1]
            at -= 1
        lead[at] = j
    pos = np.zeros(m, dtype=np.int64)
    cur = np.zeros(m, dtype=np.int64)  # the document at pos (SENTINEL: past the end)

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

    def sift_down(i, n):
        while True:
            low = i
            left = 2 * i + 1
            if left < n and worse(left, low):
                low = left
            if left + 1 < n and worse(left + 1, low):
                low = left + 1
            if low == i:
                return
            heap_doc[i], heap_doc[low] = heap_doc[low], heap_doc[i]
            heap_final[i], heap_final[low] = heap_final[low], heap_final[i]
            heap_text[i], heap_text[low] = heap_text[low], heap_text[i]
            i = low

    size = 0  # the heap's

    n_excluded = excluded.shape[0]
    use_allowed = allowed.shape[0] > 0
    num_docs = max(prior.shape[0], 1)
    # The window's candidates, ascending, and where each list holds each: at most a window's
    # documents, and at most the leading list's (most queries lead with a short one).
    most = min(WINDOW, length[lead[0]])
    cand = np.empty(most, dtype=np.int64)
    cand_at = np.empty(most * m, dtype=np.int64)
    # Per document of the window: the list read in turn that last met it (high 32 bits, each
    # read its own number) and where that list holds it (low 32 bits): one store a posting.
    stamp = np.zeros(WINDOW, dtype=np.int64)
    reads = np.int64(0)  # lists read in turn so far
    count = np.int64(0)
    for j in range(m):
        cur[j] = doc_at(j, 0) if length[j] > 0 else SENTINEL
    first = lead[0]
    n0 = length[first]
    p0 = 0
    e = 0  # the next excluded document
    while p0 < n0:
        lo = doc_at(first, p0)
        hi = lo + WINDOW
        # The leading list's documents in the window, those excluded or hidden left out.
        nc = 0
        while p0 < n0:
            d = doc_at(first, p0)
            if d >= hi:
                break
            if n_excluded > 0:
                while e < n_excluded and np.int64(excluded[e]) < d:
                    e += 1
                if e < n_excluded and np.int64(excluded[e]) == d:
                    p0 += 1
                    continue
            cand[nc] = d
            cand_at[nc * m + first] = p0
            nc += 1 if not use_allowed or allowed[d] else 0
            p0 += 1
        for r in range(1, m):
            if nc == 0:
                break
            j = lead[r]
            if cur[j] < lo:
                seek(j, lo)
            if cur[j] == SENTINEL:  # the list ended: no later document holds them all
                nc = 0
                p0 = n0
                break
            out = 0
            if nc * SEEK_COST < length[j] * WINDOW // num_docs:  # few candidates: seeks
                for c in range(nc):
                    d = cand[c]
                    if cur[j] < d:
                        seek(j, d)
                    if cur[j] == d:
                        for x in range(m):
                            cand_at[out * m + x] = cand_at[c * m + x]
                        cand_at[out * m + j] = pos[j]
                        cand[out] = d
                        out += 1
            else:  # its postings in the window read in turn, then looked up per candidate
                reads += np.int64(1)
                p = pos[j]
                n = length[j]
                # A segment list: a block's width, first document and bit read once, then its
                # postings (``doc_at`` per posting, which checks the list and block each time:
                # the 496 benchmark AND calls 29.2 -> 24.4 ms in a loop, p95 164 -> 128 µs).
                if src[j] == 0:
                    while p < n:
                        b = bstart[j] + (p >> 7)
                        width = np.int64(dbits[b])
                        first_doc = np.int64(db[b])
                        bit = dstart[b] * 32 + (p & 127) * width
                        mask = (np.int64(1) << width) - 1
                        stop = min(n, (p | 127) + 1)
                        while p < stop:
                            w = bit >> 5
                            window = (np.int64(dwords[w]) | (np.int64(dwords[w + 1]) << 32)) >> (bit & 31)
                            d = first_doc + (window & mask)
                            if d >= hi:
                                break
                            stamp[d - lo] = (reads << 32) | p
                            p += 1
                            bit += width
                        if p < stop:
                            break
                else:
                    a = start[j]
                    while p < n:
                        d = np.int64(od[a + p])
                        if d >= hi:
                            break
                        stamp[d - lo] = (reads << 32) | p
                        p += 1
                pos[j] = p
                cur[j] = doc_at(j, p) if p < n else SENTINEL
                for c in range(nc):
                    d = cand[c]
                    for x in range(m):
                        cand_at[out * m + x] = cand_at[c * m + x]
                    held = stamp[d - lo]
                    cand_at[out * m + j] = held & 0xFFFFFFFF
                    cand[out] = d
                    out += 1 if (held >> 32) == reads else 0
            nc = out
        # The window's matches, ascending: counted, scored and offered to the heap of the best k.
        count += nc
        if k <= 0:
            continue
        for c in range(nc):
            d = cand[c]
            text = 0.0
            for j in range(m):  # query order, as rank.conjunctive adds them
                text += impact_at(j, cand_at[c * m + j]) * weights[j]
            final = text * (1.0 + prior[d])
            if size < k:
                heap_doc[size], heap_final[size], heap_text[size] = d, final, text
                size += 1
                if size == k:
                    for i in range(k // 2 - 1, -1, -1):
                        sift_down(i, k)
            elif final > heap_final[0]:  # documents ascend: an equal score comes later, and loses
                heap_doc[0], heap_final[0], heap_text[0] = d, final, text
                sift_down(0, k)
    # Best first (ties: the lower document first, as ``rank.top_k`` orders them): the heap's
    # weakest taken off in turn and placed from the end.
    if size < k:
        for i in range(size // 2 - 1, -1, -1):
            sift_down(i, size)
    docs = np.empty(size, dtype=np.uint32)
    finals = np.empty(size, dtype=np.float64)
    texts = np.empty(size, dtype=np.float64)
    for n in range(size, 0, -1):
        docs[n - 1], finals[n - 1], texts[n - 1] = heap_doc[0], heap_final[0], heap_text[0]
        heap_doc[0], heap_final[0], heap_text[0] = heap_doc[n - 1], heap_final[n - 1], heap_text[n - 1]
        sift_down(0, n - 1)
    return _best(docs, finals, texts, size, count)


@njit(cache=True, nogil=True)
def _best(docs, final, text, size, count):
    """The kernel's answer, one type whichever return gives it."""
    return docs[:size].astype(np.uint32), final[:size], text[:size], count
