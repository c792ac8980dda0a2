"""The compiled (numba) kernel of the OR top-k: block-max MaxScore a window of documents at a
time (``blockmax`` calls it; where it pruned, ``match_count`` counts the matches).

``rank.top_k_maxscore`` prunes a term at a time in numpy: every candidate of an essential
term is scored by a binary search per query term, even when its block of postings could
never reach the k-th score. This kernel scores windows of documents as Lucene's
``MaxScoreBulkScorer`` (Lucene 9.9+) does, with PISA's per-candidate block bound:

* MaxScore (Turtle & Flood 1995), per window: each list's bound in a window is the largest
  of its block maxima there (Ding & Suel, SIGIR 2011: every ``BLOCK`` postings carry their
  largest impact, ``posting_layout.block_maxima``). The weakest lists, while their bounds
  together cannot reach the k-th score, are not enumerated in that window, only probed for
  the others' documents; a window where no list is worth enumerating is skipped whole.
* A window is at least ``INNER`` documents, and runs to the first block end of the lists
  enumerated in the last one. The enumerated lists are read a list at a time into the
  window's scores (one tight loop per list, no per-document cursor juggling, as
  Lucene's ``scoreInnerWindowMultipleEssentialClauses``), then its documents are replayed
  in ascending order: the probed lists looked up strongest first, each dropped from the
  bound for the maximum of its block that would hold the document (PISA's block-max
  MaxScore) while the sum can still win.

Measured against the document-at-a-time kernel this replaced (every benchmark query's
calls, each best of 5): the heavy feedback passes (11-14 lists) take 0.6x the time, the
sum over all calls 0.87x (docs/benchmarks.md, "Issue 31: windowed block-max MaxScore").

Exactness: a document's text score is the sum over query terms, in query order, of
``weight * impact`` in float64, and its final score ``text * (1 + prior)``, the operations
``rank.text_scores`` and ``rank.combine`` do, so both paths give bit-identical scores (a
test compares this with ``rank.top_k_exhaustive`` on random queries). A document tied with
the k-th score enters only if it comes first by number, as in the exhaustive ranking
(score descending, then document ascending). Bounds are compared with ``rank.SAFETY``'s
slack. A document's lists are one 64-bit mask: at most ``MAX_LISTS`` lists.

The lists come from two places: the segment's own arrays (``PostingSource``: a query term's
``base_term`` names its range, read in place from the memory map) and, for lists the query
built itself (a word's several forms, a segment set's merged lists), one concatenation of
them. A fixed signature keeps it to one compilation, cached on disk (``cache=True``):
``blockmax.warm_up`` loads or compiles it before the first query.
"""

from __future__ import annotations

import numpy as np

from services.compiled import compiled_on_first_use
from services.search.retrieval.posting_layout import BLOCK

SENTINEL = np.iinfo(np.int64).max  # past every document number
INNER = 2048  # documents scored together: a window's scores fit in L1/L2 (Lucene: 4096)
# The lowest set bit's index by de Bruijn multiplication (numba has no count-trailing-zeros).
_DE_BRUIJN = np.uint64(0x03F79D71B4CB0A89)
_LOWEST_BIT = np.zeros(64, dtype=np.int64)
for _bit in range(64):
    _LOWEST_BIT[((1 << _bit) * 0x03F79D71B4CB0A89 & (2**64 - 1)) >> 58] = _bit
SAFETY = 1e-9  # relative slack when a score is compared with a sum of bounds (rank uses it too)


# Term j's postings are the segment's (src[j] == 0: documents in blocks from ``bstart[j]`` of
# db/dbits/dstart/dwords, levels ``bi[start[j] : start[j] + length[j]]``) or the query's own
# (``od/oi[start[j] : start[j] + length[j]]``), and its blocks' maxima ``(bb or ob)[bstart[j]:]``.
# The helpers are closures: numba inlines them without the reference counting that a call
# passing arrays costs (about 30 ns a call, 35x the work it wraps; docs/performance-notes.md).


@compiled_on_first_use
def window_top_k(
    db,
    dbits,
    dstart,
    dwords,
    bi,
    bb,
    od,
    oi,
    ob,
    src,
    start,
    length,
    bstart,
    scale,
    weights,
    bounds,
    lead,
    member,
    seed,
    prior,
    k,
    max_prior,
    excluded,
    allowed,
):
    m = weights.shape[0]
    pos = np.zeros(m, dtype=np.int64)
    cur = np.zeros(m, dtype=np.int64)
    shallow = np.zeros(m, dtype=np.int64)
    last_doc = np.full(m, -1, dtype=np.int64)  # each list's last document (-1: empty), set below
    heap_doc = np.zeros(max(k, 1), dtype=np.int64)
    heap_final = np.zeros(max(k, 1), dtype=np.float64)
    heap_text = np.zeros(max(k, 1), dtype=np.float64)

    def base_doc(j, p):
        """A segment list's posting ``p``: its block's first document plus its offset, read
        with a 64-bit window of two words (``services.storage.formats.doc_blocks``)."""
        block = bstart[j] + (p >> 7)
        width = np.int64(dbits[block])
        bit = dstart[block] * 32 + (p & 127) * width
        at = bit >> 5
        window = (np.int64(dwords[at]) | (np.int64(dwords[at + 1]) << 32)) >> (bit & 31)
        return np.int64(db[block]) + (window & ((np.int64(1) << width) - 1))

    def doc_at(j, p):
        if src[j] == 0:
            return base_doc(j, p)
        return np.int64(od[start[j] + p])

    def impact_at(j, p):
        if src[j] == 0:
            return np.float64(np.float32(bi[start[j] + p]) * scale[j])
        return np.float64(oi[start[j] + p])

    def block_max_at(j, b):
        if src[j] == 0:
            return np.float64(bb[bstart[j] + b])
        return np.float64(ob[bstart[j] + b])

    def block_first_doc(j, b):
        """The first document of list ``j``'s block ``b`` (a segment list's is stored)."""
        if src[j] == 0:
            return np.int64(db[bstart[j] + b])
        return np.int64(od[start[j] + b * BLOCK])

    def block_last(j, b):
        last = b * BLOCK + BLOCK - 1
        if last >= length[j]:
            last = length[j] - 1
        if src[j] == 0:
            return base_doc(j, last)
        return np.int64(od[start[j] + last])

    def seek(j, target):
        """Move cursor ``j`` to its first document >= ``target``: a segment list's blocks
        skipped by their first documents (read as stored), then galloping and binary search
        (within that one block)."""
        n = length[j]
        p = pos[j]
        if p >= n:
            cur[j] = SENTINEL
            return
        first = doc_at(j, p)
        if first >= target:
            cur[j] = first
            return
        end = n
        if src[j] == 0:
            blocks = (n + BLOCK - 1) // BLOCK
            b0 = bstart[j]
            lo = p // BLOCK  # its first document is below target
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
            p = max(p, lo * BLOCK)  # in block lo, or the next block's first
            end = min(n, lo * BLOCK + BLOCK)
        lo = p  # doc(lo) < target
        step = 1
        hi = p + 1
        while hi < end and doc_at(j, hi) < target:
            lo = hi
            step *= 2
            hi = lo + step
        if hi > end:
            hi = end
        while lo + 1 < hi:  # doc(lo) < target <= doc(hi) (hi == end: the next block or past the end)
            mid = (lo + hi) // 2
            if doc_at(j, mid) < target:
                lo = mid
            else:
                hi = mid
        pos[j] = hi
        cur[j] = doc_at(j, hi) if hi < n else SENTINEL

    def find(j, d):
        """Where list ``j`` holds ``d`` (cursors untouched); -1: it does not. A segment list's
        search is narrowed to one block by the blocks' first documents (read as stored)."""
        n = length[j]
        lo = 0
        hi = n
        if src[j] == 0 and n > 0:
            b0 = bstart[j]
            if np.int64(db[b0]) > d:
                return -1
            a = 0  # the last block whose first document is <= d
            z = (n + BLOCK - 1) // BLOCK
            while a + 1 < z:
                mid = (a + z) // 2
                if np.int64(db[b0 + mid]) <= d:
                    a = mid
                else:
                    z = mid
            lo = a * BLOCK
            hi = min(n, lo + BLOCK)
        while lo < hi:
            mid = (lo + hi) // 2
            if doc_at(j, mid) < d:
                lo = mid + 1
            else:
                hi = mid
        if lo < n and doc_at(j, lo) == d:
            return lo
        return -1

    def block_of(j, d):
        """Move term ``j``'s block pointer (not its cursor) to the last block starting at or
        before ``d`` (the first block when none does), by the blocks' first documents alone
        (a segment's are stored: no posting decoded, no word of the list read): the block
        that would hold ``d``, or one ending before it when ``d`` falls between two blocks,
        where the list holds nothing at ``d`` and any bound is an upper one. -1 past the
        list's end."""
        if d > last_doc[j]:
            return -1
        blocks = (length[j] + BLOCK - 1) // BLOCK
        b = shallow[j]
        while b + 1 < blocks and block_first_doc(j, b + 1) <= d:
            b += 1
        shallow[j] = b
        return b

    def block_end(j, b):
        """The last document block ``b`` of list ``j`` may hold: the next one's first, less one."""
        if b + 1 < (length[j] + BLOCK - 1) // BLOCK:
            return block_first_doc(j, b + 1) - 1
        return last_doc[j]

    def window_top(j, lo, hi):
        """The largest impact of list ``j``'s blocks over documents ``lo..hi`` (with the block
        before ``lo``'s when ``lo`` falls between two: an upper bound); -1: none there."""
        b = block_of(j, lo)
        if b < 0 or block_first_doc(j, b) > hi:
            return -1.0
        top = block_max_at(j, b)
        blocks = (length[j] + BLOCK - 1) // BLOCK
        while b + 1 < blocks and block_first_doc(j, b + 1) <= hi:
            b += 1
            top = max(top, block_max_at(j, b))
        return top

    def worse(a, b):
        """Heap entry ``a`` ranks below ``b``: a lower score, or the same and a later document."""
        return heap_final[a] < heap_final[b] or (heap_final[a] == heap_final[b] and heap_doc[a] > heap_doc[b])

    def sift_down(i, size):
        while True:
            low = i
            left = 2 * i + 1
            if left < size and worse(left, low):
                low = left
            if left + 1 < size and worse(left + 1, low):
                low = left + 1
            if low == i:
                return
            heap_doc[i], heap_doc[low] = heap_doc[low], heap_doc[i]
            heap_final[i], heap_final[low] = heap_final[low], heap_final[i]
            heap_text[i], heap_text[low] = heap_text[low], heap_text[i]
            i = low

    def offer(d, final, text, size):
        """Document ``d`` into the heap of the best ``k``; the heap's new size."""
        if size < k:
            # Fill, then heapify once full: the root is the worst of the k.
            heap_doc[size], heap_final[size], heap_text[size] = d, final, text
            size += 1
            if size == k:
                for i in range(k // 2 - 1, -1, -1):
                    sift_down(i, k)
        elif final > heap_final[0] or (final == heap_final[0] and d < heap_doc[0]):  # a seed may be later
            heap_doc[0], heap_final[0], heap_text[0] = d, final, text
            sift_down(0, k)
        return size

    if k <= 0:
        return heap_doc[:0], heap_final[:0], heap_text[:0], 0, True
    zero = np.uint64(0)
    for j in range(m):
        if length[j] > 0:
            last_doc[j] = block_last(j, (length[j] - 1) // BLOCK)
    bits = np.zeros(m, dtype=np.uint64)  # list j's bit in a document's mask (m <= 64)
    member_bits = zero
    exact = True
    for j in range(m):
        bits[j] = np.uint64(1) << np.uint64(j)
        if member[j]:
            member_bits |= bits[j]
        if not lead[j]:
            exact = False  # a probe-only list's documents are not matches by themselves
        seek(j, 0)
    size = 0
    theta = -1.0  # no document yet: every candidate gets in
    counted = 0
    n_excluded = excluded.shape[0]
    at_excluded = 0
    use_allowed = allowed.shape[0] > 0
    slack = 1.0 + SAFETY
    grow = (1.0 + max_prior) * slack
    all_bounds = 0.0
    for j in range(m):
        all_bounds += bounds[j]

    # The seeds first, each looked up in every list, so that the k-th score starts high.
    n_seed = seed.shape[0]
    for x in range(n_seed):
        sd = np.int64(seed[x])
        if use_allowed and not allowed[sd]:
            continue
        lo = 0
        hi = n_excluded
        while lo < hi:
            mid = (lo + hi) // 2
            if np.int64(excluded[mid]) < sd:
                lo = mid + 1
            else:
                hi = mid
        if lo < n_excluded and np.int64(excluded[lo]) == sd:
            continue
        text = 0.0
        brought = False
        matched = False
        for j in range(m):  # query order, as rank.text_scores adds them
            p = find(j, sd)
            if p >= 0:
                text += impact_at(j, p) * weights[j]
                brought = brought or lead[j]
                matched = matched or member[j]
        if brought and matched:
            counted += 1
            size = offer(sd, text * (1.0 + prior[sd]), text, size)
    if size == k:
        theta = heap_final[0]
    at_seed = 0

    # Windows of documents. ``mask[i]``: the lists holding document lo + i; ``scored[i*m + j]``:
    # list j's weighted impact there; ``present``: which documents of the window were met.
    mask = np.zeros(INNER, dtype=np.uint64)
    present = np.zeros(INNER // 64, dtype=np.uint64)

    def shown(d):
        """1 where document ``d`` may be a result (``allowed``), else 0: an enumerated list
        marks a document by this factor, not by a branch on it (half the benchmark corpus's
        documents are folded near-duplicates: half such branches were mispredicted). What a 0
        leaves in the score table is never read: a document's scores are read by the lists
        it holds."""
        if use_allowed:
            return np.uint64(allowed[d])
        return np.uint64(1)

    scored = np.empty(INNER * m, dtype=np.float64)
    top = np.zeros(m, dtype=np.float64)  # each list's weighted block maximum in the window
    essential = np.zeros(m, dtype=np.bool_)
    by_top = np.zeros(m, dtype=np.int64)
    probes = np.zeros(m, dtype=np.int64)
    for j in range(m):
        essential[j] = lead[j]
    lo = SENTINEL
    for j in range(m):
        if lead[j] and cur[j] < lo:
            lo = cur[j]
    while lo != SENTINEL:
        full = size == k
        if full and theta > all_bounds * grow + SAFETY:
            exact = False  # no document left can reach the k-th score
            break
        # The window: at least INNER documents, up to the first block end of the lists
        # enumerated in the last one (Lucene's outer window).
        hi = lo + INNER - 1
        if full:
            end = SENTINEL
            for j in range(m):
                if essential[j] and cur[j] != SENTINEL:
                    b = block_of(j, lo)
                    if b >= 0 and block_end(j, b) < end:
                        end = block_end(j, b)
            if end != SENTINEL and end > hi:
                hi = end
        for j in range(m):
            t = window_top(j, lo, hi)
            top[j] = weights[j] * t if t >= 0.0 else -1.0
        # Partition: the weakest lists, while their maxima in the window together cannot
        # reach the k-th score, are only probed; the others are enumerated.
        for j in range(m):
            essential[j] = lead[j]
        if full:
            for r in range(m):  # by window maximum, ascending (insertion sort: m is small)
                x = r
                while x > 0 and top[by_top[x - 1]] > top[r]:
                    by_top[x] = by_top[x - 1]
                    x -= 1
                by_top[x] = r
            weak = 0.0
            for j in range(m):
                if not lead[j] and top[j] > 0.0:
                    weak += top[j]
            for r in range(m):
                j = by_top[r]
                if not lead[j]:
                    continue
                if theta > (weak + max(top[j], 0.0)) * grow + SAFETY:
                    weak += max(top[j], 0.0)
                    essential[j] = False
                else:
                    break
        enumerated = False
        for j in range(m):
            if essential[j]:
                enumerated = True
            elif lead[j] and top[j] >= 0.0:
                exact = False  # its documents in the window are not all met
        if not enumerated:  # nothing in the window can reach the k-th score
            exact = False
            lo = SENTINEL
            for j in range(m):
                if lead[j]:
                    if cur[j] <= hi:
                        seek(j, hi + 1)
                    if cur[j] < lo:
                        lo = cur[j]
            continue
        # The probed lists holding postings in the window, strongest first; their sum.
        unknown = 0.0
        n_probes = 0
        for j in range(m):
            if not essential[j] and top[j] >= 0.0:
                unknown += top[j]
                x = n_probes
                while x > 0 and top[probes[x - 1]] < top[j]:
                    probes[x] = probes[x - 1]
                    x -= 1
                probes[x] = j
                n_probes += 1
        c_lo = lo
        while c_lo <= hi:
            c_hi = min(c_lo + INNER - 1, hi)
            # The enumerated lists, a list at a time (no per-document cursor juggling). Two loops,
            # one per source: the segment's arrays are read-only, the query's own writable, and
            # numba will not pick between arrays of the two types in one loop.
            for j in range(m):
                if not essential[j]:
                    continue
                p = pos[j]
                n = length[j]
                a = start[j]
                w = weights[j]
                step = scale[j]
                if src[j] == 0:
                    # A block's width, first document and bit read once, then each offset in turn.
                    width = np.int64(0)
                    first_doc = np.int64(0)
                    bit = np.int64(0)
                    while p < n:
                        if p == pos[j] or p % BLOCK == 0:
                            b = bstart[j] + p // BLOCK
                            width = np.int64(dbits[b])
                            first_doc = np.int64(db[b])
                            bit = dstart[b] * 32 + (p % BLOCK) * width
                        at = bit >> 5
                        window = (np.int64(dwords[at]) | (np.int64(dwords[at + 1]) << 32)) >> (bit & 31)
                        d = first_doc + (window & ((np.int64(1) << width) - 1))
                        if d > c_hi:
                            break
                        bit += width
                        i = d - c_lo
                        keep = shown(d)
                        mask[i] |= bits[j] * keep
                        present[i >> 6] |= keep << np.uint64(i & 63)
                        scored[i * m + j] = np.float64(np.float32(bi[a + p]) * step) * w
                        p += 1
                else:
                    while p < n and np.int64(od[a + p]) <= c_hi:
                        d = np.int64(od[a + p])
                        i = d - c_lo
                        keep = shown(d)
                        mask[i] |= bits[j] * keep
                        present[i >> 6] |= keep << np.uint64(i & 63)
                        scored[i * m + j] = np.float64(oi[a + p]) * w
                        p += 1
                pos[j] = p
                cur[j] = doc_at(j, p) if p < n else SENTINEL
            # Their documents in ascending order: the probed lists looked up, then scored.
            for word in range((c_hi - c_lo) // 64 + 1):
                left = present[word]
                present[word] = zero
                while left != zero:
                    low_bit = left & (~left + np.uint64(1))
                    left ^= low_bit
                    i = word * 64 + _LOWEST_BIT[np.int64((low_bit * _DE_BRUIJN) >> np.uint64(58))]
                    held = mask[i]
                    mask[i] = zero
                    d = c_lo + i
                    while at_excluded < n_excluded and np.int64(excluded[at_excluded]) < d:
                        at_excluded += 1
                    while at_seed < n_seed and np.int64(seed[at_seed]) < d:
                        at_seed += 1
                    if (  # (a document not allowed was never marked)
                        at_excluded < n_excluded and np.int64(excluded[at_excluded]) == d
                    ) or (at_seed < n_seed and np.int64(seed[at_seed]) == d):  # scored already
                        continue
                    counted += 1
                    full = size == k
                    factor = 1.0 + prior[d]
                    row = i * m
                    upper = unknown
                    if full:
                        for j in range(m):
                            if held & bits[j] != zero:
                                upper += scored[row + j]
                    # The probed lists, strongest first: each one's window maximum replaced by
                    # the maximum of its block that would hold d, then by its impact, while
                    # the sum can still win (PISA's block-max MaxScore).
                    beaten = full and not theta < upper * factor * slack + SAFETY
                    for x in range(n_probes):
                        if beaten:
                            break
                        j = probes[x]
                        upper -= top[j]
                        b = block_of(j, d)
                        if b < 0:
                            continue  # past the list's end: it holds nothing from d on
                        if (
                            full
                            and not theta
                            < (upper + weights[j] * block_max_at(j, b)) * factor * slack + SAFETY
                        ):
                            beaten = True
                            break
                        seek(j, d)
                        if cur[j] == d:
                            scored[row + j] = impact_at(j, pos[j]) * weights[j]
                            held |= bits[j]
                            upper += scored[row + j]
                        beaten = full and not theta < upper * factor * slack + SAFETY
                    if beaten or held & member_bits == zero:
                        continue
                    text = 0.0
                    for j in range(m):  # query order, as rank.text_scores adds them
                        if held & bits[j] != zero:
                            text += scored[row + j]
                    size = offer(d, text * factor, text, size)
                    if size == k:
                        theta = heap_final[0]
            c_lo = c_hi + 1
        lo = SENTINEL
        for j in range(m):
            if lead[j]:
                if cur[j] <= hi:
                    seek(j, hi + 1)
                if cur[j] < lo:
                    lo = cur[j]
    return heap_doc[:size], heap_final[:size], heap_text[:size], counted, exact
