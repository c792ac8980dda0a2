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

from services.compiled import as_mapped
from services.ranking.impact_levels import LEVEL_DTYPE
from services.storage.formats.doc_blocks import DocBlocks, pack_docs

BLOCK = 128  # postings per block, as Lucene's and PISA's block codecs cut them
# A list's documents and impacts as a query passes them: the arrays, or what gives them
# (``QueryTerm.read_docs``, ``QueryTerm.read_impacts``: a segment's list is read in place as
# stored, and decoded or converted only where it is not).
Docs = np.ndarray | Callable[[], np.ndarray]
Impacts = np.ndarray | Callable[[], np.ndarray]


@dataclass(frozen=True)
class PostingSource:
    """A segment's postings (every term's list one after another, ``offsets`` per term): their
    documents in blocks (``services.storage.formats.doc_blocks``: a block's first document
    and each posting's offset from it, bit-packed), their impacts as stored (levels:
    ``services.ranking.impact_levels``, an impact is ``float32(level) * scale[t]``) and the
    largest impact of each block of ``BLOCK`` postings of each list. Both are blocks of
    ``BLOCK`` postings counted from each list's start: term t's are ``block_first[t]`` on."""

    doc_base: np.ndarray  # uint32, each block's first document
    doc_bits: np.ndarray  # uint8, each block's bits per offset
    doc_start: np.ndarray  # int64, the word where each block's offsets start
    doc_words: np.ndarray  # uint32
    levels: np.ndarray  # uint8
    scale: np.ndarray  # float32 per term
    offsets: np.ndarray  # int64, a term's postings are levels[offsets[t]:offsets[t + 1]]
    block_first: np.ndarray  # int64, a term's blocks are block_max[block_first[t]:block_first[t + 1]]
    block_max: np.ndarray  # float32

    @classmethod
    def of(cls, blocks: DocBlocks, levels: np.ndarray, scale: np.ndarray) -> PostingSource:
        """A segment's source from its document blocks and impact levels: the block maxima
        derived (one pass over the levels, 1.4 MB per 100k documents)."""
        first, maxima = block_maxima(blocks.offsets, levels, scale)
        return cls(
            blocks.base,
            blocks.bits,
            blocks.word_start,
            blocks.words,
            levels,
            scale,
            blocks.offsets,
            first,
            maxima,
        )

    def docs_of(self, term: int) -> np.ndarray:
        """Term ``term``'s documents, decoded (uint32): queries read them in place, warm-ups
        and tests ask for them whole."""
        blocks = DocBlocks(
            self.offsets, self.block_first, self.doc_start, self.doc_base, self.doc_bits, self.doc_words
        )
        return blocks.term_docs(term)


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


def source_of(docs: np.ndarray, levels: np.ndarray, scale: np.ndarray, offsets: np.ndarray) -> PostingSource:
    """The ``PostingSource`` of plain postings (each term's documents ascending, its levels and
    step, ``offsets`` per term) as a segment's open makes it: documents packed in blocks,
    their word starts and the block maxima derived, the stored arrays read-only as a memory
    map's are (``services.compiled.as_mapped``). For warm-ups and tests."""
    offsets = np.asarray(offsets, dtype=np.int64)
    packed = pack_docs(np.asarray(docs, dtype=np.uint32), offsets)
    blocks = DocBlocks.of({"post_offsets": offsets, **{name: as_mapped(a) for name, a in packed.items()}})
    levels, scale = as_mapped(np.asarray(levels)), as_mapped(np.asarray(scale, dtype=np.float32))
    return PostingSource.of(blocks, levels, scale)


def list_block_maxima(impacts: np.ndarray) -> np.ndarray:
    """The block maxima of one list (``block_maxima`` of a single term)."""
    if impacts.shape[0] == 0:
        return np.zeros(0, np.float32)
    return np.maximum.reduceat(impacts, np.arange(0, impacts.shape[0], BLOCK)).astype(np.float32)


@dataclass(frozen=True)
class ListLayout:
    """Where each of a query's lists lies, as the kernels read them: list ``j`` is the
    segment's (``src[j] == 0``: its documents from block ``block_start[j]`` of the ``base_doc_*``
    blocks, its levels ``base_levels[start[j] : start[j] + length[j]]``) or one the query built
    (``own_*[start[j] : start[j] + length[j]]``), its block maxima from ``block_start[j]`` on.
    The segment's lists are read in place; the lists the query built are joined once."""

    base_doc_base: np.ndarray
    base_doc_bits: np.ndarray
    base_doc_start: np.ndarray
    base_doc_words: np.ndarray
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


NO_SOURCE = PostingSource(
    np.zeros(0, np.uint32),
    np.zeros(0, np.uint8),
    np.zeros(1, np.int64),
    np.zeros(2, np.uint32),
    np.zeros(0, LEVEL_DTYPE),
    np.zeros(0, np.float32),
    np.zeros(1, np.int64),
    np.zeros(1, np.int64),
    np.zeros(0, np.float32),
)


# The query's own lists when it has none (the kernels only read them).
NO_DOCS = np.zeros(0, np.uint32)
NO_IMPACTS = np.zeros(0, np.float32)


def lay_out(
    source: PostingSource | None,
    lists: Sequence[tuple[int | None, Docs, Impacts]],
    blocks: bool = True,
) -> ListLayout:
    """The layout of ``lists`` (per list: its term id in ``source`` or None, its documents
    ascending and its impacts, float32, or what gives them: asked only of a list the query
    built, a segment's list is read in place); ``blocks=False``: no block maxima for the
    query's own lists."""
    m = len(lists)
    if source is not None and all(term is not None for term, _, _ in lists):
        # Every list the segment's (one segment, one form a word): gathered, not looped over.
        terms = np.array([term for term, _, _ in lists], dtype=np.int64)
        first = source.offsets[terms]
        return ListLayout(
            source.doc_base,
            source.doc_bits,
            source.doc_start,
            source.doc_words,
            source.levels,
            source.block_max,
            NO_DOCS,
            NO_IMPACTS,
            NO_IMPACTS,
            np.zeros(m, np.int64),
            first,
            source.offsets[terms + 1] - first,
            source.block_first[terms],
            source.scale[terms],
        )
    src = np.zeros(m, np.int64)
    start = np.zeros(m, np.int64)
    length = np.zeros(m, np.int64)
    block_start = np.zeros(m, np.int64)
    scale = np.ones(m, np.float32)
    own_docs: list[np.ndarray] = []
    own_impacts: list[np.ndarray] = []
    own_blocks: list[np.ndarray] = []
    own_at = own_block_at = 0
    for j, (term, docs_of, impacts_of) in enumerate(lists):
        if source is not None and term is not None:
            start[j] = int(source.offsets[term])
            length[j] = int(source.offsets[term + 1]) - start[j]
            block_start[j] = int(source.block_first[term])
            scale[j] = source.scale[term]
            continue
        docs = docs_of() if callable(docs_of) else docs_of
        impacts = impacts_of() if callable(impacts_of) else impacts_of
        length[j] = docs.shape[0]
        src[j] = 1
        start[j], block_start[j] = own_at, own_block_at
        own_docs.append(docs)
        own_impacts.append(impacts)
        own_at += docs.shape[0]
        if blocks:
            own_blocks.append(list_block_maxima(np.asarray(impacts, np.float32)))
            own_block_at += own_blocks[-1].shape[0]
    base = source if source is not None else NO_SOURCE
    return ListLayout(
        base.doc_base,
        base.doc_bits,
        base.doc_start,
        base.doc_words,
        base.levels,
        base.block_max,
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


def left_out(excluded: np.ndarray | None, allowed: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """(``excluded`` documents, uint32; the ``allowed`` mask, bool) as the kernels take them:
    empty arrays for "none" (one compiled signature whether a query has them or not)."""
    return (
        _NONE_EXCLUDED if excluded is None else np.asarray(excluded, dtype=np.uint32),
        _ALL_ALLOWED if allowed is None else np.asarray(allowed, dtype=np.bool_),
    )


_NONE_EXCLUDED = np.zeros(0, np.uint32)
_ALL_ALLOWED = np.zeros(0, np.bool_)
