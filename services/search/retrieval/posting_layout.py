"""Where a query's posting lists lie, as the compiled kernels read them, and each list's
block maxima (the largest impact of every ``BLOCK`` postings, Ding & Suel 2011).

A segment's lists are read in place from its memory-mapped arrays (``PostingSource``, with
the block maxima derived when the segment opens); the lists a query builds itself (a word's
forms joined, a segment set's merged lists) are joined once (``lay_out``). One layout for
every list keeps the kernels to one compiled signature (``services.search.retrieval.blockmax``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from services.ranking.impact_levels import LEVEL_DTYPE

BLOCK = 128  # postings per block, as Lucene's and PISA's block codecs cut them
# A list's impacts as a query passes them: float32, or what gives them (``QueryTerm.read_impacts``:
# a segment's list is read in place as stored, and converted only where it is not).
Impacts = np.ndarray | Callable[[], np.ndarray]


@dataclass(frozen=True)
class PostingSource:
    """A segment's postings (every term's list one after another, ``offsets`` per term),
    their impacts as stored (levels: ``services.ranking.impact_levels``, an impact is
    ``float32(level) * scale[t]``) and the largest impact of each block of ``BLOCK``
    postings of each list."""

    docs: np.ndarray  # uint32
    levels: np.ndarray  # uint8
    scale: np.ndarray  # float32 per term
    offsets: np.ndarray  # int64, a term's postings are docs[offsets[t]:offsets[t + 1]]
    block_first: np.ndarray  # int64, a term's blocks are block_max[block_first[t]:block_first[t + 1]]
    block_max: np.ndarray  # float32


def block_maxima(offsets: np.ndarray, levels: np.ndarray, scale: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(each term's first block, the largest impact of every block): blocks of ``BLOCK``
    postings counted from each list's start, one pass over the levels (the largest level
    times the term's step is the largest impact: the float32 product is monotone)."""
    offsets = np.asarray(offsets, dtype=np.int64)
    lengths = np.diff(offsets)
    blocks = (lengths + BLOCK - 1) // BLOCK
    first = np.concatenate([[0], np.cumsum(blocks)]).astype(np.int64)
    total = int(first[-1])
    if total == 0:
        return first, np.zeros(0, np.float32)
    within = np.arange(total, dtype=np.int64) - np.repeat(first[:-1], blocks)
    starts = np.repeat(offsets[:-1], blocks) + within * BLOCK
    top = np.maximum.reduceat(np.asarray(levels), starts).astype(np.float32)
    return first, top * np.repeat(np.asarray(scale, dtype=np.float32), blocks)


def list_block_maxima(impacts: np.ndarray) -> np.ndarray:
    """The block maxima of one list (``block_maxima`` of a single term)."""
    if impacts.shape[0] == 0:
        return np.zeros(0, np.float32)
    return np.maximum.reduceat(impacts, np.arange(0, impacts.shape[0], BLOCK)).astype(np.float32)


@dataclass(frozen=True)
class ListLayout:
    """Where each of a query's lists lies, as the kernels read them: list ``j`` is
    ``(base_* if src[j] == 0 else own_*)[start[j] : start[j] + length[j]]``, its block maxima
    from ``block_start[j]`` on. The segment's lists are read in place; the lists the query
    built are joined once."""

    base_docs: np.ndarray
    base_levels: np.ndarray
    base_blocks: np.ndarray
    own_docs: np.ndarray
    own_impacts: np.ndarray
    own_blocks: np.ndarray
    src: np.ndarray
    start: np.ndarray
    length: np.ndarray
    block_start: np.ndarray
    scale: np.ndarray  # float32: the step of a segment list's levels (1 for the query's own lists)


def lay_out(
    source: PostingSource | None,
    lists: Sequence[tuple[int | None, np.ndarray, Impacts]],
    blocks: bool = True,
) -> ListLayout:
    """The layout of ``lists`` (per list: its term id in ``source`` or None, documents
    ascending, and its impacts, float32, or what gives them: asked only of a list the query
    built, a segment's list is read in place); ``blocks=False``: no block maxima for the
    query's own lists."""
    m = len(lists)
    src = np.zeros(m, np.int64)
    start = np.zeros(m, np.int64)
    length = np.zeros(m, np.int64)
    block_start = np.zeros(m, np.int64)
    scale = np.ones(m, np.float32)
    own_docs: list[np.ndarray] = []
    own_impacts: list[np.ndarray] = []
    own_blocks: list[np.ndarray] = []
    own_at = own_block_at = 0
    for j, (term, docs, impacts_of) in enumerate(lists):
        length[j] = docs.shape[0]
        if source is not None and term is not None:
            start[j] = int(source.offsets[term])
            block_start[j] = int(source.block_first[term])
            scale[j] = source.scale[term]
            continue
        impacts = impacts_of() if callable(impacts_of) else impacts_of
        src[j] = 1
        start[j], block_start[j] = own_at, own_block_at
        own_docs.append(docs)
        own_impacts.append(impacts)
        own_at += docs.shape[0]
        if blocks:
            own_blocks.append(list_block_maxima(np.asarray(impacts, np.float32)))
            own_block_at += own_blocks[-1].shape[0]
    empty_u32, empty_f32 = np.zeros(0, np.uint32), np.zeros(0, np.float32)
    return ListLayout(
        source.docs if source is not None else empty_u32,
        source.levels if source is not None else np.zeros(0, LEVEL_DTYPE),
        source.block_max if source is not None else empty_f32,
        _joined(own_docs, np.uint32),
        _joined(own_impacts, np.float32),
        _joined(own_blocks, np.float32),
        src,
        start,
        length,
        block_start,
        scale,
    )


def _joined(parts: list[np.ndarray], dtype: type) -> np.ndarray:
    if not parts:
        return np.zeros(0, dtype)
    if len(parts) == 1:
        return np.ascontiguousarray(parts[0], dtype=dtype)
    return np.concatenate(parts).astype(dtype, copy=False)
