"""The OR top-k with block-max MaxScore: what a query passes, laid out for the compiled
kernels (``blockmax_kernels``, where the algorithm and its exactness are described), and
their warm-up. The lists come from two places: the segment's own arrays (``PostingSource``:
a query term's ``base_term`` names its range, read in place from the memory map) and, for
lists the query built itself (a word's several forms, a segment set's merged lists), one
concatenation of them (``posting_layout``). A fixed signature keeps each kernel to one
compilation, cached on disk: ``warm_up`` loads or compiles them before the first query.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from services.ranking.impact_levels import LEVEL_DTYPE, dequantize
from services.search.retrieval.blockmax_kernels import INNER, window_top_k
from services.search.retrieval.match_count import (
    SAMPLE_POSTINGS,
    SAMPLE_WINDOWS,
    independent_estimate,
    lead_count,
    sampled_count,
)
from services.search.retrieval.posting_layout import (
    BLOCK,
    Docs,
    Impacts,
    ListLayout,
    PostingSource,
    lay_out,
    left_out,
    source_of,
)

MAX_LISTS = 64  # a document's lists are one 64-bit mask (blockmax_kernels)


@dataclass(frozen=True)
class BlockmaxResult:
    """The best documents (unordered), their scores, and how many matches were counted."""

    docs: np.ndarray  # uint32
    final: np.ndarray
    text: np.ndarray
    counted: int  # matching documents the kernel met (all of them when ``exact``)
    exact: bool  # False: pruning skipped documents, ``counted`` is a lower bound or an estimate
    estimated: bool = False  # ``counted`` is an estimate (``_count``), not a lower bound


def top_k_blockmax(
    source: PostingSource | None,
    lists: Sequence[tuple[float, float, int | None, Docs, Impacts]],
    prior: np.ndarray,
    k: int,
    max_prior: float,
    excluded: np.ndarray | None = None,
    allowed: np.ndarray | None = None,
    count_limit: int = 0,
    probe_only: Sequence[bool] | None = None,
    candidates_only: Sequence[bool] | None = None,
    seed: np.ndarray | None = None,
    count_up_to: int = 0,
) -> BlockmaxResult:
    """The exact top-``k`` of the OR of ``lists``: per term (weight, bound ``max_impact``,
    its term id in ``source`` or None, documents ascending, what gives its impacts:
    ``posting_layout.lay_out``). ``excluded``: doc
    numbers ascending, never results; ``allowed``: a boolean per document.

    Where pruning skipped documents, the matches are counted apart, exactly, when the lists
    hold at most ``count_limit`` postings (one pass marking a byte per document), up to
    ``count_up_to`` documents when that is above 0; beyond it, or past ``count_limit``
    postings, ``counted`` is an estimate (``estimated``: ``match_count.sampled_count``'s, or
    the words taken as independent where its ranges met no posting), never below the
    documents already counted, and ``exact`` False.

    ``probe_only``: per list, True where it never brings a candidate and only adds to the
    scores of the others' documents (a feedback query's expansion terms); ``candidates_only``:
    True where a list only brings candidates, a document holding no other list is no match
    (a word of the user's that the feedback query dropped). ``seed``: documents likely to
    rank high (a feedback query's first pass's best), scored first so that the k-th score
    starts high and prunes from the first document on; the result is the same."""
    m = len(lists)
    if m > MAX_LISTS:  # a query holds at most 32 words and 10 feedback terms (query.limits)
        raise ValueError(f"top_k_blockmax: {m} lists, at most {MAX_LISTS} are ranked together")
    weights = np.array([w for w, _, _, _, _ in lists], dtype=np.float64)
    bounds = np.array([w * top for w, top, _, _, _ in lists], dtype=np.float64)
    lay = lay_out(source, [(term, docs, impacts) for _, _, term, docs, impacts in lists])
    src, start, length, bstart = lay.src, lay.start, lay.length, lay.block_start
    doc_blocks = (lay.base_doc_base, lay.base_doc_bits, lay.base_doc_start, lay.base_doc_words)
    joined_docs = lay.own_docs
    lead = np.ones(m, np.bool_) if probe_only is None else ~np.asarray(probe_only, dtype=np.bool_)
    member = np.ones(m, np.bool_) if candidates_only is None else ~np.asarray(candidates_only, dtype=np.bool_)
    excluded_docs, allowed_mask = left_out(excluded, allowed)
    prior = np.asarray(prior, dtype=np.float64)
    docs, final, text, counted, exact = window_top_k(
        *doc_blocks,
        lay.base_levels,
        lay.base_blocks,
        joined_docs,
        lay.own_impacts,
        lay.own_blocks,
        src,
        start,
        length,
        bstart,
        lay.scale,
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
    estimated = False
    if not exact:  # pruning skipped documents: counted apart
        counted, exact, estimated = _count(
            lay, lead, prior.shape[0], excluded_docs, allowed_mask, count_limit, count_up_to, counted
        )
    return BlockmaxResult(docs.astype(np.uint32), final, text, int(counted), bool(exact), estimated)


def count_any(
    source: PostingSource | None,
    lists: Sequence[tuple[int | None, Docs, Impacts]],
    num_docs: int,
    excluded: np.ndarray | None = None,
    allowed: np.ndarray | None = None,
    count_limit: int = 0,
    count_up_to: int = 0,
) -> tuple[int, bool, bool]:
    """(documents holding any of ``lists``, not ``excluded``, ``allowed``; whether exact;
    whether it is an estimate): counted as ``top_k_blockmax``
    counts where it pruned, without ranking (a results page that stops before the partial
    matches it counts). Per list: its term id in ``source`` or None, documents, impacts."""
    if not lists:
        return 0, True, False
    lay = lay_out(source, list(lists), blocks=False)
    excluded_docs, allowed_mask = left_out(excluded, allowed)
    lead = np.ones(len(lists), np.bool_)
    return _count(lay, lead, num_docs, excluded_docs, allowed_mask, count_limit, count_up_to, 0)


def count_arguments(
    lay: ListLayout, lead: np.ndarray, num_docs: int, excluded: np.ndarray, allowed: np.ndarray
) -> tuple[object, ...]:
    """What ``match_count.lead_count`` and ``sampled_count`` read first, in their order: the
    layout's lists, which of them bring candidates, the documents, what is left out."""
    return (
        lay.base_doc_base,
        lay.base_doc_bits,
        lay.base_doc_start,
        lay.base_doc_words,
        lay.own_docs,
        lay.src,
        lay.start,
        lay.length,
        lay.block_start,
        lead,
        num_docs,
        excluded,
        allowed,
    )


def _count(
    lay: ListLayout,
    lead: np.ndarray,
    num_docs: int,
    excluded: np.ndarray,
    allowed: np.ndarray,
    count_limit: int,
    count_up_to: int,
    counted: int,
) -> tuple[int, bool, bool]:
    """The documents of the ``lead`` lists of ``lay``: counted exactly when they hold at most
    ``count_limit`` postings, up to ``count_up_to`` documents when that is above 0; beyond,
    or past ``count_limit`` postings, estimated (``sampled_count``; the words taken as
    independent where its ranges met no posting), never below ``counted`` (the documents
    already met). (counted, exact, estimated); with ``count_limit`` 0 (the caller knows the
    count) nothing is counted."""
    listed = count_arguments(lay, lead, num_docs, excluded, allowed)
    exact = False
    if int(lay.length.sum()) <= count_limit:
        counted = int(lead_count(*listed, count_up_to))
        exact = count_up_to <= 0 or counted < count_up_to
    if exact or count_limit <= 0:
        return int(counted), exact, False
    guess = int(sampled_count(*listed, SAMPLE_POSTINGS, SAMPLE_WINDOWS)) if count_up_to > 0 else -1
    if guess < 0:
        lengths = lay.length[lead].tolist()
        guess = independent_estimate(lengths, num_docs, int(excluded.shape[0]), allowed)
    return max(int(counted), guess), False, True


def warm_up() -> None:
    """Compile the kernels (or load them from numba's cache) now, not in the first query, for
    the argument types queries pass: a segment's postings read-only (memory maps), its block
    maxima (derived when it opens) and the lists a query builds writable. And the count,
    which runs only where the top-k pruned (one document wanted: a block of documents
    scoring 5, then one far off scoring 1), and the estimate past it (a count capped at 2)."""
    docs = np.append(np.arange(BLOCK), np.arange(BLOCK) + 4 * INNER).astype(np.uint32)
    levels = np.repeat(np.array([5, 1], LEVEL_DTYPE), BLOCK)
    scale = np.ones(1, np.float32)
    source = source_of(docs, levels, scale, np.array([0, docs.shape[0]], np.int64))
    impacts = dequantize(levels, 1.0)
    lists = [(1.0, 5.0, 0, docs, impacts), (1.0, 5.0, None, docs[:3], impacts[:3])]
    found = top_k_blockmax(source, lists, np.zeros(5 * INNER), 1, 0.0, count_limit=4 * BLOCK)
    if not found.exact or not lead_count.signatures:
        raise RuntimeError("blockmax.warm_up no longer reaches the count: the first query would compile it")
    found = top_k_blockmax(source, lists, np.zeros(5 * INNER), 1, 0.0, count_limit=4 * BLOCK, count_up_to=2)
    if not found.estimated or not sampled_count.signatures:
        raise RuntimeError("blockmax.warm_up no longer reaches the estimate: a first query would compile it")
