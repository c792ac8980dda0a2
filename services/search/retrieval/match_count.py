"""Counting a query's matches, how many results it says it has: where the OR top-k pruned,
``lead_count`` (``blockmax`` calls it after ``blockmax_kernels.window_top_k``) counts every
document of the lists that bring candidates, once, compiled (numba) as the top-k is, reading
a segment's lists in place through their blocks (``services.storage.formats.doc_blocks``),
up to ``COUNT_EXACTLY_UP_TO`` (1,000); past it, ``sampled_count`` estimates the count from ranges of
documents spread over the index. ``count_matches`` counts (or estimates, taking the words as
independent) the matches of query terms in numpy, where no kernel has the lists laid out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from services.compiled import compiled_on_first_use


class Listed(Protocol):
    """What a count reads of a query term's list (``rank.QueryTerm`` has it)."""

    @property
    def length(self) -> int: ...  # postings

    @property
    def docs(self) -> np.ndarray: ...  # the documents, ascending


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


@compiled_on_first_use
def sampled_count(
    db,
    dbits,
    dstart,
    dwords,
    od,
    src,
    start,
    length,
    bstart,
    lead,
    num_docs,
    excluded,
    allowed,
    budget,
    windows,
):
    """An estimate of ``lead_count``'s full count (documents holding any ``lead`` list, not
    ``excluded``, ``allowed``), from ``windows`` ranges of document numbers spread evenly
    over the index that together hold about ``budget`` of the lists' postings (at most an
    eighth of the documents): the distinct matches counted there, scaled by how many of the
    lists' postings fell there (a ratio estimator: where the words are denser, more of their
    postings are sampled). Many small ranges, not a few wide ones: a crawl numbers a site's
    pages together, and a few ranges land on a few sites (on the benchmark's 470 queries past
    1,000 matches, 16 ranges overstated the median count by 5.6 %, 32 by 3.7 %, 256 by 1.4 % at
    three times the cost). Each list is read range after range,
    its position carried on (galloping over the blocks' first documents, then a binary
    search in the block). -1 when no posting fell in the ranges.

    Taking the words as independent instead (``count_matches``' estimate) overstated the
    benchmark's counts by a quarter to a third: words co-occur (docs/benchmarks.md)."""
    total = np.int64(0)
    for j in range(src.shape[0]):
        if lead[j]:
            total += length[j]
    if total == 0 or num_docs <= 0 or windows <= 0:
        return np.int64(0)
    share = min(0.125, budget / total)
    width = max(np.int64(1), np.int64(num_docs * share / windows))
    # The ranges: [w * num_docs // windows, + width), each marked in its own row.
    los = np.empty(windows, dtype=np.int64)
    his = np.empty(windows, dtype=np.int64)
    for w in range(windows):
        los[w] = (np.int64(w) * num_docs) // windows
        his[w] = min(los[w] + width, np.int64(num_docs))
    mark = np.zeros(windows * width, dtype=np.uint8)
    use_allowed = allowed.shape[0] > 0
    at = 0
    for w in range(windows):  # the excluded documents are met already: never counted
        lo, hi = los[w], his[w]
        while at < excluded.shape[0] and np.int64(excluded[at]) < lo:
            at += 1
        while at < excluded.shape[0] and np.int64(excluded[at]) < hi:
            mark[w * width + np.int64(excluded[at]) - lo] = 1
            at += 1
    tally = np.zeros(2, dtype=np.int64)  # the matches met, the postings sampled

    def meet(d, row):
        """Posting of document ``d`` in the range whose marks start at ``row + lo``."""
        tally[1] += 1
        if mark[row + d] == 0:
            mark[row + d] = 1
            if not use_allowed or allowed[d]:
                tally[0] += 1

    def packed(bit0, width_b, first_doc, a):
        """The ``a``-th document of a block (its offsets from ``bit0``, ``width_b`` bits each)."""
        bit = bit0 + a * width_b
        word = bit >> 5
        pair = np.int64(dwords[word]) | (np.int64(dwords[word + 1]) << 32)
        return first_doc + ((pair >> (bit & 31)) & ((np.int64(1) << width_b) - 1))

    for j in range(src.shape[0]):
        if not lead[j] or length[j] == 0:
            continue
        n = length[j]
        blocks = (n + 127) >> 7
        b0 = bstart[j]
        blk = 0  # segment list: the block the last range's search ended in
        p = 0  # the query's own list: the position the last range's search ended at
        for w in range(windows):
            lo, hi = los[w], his[w]
            if hi <= lo:
                continue
            row = w * width - lo
            if src[j] == 0:
                # The last block starting at or before lo, galloping on from ``blk``.
                step = 1
                z = blk + 1
                while z < blocks and np.int64(db[b0 + z]) <= lo:
                    blk = z
                    z += step
                    step <<= 1
                z = min(z, blocks)
                while blk + 1 < z:
                    mid = (blk + z) >> 1
                    if np.int64(db[b0 + mid]) <= lo:
                        blk = mid
                    else:
                        z = mid
                rows = min(128, n - blk * 128)
                bit0, bits, first_doc = (
                    dstart[b0 + blk] * 32,
                    np.int64(dbits[b0 + blk]),
                    np.int64(db[b0 + blk]),
                )
                a = 0  # the block's first posting at or past lo
                z = rows
                while a < z:
                    mid = (a + z) >> 1
                    if packed(bit0, bits, first_doc, mid) < lo:
                        a = mid + 1
                    else:
                        z = mid
                while True:  # the postings in [lo, hi), into the following blocks if need be
                    if a == rows:
                        if blk + 1 >= blocks or np.int64(db[b0 + blk + 1]) >= hi:
                            break
                        blk += 1
                        rows = min(128, n - blk * 128)
                        bit0, bits, first_doc = (
                            dstart[b0 + blk] * 32,
                            np.int64(dbits[b0 + blk]),
                            np.int64(db[b0 + blk]),
                        )
                        a = 0
                    d = packed(bit0, bits, first_doc, a)
                    if d >= hi:
                        break
                    meet(d, row)
                    a += 1
            else:
                first = start[j]
                z = first + n
                a = first + p
                while a < z:  # the first posting at or past lo
                    mid = (a + z) // 2
                    if np.int64(od[mid]) < lo:
                        a = mid + 1
                    else:
                        z = mid
                while a < first + n and np.int64(od[a]) < hi:
                    meet(np.int64(od[a]), row)
                    a += 1
                p = a - first
    found, sampled = tally[0], tally[1]
    if sampled == 0:
        return np.int64(-1)
    return min(np.int64(np.round(found * (total / sampled))), np.int64(num_docs - excluded.shape[0]))


# Postings a match count scatters at most (~1-2 ns each: a few milliseconds); past it the
# count is estimated, and said to be ("about").
EXACT_COUNT_POSTINGS = 4_000_000
# Where the OR top-k pruned, its matches are counted apart up to this many documents, and
# estimated beyond ("about N results") by ``sampled_count``, as Lucene's ``IndexSearcher``
# stops counting at its ``TOTAL_HITS_THRESHOLD`` (1,000; Elasticsearch's ``track_total_hits``
# at 10,000): an exact count of a common query's tens of thousands of matches cost a sixth of
# the OR kernel's time, to print digits nobody reads. The estimate on the benchmark's 470 OR
# queries past 1,000 matches: -0.1 / +3.7 / +7.1 % at p10 / p50 / p90, -7.6 to +14 % at worst;
# against counting exactly to 10,000, OR p95 1.012 -> 0.967 ms and as typed 0.667 -> 0.629 in
# one process, alternated (docs/benchmarks.md, stop 47).
COUNT_EXACTLY_UP_TO = 1_000
# Beyond, ``sampled_count`` reads about this many of the lists' postings, in this many ranges.
SAMPLE_POSTINGS = 2_048
SAMPLE_WINDOWS = 32


def count_matches(
    terms: Sequence[Listed],
    num_docs: int,
    excluded: np.ndarray | None = None,
    allowed: np.ndarray | None = None,
    limit: int = EXACT_COUNT_POSTINGS,
) -> tuple[int, bool]:
    """(documents holding any of ``terms``, not ``excluded``, ``allowed``; whether exact).

    Exact (one scatter of the postings into a table by document) up to ``limit`` postings;
    beyond, an estimate that takes the terms as independent, ``N * (1 - prod(1 - df_t / N))``,
    scaled by the share of documents allowed. Either way it depends on the query only,
    never on how deep the results are read, so every page states the same count.
    """
    live = [t for t in terms if t.length]
    if not live or num_docs <= 0:
        return 0, True
    if sum(int(t.length) for t in live) <= limit:
        held = np.zeros(num_docs, dtype=bool)
        for t in live:
            held[t.docs] = True
        if excluded is not None and excluded.shape[0]:
            held[excluded] = False
        if allowed is not None:
            held &= allowed
        return int(np.count_nonzero(held)), True
    removed = int(excluded.shape[0]) if excluded is not None else 0
    return independent_estimate([int(t.length) for t in live], num_docs, removed, allowed), False


def independent_estimate(
    lengths: Sequence[int], num_docs: int, removed: int, allowed: np.ndarray | None
) -> int:
    """Documents holding any of lists of ``lengths`` postings, the words taken as independent,
    ``N * (1 - prod(1 - df_t / N))``, scaled by the share of documents ``allowed`` and not
    among the ``removed``: 22-33 % high on the benchmark (words co-occur), the last resort
    where ``sampled_count``'s ranges met no posting."""
    if num_docs <= 0:
        return 0
    missing = 1.0
    for n in lengths:
        missing *= 1.0 - min(1.0, n / num_docs)
    share = float(np.count_nonzero(allowed)) / num_docs if allowed is not None and allowed.shape[0] else 1.0
    estimate = num_docs * (1.0 - missing) * share * max(0.0, 1.0 - removed / num_docs)
    return int(round(estimate))
