"""Each term's document numbers in blocks, every one readable in place. Numpy, and one
compiled reader of a whole list (``term_docs``) for the search side.

A term's postings are cut into blocks of ``BLOCK`` from the start of its list (the blocks the
search kernels' block maxima count, ``posting_layout.block_maxima``). A block is stored as
its first document (``doc_block_base``) and every posting's offset from it in the fewest
bits that hold the block's largest (``doc_block_bits``), least significant bit first,
word-aligned per block (``doc_words``, two spare words at the end): frame of reference
(Goldstein, Ramakrishnan & Shaft, ICDE 1998), PISA's and Lucene's ``ForUtil`` blocks
without the gaps. Offsets rather than gaps, so that any posting is one read of a 64-bit
window, as the kernels probe lists (galloping, binary search); gaps, decoded a block at a
time, would save about 4.6 bits a posting more, 16.8 against 26.8 MB at 100k documents
(docs/benchmarks.md, "Issue 31: positions' starts derived, documents in blocks").

Where each block's words start is not stored: it is the running sum of the blocks' word
counts (``DocBlocks.of``), derived when a segment opens as the block maxima are.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from services.compiled import as_mapped, compiled_on_first_use
from services.storage.formats.bitpack import BLOCK, bit_widths

DOC_ARRAYS = ("doc_block_base", "doc_block_bits", "doc_words")
# ``locate_terms`` without values: read-only uint8, as a segment's impact levels are mapped, so
# that both calls are one compiled signature (``services.compiled``).
_NO_VALUES = as_mapped(np.zeros(0, np.uint8))
_PACK_BLOCKS = 1 << 13  # blocks packed per numpy pass (bounds the int64 temporaries)


def list_blocks(offsets: np.ndarray) -> np.ndarray:
    """(terms + 1) int64: term t's blocks are ``block_first[t] .. block_first[t + 1] - 1``."""
    lengths = np.diff(np.asarray(offsets, dtype=np.int64))
    return np.concatenate([[0], np.cumsum((lengths + BLOCK - 1) // BLOCK)]).astype(np.int64)


def block_rows(offsets: np.ndarray, block_first: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(each block's first posting, its number of postings), int64."""
    offsets = np.asarray(offsets, dtype=np.int64)
    blocks = np.diff(block_first)
    total = int(block_first[-1])
    within = np.arange(total, dtype=np.int64) - np.repeat(block_first[:-1], blocks)
    first = np.repeat(offsets[:-1], blocks) + within * BLOCK
    rows = np.minimum(np.repeat(offsets[1:], blocks) - first, BLOCK)
    return first, rows


def word_starts(rows: np.ndarray, bits: np.ndarray) -> np.ndarray:
    """(blocks + 1) int64: the word where each block's offsets start (the last: the end)."""
    words = (rows * np.asarray(bits, dtype=np.int64) + 31) // 32
    return np.concatenate([[0], np.cumsum(words)]).astype(np.int64)


def pack_docs(post_docs: np.ndarray, post_offsets: np.ndarray) -> dict[str, np.ndarray]:
    """The stored arrays of every term's documents (ascending per term)."""
    docs = np.asarray(post_docs)
    block_first = list_blocks(post_offsets)
    first, rows = block_rows(post_offsets, block_first)
    if first.shape[0] == 0:
        return {
            "doc_block_base": np.zeros(0, np.uint32),
            "doc_block_bits": np.zeros(0, np.uint8),
            "doc_words": np.zeros(2, np.uint32),
        }
    base = docs[first].astype(np.uint32)
    bits = bit_widths(docs[first + rows - 1].astype(np.int64) - base)
    opens_list = np.zeros(first.shape[0], bool)  # the block is its term's first
    opens_list[block_first[:-1][np.diff(block_first) > 0]] = True
    starts = word_starts(rows, bits)
    words = np.zeros(int(starts[-1]) + 2, dtype=np.uint64)  # uint64: room for the carries below
    for a in range(0, first.shape[0], _PACK_BLOCKS):
        b = min(first.shape[0], a + _PACK_BLOCKS)
        lo, hi = int(first[a]), int(first[b - 1] + rows[b - 1])
        block = np.repeat(np.arange(a, b, dtype=np.int64), rows[a:b])
        row = np.arange(lo, hi, dtype=np.int64) - first[block]
        rising = docs[lo + 1 : hi] > docs[lo : hi - 1]  # compared as stored: no wrap-around
        if not bool((rising | ((row[1:] == 0) & opens_list[block[1:]])).all()):
            raise ValueError("pack_docs: a term's documents are not in ascending order")
        if a > 0 and not opens_list[a] and not docs[lo] > docs[lo - 1]:
            raise ValueError("pack_docs: a term's documents are not in ascending order")
        offset = docs[lo:hi].astype(np.int64) - base[block]
        bit = starts[block] * 32 + row * bits[block]
        shifted = offset.astype(np.uint64) << (bit & 31).astype(np.uint64)
        at = bit >> 5
        # Offsets share no bits: a word's sum of its parts is their or (bincount sums exactly
        # below 2 ** 53, and a word's parts sum below 2 ** 32).
        low = np.bincount(at - int(starts[a]), (shifted & np.uint64(0xFFFFFFFF)).astype(np.float64))
        high = np.bincount(at + 1 - int(starts[a]), (shifted >> np.uint64(32)).astype(np.float64))
        span_words = max(low.shape[0], high.shape[0])
        part = np.zeros(span_words, np.uint64)
        part[: low.shape[0]] += low.astype(np.uint64)
        part[: high.shape[0]] += high.astype(np.uint64)
        words[int(starts[a]) : int(starts[a]) + span_words] += part
    return {
        "doc_block_base": base,
        "doc_block_bits": bits,
        "doc_words": words.astype(np.uint32),
    }


def check_doc_blocks(arrays: Mapping[str, np.ndarray]) -> None:
    """ValueError unless the blocks are those of the postings' offsets and their words end
    where the blocks' widths say (one pass over the terms and the blocks)."""
    block_first = list_blocks(arrays["post_offsets"])
    blocks = int(block_first[-1])
    base, bits = arrays["doc_block_base"], arrays["doc_block_bits"]
    if base.shape[0] != blocks or bits.shape[0] != blocks:
        raise ValueError(
            f"doc_block_base and doc_block_bits hold {base.shape[0]} and {bits.shape[0]} blocks, "
            f"the terms' postings {blocks}"
        )
    _, rows = block_rows(arrays["post_offsets"], block_first)
    if blocks and int(np.asarray(bits).max()) > 32:
        raise ValueError("doc_block_bits holds a width above 32")
    end = int(word_starts(rows, bits)[-1])
    if arrays["doc_words"].shape[0] != end + 2:
        words = arrays["doc_words"].shape[0]
        raise ValueError(f"doc_words holds {words} words, its blocks {end} and 2 spare")


@dataclass(frozen=True)
class DocBlocks:
    """A segment's document blocks with what is derived from them (``of``)."""

    offsets: np.ndarray  # int64, term t's postings are offsets[t] .. offsets[t + 1] - 1
    block_first: np.ndarray  # int64, term t's blocks start here (``list_blocks``)
    word_start: np.ndarray  # int64, block b's offsets start at this word (``word_starts``)
    base: np.ndarray  # uint32, each block's first document
    bits: np.ndarray  # uint8, each block's width
    words: np.ndarray  # uint32

    @classmethod
    def of(cls, arrays: Mapping[str, np.ndarray]) -> DocBlocks:
        """One pass over the terms' offsets and the blocks' widths (a segment's open)."""
        offsets = np.asarray(arrays["post_offsets"]).astype(np.int64)
        block_first = list_blocks(offsets)
        _, rows = block_rows(offsets, block_first)
        bits = arrays["doc_block_bits"]
        return cls(
            offsets, block_first, word_starts(rows, bits), arrays["doc_block_base"], bits, arrays["doc_words"]
        )

    def term_docs(self, term: int) -> np.ndarray:
        """Term ``term``'s documents, ascending (uint32): compiled, a block at a time (a query's
        numpy paths and filters ask for whole lists; ``range_docs`` is the same in numpy)."""
        lo, hi = int(self.offsets[term]), int(self.offsets[term + 1])
        docs: np.ndarray = _decode(
            self.base, self.bits, self.word_start, self.words, int(self.block_first[term]), hi - lo
        )
        return docs

    def locate(self, term: int, targets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For each of ``targets``: whether term ``term`` holds it, and where in its list
        (meaningful where it does). Compiled, reading only the block each target would be
        in (found by the blocks' first documents), not the whole list: a few documents looked
        up in a long list (a phrase's candidates, a segment set's superseded documents)."""
        held, at, _ = self.locate_terms(np.array([term], np.int64), targets)
        return held[0], at[0]

    def locate_terms(
        self, terms: np.ndarray, targets: np.ndarray, values: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``locate`` for several terms in one compiled call: one row per term (a feedback
        query's terms looked up in the few documents it rescores), and, when ``values`` (one
        per posting, as the postings lie: a segment's impact levels) is given, the value at
        each posting found (0 where the term is not held; otherwise an empty array). The
        terms' ranges are read in the call: gathering them in numpy first cost more than the
        lookups where a query's kernels had just evicted numpy from the caches."""
        found: tuple[np.ndarray, np.ndarray, np.ndarray] = _locate(
            self.base,
            self.bits,
            self.word_start,
            self.words,
            self.block_first,
            self.offsets,
            np.asarray(terms, dtype=np.int64),
            np.asarray(targets, dtype=np.int64),
            _NO_VALUES if values is None else values,
        )
        return found

    def range_docs(self, lo_term: int, hi_term: int) -> np.ndarray:
        """The documents of terms ``lo_term .. hi_term - 1``, one list after another (uint32)."""
        lo, hi = int(self.offsets[lo_term]), int(self.offsets[hi_term])
        lengths = np.diff(self.offsets[lo_term : hi_term + 1])
        term_start = np.repeat(self.offsets[lo_term:hi_term], lengths)
        within = np.arange(lo, hi, dtype=np.int64) - term_start
        block = np.repeat(self.block_first[lo_term:hi_term], lengths) + (within >> 7)
        return self._read(block, within & (BLOCK - 1))

    def _read(self, block: np.ndarray, j: np.ndarray) -> np.ndarray:
        width = self.bits[block].astype(np.int64)
        bit = self.word_start[block] * 32 + j * width
        at = bit >> 5
        window = self.words[at].astype(np.uint64) | (self.words[at + 1].astype(np.uint64) << np.uint64(32))
        mask = (np.uint64(1) << width.astype(np.uint64)) - np.uint64(1)
        offset = (window >> (bit & 31).astype(np.uint64)) & mask
        docs: np.ndarray = (self.base[block].astype(np.uint64) + offset).astype(np.uint32)
        return docs


def warm_up() -> None:
    """Load (or compile) ``term_docs``' kernel for a memory-mapped segment's arrays."""
    offsets = np.array([0, 3], np.uint64)
    packed = pack_docs(np.array([2, 5, 9], np.uint32), offsets)
    blocks = DocBlocks.of({"post_offsets": offsets, **{name: as_mapped(a) for name, a in packed.items()}})
    if blocks.term_docs(0).tolist() != [2, 5, 9]:
        raise RuntimeError("doc_blocks.warm_up read the wrong documents")
    held, at = blocks.locate(0, np.array([1, 5, 7, 9], np.int64))
    if held.tolist() != [False, True, False, True] or at[[1, 3]].tolist() != [1, 2]:
        raise RuntimeError("doc_blocks.warm_up located the wrong documents")


@compiled_on_first_use
def _decode(base, bits, word_start, words, first_block, n):  # type: ignore[no-untyped-def]
    """``n`` documents from block ``first_block`` on: each block's first plus its offsets."""
    out = np.empty(n, dtype=np.uint32)
    for b in range((n + 127) >> 7):
        block = first_block + b
        width = np.int64(bits[block])
        first = np.int64(base[block])
        mask = (np.int64(1) << width) - 1
        bit = word_start[block] * 32
        for p in range(b << 7, min((b + 1) << 7, n)):
            at = bit >> 5
            window = (np.int64(words[at]) | (np.int64(words[at + 1]) << 32)) >> (bit & 31)
            out[p] = first + (window & mask)
            bit += width
    return out


@compiled_on_first_use
def _locate(base, bits, word_start, words, block_first, offsets, terms, targets, values):  # type: ignore[no-untyped-def]
    """For list ``terms[t]`` (blocks from ``block_first``, postings from ``offsets``) and each target:
    its block (the last whose first document is not above it), then its offset from that
    first by binary search over the block's packed offsets. Ascending targets gallop on from
    the last one's block (a few nearby reads, not a binary search over the list's blocks
    each); a target below the last one searches them all. ``values`` (when not empty): the
    value at each posting found."""
    k = targets.shape[0]
    n_terms = terms.shape[0]
    held = np.zeros((n_terms, k), dtype=np.bool_)
    at = np.zeros((n_terms, k), dtype=np.int64)
    with_values = values.shape[0] > 0
    found = np.zeros((n_terms, k) if with_values else (0, 0), dtype=values.dtype)
    for t in range(n_terms):
        first_block = block_first[terms[t]]
        first_posting = offsets[terms[t]]
        n = offsets[terms[t] + 1] - first_posting
        blocks = (n + 127) >> 7
        last = np.int64(-1)  # the previous target, its block ``lo``
        lo = 0
        for x in range(k):
            d = targets[x]
            if blocks == 0 or np.int64(base[first_block]) > d:
                continue
            if d < last:
                lo = 0
            last = d
            hi = lo + 1  # the first block known to start above d (or the end), by doubling steps
            step = 1
            while hi < blocks and np.int64(base[first_block + hi]) <= d:
                lo = hi
                hi += step
                step <<= 1
            hi = min(hi, blocks)
            while lo + 1 < hi:
                mid = (lo + hi) >> 1
                if np.int64(base[first_block + mid]) <= d:
                    lo = mid
                else:
                    hi = mid
            block = first_block + lo
            width = np.int64(bits[block])
            mask = (np.int64(1) << width) - 1
            bit0 = word_start[block] * 32
            want = d - np.int64(base[block])
            rows = min(128, n - (lo << 7))
            a = 0
            z = rows
            value = np.int64(-1)
            while a < z:  # the first offset >= want
                mid = (a + z) >> 1
                bit = bit0 + mid * width
                w = bit >> 5
                value = ((np.int64(words[w]) | (np.int64(words[w + 1]) << 32)) >> (bit & 31)) & mask
                if value < want:
                    a = mid + 1
                else:
                    z = mid
            at[t, x] = (lo << 7) + min(a, rows - 1)
            if a < rows:
                bit = bit0 + a * width
                w = bit >> 5
                value = ((np.int64(words[w]) | (np.int64(words[w + 1]) << 32)) >> (bit & 31)) & mask
                held[t, x] = value == want
                if with_values and value == want:
                    found[t, x] = values[first_posting + at[t, x]]
    return held, at, found
