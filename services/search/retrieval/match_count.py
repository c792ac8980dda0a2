"""Counting a query's matches, how many results it says it has: where the OR top-k pruned,
``lead_count`` (``blockmax`` calls it after ``blockmax_kernels.window_top_k``) counts every
document of the lists that bring candidates, once, compiled (numba) as the top-k is, reading
a segment's lists in place through their blocks (``services.storage.formats.doc_blocks``);
``count_matches`` counts (or estimates) the matches of query terms in numpy."""

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


# Postings a match count scatters at most (~1-2 ns each: a few milliseconds); past it the
# count is estimated, and said to be ("about").
EXACT_COUNT_POSTINGS = 4_000_000
# Where the OR top-k pruned, its matches are counted apart up to this many documents, and
# estimated beyond ("about N results"), as Elasticsearch's ``track_total_hits`` (10,000) and
# Lucene's ``TOTAL_HITS_THRESHOLD`` (1,000) stop counting: an exact count of a common query's
# tens of thousands of matches cost a sixth of the OR kernel's time, to print digits nobody reads.
COUNT_EXACTLY_UP_TO = 10_000


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
    missing = 1.0
    for t in live:
        missing *= 1.0 - min(1.0, t.length / num_docs)
    share = float(np.count_nonzero(allowed)) / num_docs if allowed is not None else 1.0
    removed = int(excluded.shape[0]) if excluded is not None else 0
    estimate = num_docs * (1.0 - missing) * share * max(0.0, 1.0 - removed / num_docs)
    return int(round(estimate)), False
