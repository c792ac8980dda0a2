"""The OR top-k, document at a time, with block-max MaxScore: compiled (numba).

``rank.top_k_maxscore`` prunes a term at a time in numpy: every candidate of an essential
term is scored by a binary search per query term, even when its block of postings could
never reach the k-th score. This kernel walks the terms' lists together, one document at a
time, as PISA's block-max MaxScore and Lucene's ``MaxScoreBulkScorer`` do:

* MaxScore (Turtle & Flood 1995): terms sorted by their bound ``w_t * max_impact_t``; once
  the k-th best score beats the sum of the weakest terms' bounds, their lists are no longer
  enumerated, only probed for the candidates of the others ("essential") lists.
* Block maxima (Ding & Suel, SIGIR 2011; Chakrabarti et al., WSDM 2011): each list is cut
  in blocks of ``BLOCK`` postings with the largest impact of each (``block_maxima``).
  Where the essential lists' blocks under the current document, with the weak lists'
  bounds, cannot reach the k-th score, the essential cursors jump past the first of those
  blocks to end (a window, as Lucene's ``MaxScoreBulkScorer`` does); and a candidate is
  dropped before a weak term is probed when that term's block that would hold it cannot
  lift it there (PISA's block-max MaxScore).

Exactness: a document's text score is the sum over query terms, in query order, of
``weight * impact`` in float64, and its final score ``text * (1 + prior)``, the operations
``rank.text_scores`` and ``rank.combine`` do, so both paths give bit-identical scores (a
test compares this with ``rank.top_k_exhaustive`` on random queries). Documents arrive in
ascending order, so a later document tied with the k-th score loses the tie, as in the
exhaustive ranking (score descending, then document ascending). Bounds are compared with
``rank.SAFETY``'s slack.

The lists come from two places: the segment's own arrays (``PostingSource``: a query term's
``base_term`` names its range, read in place from the memory map) and, for lists the query
built itself (a word's several forms, a segment set's merged lists), one concatenation of
them. A fixed signature keeps it to one compilation, cached on disk (``cache=True``):
``warm_up`` loads or compiles it before the first query.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numba import njit

from services.search.retrieval.posting_layout import BLOCK, PostingSource, lay_out

SENTINEL = np.iinfo(np.int64).max  # past every document number
SAFETY = 1e-9  # relative slack when a score is compared with a sum of bounds (rank uses it too)


@dataclass(frozen=True)
class BlockmaxResult:
    """The best documents (unordered), their scores, and how many matches were counted."""

    docs: np.ndarray  # uint32
    final: np.ndarray
    text: np.ndarray
    counted: int  # matching documents the kernel met (all of them when ``exact``)
    exact: bool  # False: pruning skipped documents, ``counted`` is a lower bound


def top_k_blockmax(
    source: PostingSource | None,
    lists: Sequence[tuple[float, float, int | None, np.ndarray, np.ndarray]],
    prior: np.ndarray,
    k: int,
    max_prior: float,
    excluded: np.ndarray | None = None,
    allowed: np.ndarray | None = None,
    count_limit: int = 0,
    probe_only: Sequence[bool] | None = None,
    candidates_only: Sequence[bool] | None = None,
    seed: np.ndarray | None = None,
) -> BlockmaxResult:
    """The exact top-``k`` of the OR of ``lists``: per term (weight, bound ``max_impact``,
    its term id in ``source`` or None, documents ascending, impacts). ``excluded``: doc
    numbers ascending, never results; ``allowed``: a boolean per document.

    Where pruning skipped documents, the matches are counted apart, exactly, when the lists
    hold at most ``count_limit`` postings (one pass marking a byte per document).

    ``probe_only``: per list, True where it never brings a candidate and only adds to the
    scores of the others' documents (a feedback query's expansion terms); ``candidates_only``:
    True where a list only brings candidates, a document holding no other list is no match
    (a word of the user's that the feedback query dropped). ``seed``: documents likely to
    rank high (a feedback query's first pass's best), scored first so that the k-th score
    starts high and prunes from the first document on; the result is the same."""
    m = len(lists)
    weights = np.array([w for w, _, _, _, _ in lists], dtype=np.float64)
    bounds = np.array([w * top for w, top, _, _, _ in lists], dtype=np.float64)
    lay = lay_out(source, [(term, docs, impacts) for _, _, term, docs, impacts in lists])
    src, start, length, bstart = lay.src, lay.start, lay.length, lay.block_start
    base_docs, joined_docs = lay.base_docs, lay.own_docs
    lead = np.ones(m, np.bool_) if probe_only is None else ~np.asarray(probe_only, dtype=np.bool_)
    member = np.ones(m, np.bool_) if candidates_only is None else ~np.asarray(candidates_only, dtype=np.bool_)
    excluded_docs = np.zeros(0, np.uint32) if excluded is None else np.asarray(excluded, dtype=np.uint32)
    allowed_mask = np.zeros(0, np.bool_) if allowed is None else np.asarray(allowed, dtype=np.bool_)
    prior = np.asarray(prior, dtype=np.float64)
    docs, final, text, counted, exact = _top_k(
        base_docs,
        lay.base_impacts,
        lay.base_blocks,
        joined_docs,
        lay.own_impacts,
        lay.own_blocks,
        src,
        start,
        length,
        bstart,
        weights,
        bounds,
        lead,
        member,
        np.zeros(0, np.uint32) if seed is None else np.unique(np.asarray(seed, dtype=np.uint32)),
        prior,
        int(k),
        float(max_prior),
        excluded_docs,
        allowed_mask,
    )
    if not exact and int(length.sum()) <= count_limit:
        counted = _count(
            base_docs, joined_docs, src, start, length, lead, prior.shape[0], excluded_docs, allowed_mask
        )
        exact = True
    return BlockmaxResult(docs.astype(np.uint32), final, text, int(counted), bool(exact))


def warm_up() -> None:
    """Compile the kernel (or load it from numba's cache) now, not in the first query."""
    docs = np.array([1, 3], np.uint32)
    impacts = np.array([1.0, 2.0], np.float32)
    top_k_blockmax(None, [(1.0, 2.0, None, docs, impacts)], np.zeros(4), 1, 0.0, count_limit=2)


# --- the kernel ------------------------------------------------------------------------
# Term j's postings are ``(bd/bi if src[j] == 0 else od/oi)[start[j] : start[j] + length[j]]``
# and its blocks' maxima ``(bb or ob)[bstart[j]:]``. The helpers are closures: numba inlines
# them without the reference counting that a call passing arrays costs (about 30 ns a call,
# 35x the work it wraps; docs/performance-notes.md).


@njit(cache=True, nogil=True)
def _top_k(
    bd,
    bi,
    bb,
    od,
    oi,
    ob,
    src,
    start,
    length,
    bstart,
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
    heap_doc = np.zeros(max(k, 1), dtype=np.int64)
    heap_final = np.zeros(max(k, 1), dtype=np.float64)
    heap_text = np.zeros(max(k, 1), dtype=np.float64)

    def doc_at(j, p):
        if src[j] == 0:
            return np.int64(bd[start[j] + p])
        return np.int64(od[start[j] + p])

    def impact_at(j, p):
        if src[j] == 0:
            return np.float64(bi[start[j] + p])
        return np.float64(oi[start[j] + p])

    def block_max_at(j, b):
        if src[j] == 0:
            return np.float64(bb[bstart[j] + b])
        return np.float64(ob[bstart[j] + b])

    def block_last(j, b):
        last = b * BLOCK + BLOCK - 1
        if last >= length[j]:
            last = length[j] - 1
        return doc_at(j, last)

    def seek(j, target):
        """Move cursor ``j`` to its first document >= ``target`` (galloping, then binary)."""
        n = length[j]
        p = pos[j]
        if p >= n:
            cur[j] = SENTINEL
            return
        first = doc_at(j, p)
        if first >= target:
            cur[j] = first
            return
        lo = p  # doc(lo) < target
        step = 1
        hi = p + 1
        while hi < n and doc_at(j, hi) < target:
            lo = hi
            step *= 2
            hi = lo + step
        if hi > n:
            hi = n
        while lo + 1 < hi:  # doc(lo) < target <= doc(hi) (hi == n: past the end)
            mid = (lo + hi) // 2
            if doc_at(j, mid) < target:
                lo = mid
            else:
                hi = mid
        pos[j] = hi
        cur[j] = doc_at(j, hi) if hi < n else SENTINEL

    def find(j, d):
        """Where list ``j`` holds ``d`` (binary search, cursors untouched); -1: it does not."""
        lo = 0
        hi = length[j]
        while lo < hi:
            mid = (lo + hi) // 2
            if doc_at(j, mid) < d:
                lo = mid + 1
            else:
                hi = mid
        if lo < length[j] and doc_at(j, lo) == d:
            return lo
        return -1

    def block_of(j, d):
        """Move term ``j``'s block pointer (not its cursor) to the block that would hold
        ``d``; the block's number, -1 past the list's end."""
        blocks = (length[j] + BLOCK - 1) // BLOCK
        b = shallow[j]
        while b < blocks and block_last(j, b) < d:
            b += 1
        shallow[j] = b
        return b if b < blocks else -1

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

    if k <= 0:
        return heap_doc[:0], heap_final[:0], heap_text[:0], 0, True
    # Weakest bound first: the prefix not enumerated; the probe-only lists before all others.
    by_bound = np.argsort(bounds, kind="mergesort")
    order = np.concatenate((by_bound[~lead[by_bound]], by_bound[lead[by_bound]]))
    probe_only = m - int(lead.sum())
    prefix = np.zeros(m + 1, dtype=np.float64)
    for r in range(m):
        prefix[r + 1] = prefix[r] + bounds[order[r]]
    for j in range(m):
        seek(j, 0)
    size = 0
    theta = -1.0  # no document yet: every candidate gets in
    essential = probe_only  # ranks >= essential are enumerated; the ones below only probed
    counted = 0
    exact = probe_only == 0
    imp = np.zeros(m, dtype=np.float64)
    has = np.zeros(m, dtype=np.bool_)
    n_excluded = excluded.shape[0]
    at_excluded = 0
    use_allowed = allowed.shape[0] > 0
    slack = 1.0 + SAFETY
    grow = (1.0 + max_prior) * slack
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
        if not (brought and matched):
            continue
        counted += 1
        final = text * (1.0 + prior[sd])
        if size < k:
            heap_doc[size], heap_final[size], heap_text[size] = sd, final, text
            size += 1
            if size == k:
                for i in range(k // 2 - 1, -1, -1):
                    sift_down(i, k)
        elif final > heap_final[0] or (final == heap_final[0] and sd < heap_doc[0]):
            heap_doc[0], heap_final[0], heap_text[0] = sd, final, text
            sift_down(0, k)
    if size == k:
        theta = heap_final[0]
        while essential < m and theta > prefix[essential + 1] * grow + SAFETY:
            essential += 1
            exact = False
    at_seed = 0
    d = SENTINEL
    for r in range(essential, m):
        if cur[order[r]] < d:
            d = cur[order[r]]
    if essential == m:
        d = SENTINEL  # the seeds' k-th score is more than any other document can make
    window_end = -1  # the documents up to here were found worth looking at
    while d != SENTINEL:
        if size == k and d > window_end:
            # A window: up to the first end of the essential lists' blocks under d. Their block
            # maxima and the weak lists' bounds cap every document in it; below the k-th
            # score, the whole window is skipped (Lucene's MaxScoreBulkScorer).
            window_end = SENTINEL
            window_bound = 0.0
            for r in range(essential, m):
                j = order[r]
                b = block_of(j, d)
                if b >= 0:
                    window_bound += weights[j] * block_max_at(j, b)
                    last = block_last(j, b)
                    if last < window_end:
                        window_end = last
            for r in range(essential):  # a weak list: the largest of its blocks in the window
                j = order[r]
                b = block_of(j, d)
                if b < 0:
                    continue
                top = block_max_at(j, b)
                blocks = (length[j] + BLOCK - 1) // BLOCK
                while b + 1 < blocks and block_last(j, b) < window_end:
                    b += 1
                    top = max(top, block_max_at(j, b))
                window_bound += weights[j] * top
            if theta > window_bound * (1.0 + max_prior) * slack + SAFETY:
                exact = False
                d = SENTINEL
                for r in range(essential, m):
                    j = order[r]
                    if cur[j] <= window_end:
                        seek(j, window_end + 1)
                    if cur[j] < d:
                        d = cur[j]
                continue
        # The essential lists at d: their impacts, their cursors moved on, the next candidate.
        partial = 0.0
        following = SENTINEL
        for r in range(essential, m):
            j = order[r]
            c = cur[j]
            if c == d:
                imp[j] = impact_at(j, pos[j]) * weights[j]
                has[j] = True
                partial += imp[j]
                pos[j] += 1
                c = doc_at(j, pos[j]) if pos[j] < length[j] else SENTINEL
                cur[j] = c
            if c < following:
                following = c
        while at_excluded < n_excluded and np.int64(excluded[at_excluded]) < d:
            at_excluded += 1
        while at_seed < n_seed and np.int64(seed[at_seed]) < d:
            at_seed += 1
        skip = (
            (at_excluded < n_excluded and np.int64(excluded[at_excluded]) == d)
            or (use_allowed and not allowed[d])
            or (at_seed < n_seed and np.int64(seed[at_seed]) == d)  # scored already
        )
        if not skip:
            counted += 1
            factor = 1.0 + prior[d]
            # The weak lists, strongest first: each one's global bound replaced by the bound of
            # its block that would hold d, then by its impact, while the sum can still win.
            upper = partial + prefix[essential]
            full = size == k
            beaten = full and not theta < upper * factor * slack + SAFETY
            for r in range(essential - 1, -1, -1):
                if beaten:
                    break
                j = order[r]
                upper -= bounds[j]
                b = block_of(j, d)
                if b < 0:
                    continue  # past the list's end: it holds nothing from d on
                if full and not theta < (upper + weights[j] * block_max_at(j, b)) * factor * slack + SAFETY:
                    beaten = True
                    break
                seek(j, d)
                if cur[j] == d:
                    imp[j] = impact_at(j, pos[j]) * weights[j]
                    has[j] = True
                    upper += imp[j]
                beaten = full and not theta < upper * factor * slack + SAFETY
            matched = False
            for j in range(m):
                if has[j] and member[j]:
                    matched = True
            if not beaten and matched:
                text = 0.0
                for j in range(m):  # query order, as rank.text_scores adds them
                    if has[j]:
                        text += imp[j]
                final = text * factor
                if size < k:
                    # Fill, then heapify once full: the root is the worst of the k.
                    heap_doc[size], heap_final[size], heap_text[size] = d, final, text
                    size += 1
                    if size == k:
                        for i in range(k // 2 - 1, -1, -1):
                            sift_down(i, k)
                        theta = heap_final[0]
                elif final > theta or (final == theta and d < heap_doc[0]):  # a seed may be later
                    heap_doc[0], heap_final[0], heap_text[0] = d, final, text
                    sift_down(0, k)
                    theta = heap_final[0]
                if size == k:
                    while essential < m and theta > prefix[essential + 1] * grow + SAFETY:
                        essential += 1
                        exact = False
                    if essential == m:
                        break
                    following = SENTINEL  # the essential lists may be fewer now
                    for r in range(essential, m):
                        if cur[order[r]] < following:
                            following = cur[order[r]]
        for j in range(m):
            has[j] = False
        d = following
    return heap_doc[:size], heap_final[:size], heap_text[:size], counted, exact


@njit(cache=True, nogil=True)
def _count(bd, od, src, start, length, lead, num_docs, excluded, allowed):
    """Documents holding any of the ``lead`` lists, not ``excluded``, ``allowed`` (when given)."""
    seen = np.zeros(num_docs, dtype=np.uint8)
    for x in range(excluded.shape[0]):
        seen[excluded[x]] = 1
    if allowed.shape[0] > 0:
        for x in range(num_docs):
            if not allowed[x]:
                seen[x] = 1
    total = 0
    for j in range(src.shape[0]):
        if not lead[j]:
            continue
        a = start[j]
        if src[j] == 0:
            for p in range(a, a + length[j]):
                d = bd[p]
                if seen[d] == 0:
                    seen[d] = 1
                    total += 1
        else:
            for p in range(a, a + length[j]):
                d = od[p]
                if seen[d] == 0:
                    seen[d] = 1
                    total += 1
    return total
