"""Bit-packed blocks of 128 unsigned 32-bit integers, readable row by row. Pure numpy.

A packed table of ``n`` rows and ``C`` columns is three arrays:

    words   uint32  the blocks' bits, block after block, then two spare words
    starts  uint64  block b's first word (blocks + 1 entries; the last is where the words end)
    widths  uint8   bits per value of each column in each block (blocks x C, row-major)

Block b holds rows ``128 b .. 128 b + 127``. Its column c takes ``4 * widths[b, c]``
words (128 values of that many bits), at word ``starts[b] + 4 * sum(widths[b, :c])``;
value j of the column sits at bit ``j * width`` of that run, least significant bits
first. Each block takes the width of its own largest value, so a block of small
numbers costs little whatever the rest hold (the per-block widths of PForDelta and
Lucene's postings, without their exceptions).

Any row is read with one 64-bit window of two words: numpy reads any set of rows at
once (``unpack``) without decoding whole blocks, which is what the search side needs
for the field frequencies of a few postings and the positions of a phrase's candidates;
``unpack_range`` decodes long runs a whole block at a time. Lists of ascending numbers
(positions, term ids) are stored as gaps (``gaps``) and summed back (``ungap``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

BLOCK = 128
_WORDS_PER_BIT = BLOCK // 32  # a column of width w takes 4 w words in a block
_CHUNK_BLOCKS = 1 << 14  # blocks packed or decoded per numpy pass (bounds the temporaries)


def pack(columns: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(words, starts, widths) of equal-length columns of integers in 0 .. 2**32 - 1."""
    if not columns:
        raise ValueError("pack needs at least one column")
    n = int(np.asarray(columns[0]).shape[0])
    cols = []
    for col in columns:
        arr = np.asarray(col)
        if arr.ndim != 1 or arr.shape[0] != n:
            raise ValueError("packed columns must be one-dimensional and of one length")
        if arr.shape[0] and (arr.dtype.kind not in "ui" or int(arr.min()) < 0 or int(arr.max()) > 0xFFFFFFFF):
            raise ValueError("packed values must be integers in 0 .. 2**32 - 1")
        cols.append(arr)
    nblocks = -(-n // BLOCK)
    widths = np.zeros((nblocks, len(cols)), dtype=np.uint8)
    for c, col in enumerate(cols):
        widths[:, c] = bit_widths(_blocks_of(col, 0, nblocks).max(axis=1))
    block_words = widths.astype(np.uint64).sum(axis=1) * _WORDS_PER_BIT
    starts = np.zeros(nblocks + 1, dtype=np.uint64)
    np.cumsum(block_words, out=starts[1:])
    words = np.zeros(int(starts[-1]) + 2, dtype=np.uint32)  # + the spare words a window may read
    offsets = _column_offsets(starts, widths.reshape(-1), len(cols))
    for first in range(0, nblocks, _CHUNK_BLOCKS):
        last = min(nblocks, first + _CHUNK_BLOCKS)
        for c, col in enumerate(cols):
            values = _blocks_of(col, first, last).astype(np.uint64)
            w = widths[first:last, c]
            for width in np.unique(w[w > 0]).tolist():
                sel = np.flatnonzero(w == width)
                at = offsets[first + sel, c][:, None] + np.arange(_WORDS_PER_BIT * width)
                words[at] = _pack_width(values[sel], width)
    return words, starts, widths.reshape(-1)


def _blocks_of(col: np.ndarray, first: int, last: int) -> np.ndarray:
    """Blocks ``first .. last - 1`` of a column as a (blocks, 128) array, zero past its end."""
    part = col[first * BLOCK : last * BLOCK]
    if part.shape[0] < (last - first) * BLOCK:
        part = np.concatenate([part, np.zeros((last - first) * BLOCK - part.shape[0], dtype=part.dtype)])
    return part.reshape(last - first, BLOCK)


def _layout(width: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For a width: each value's word and shift in its run, and the first value of each word."""
    bit = np.arange(BLOCK, dtype=np.int64) * width
    word, shift = bit >> 5, (bit & 31).astype(np.uint64)
    firsts = np.searchsorted(word, np.arange(_WORDS_PER_BIT * width))  # every word holds a start (w <= 32)
    return word, shift, firsts


def _pack_width(values: np.ndarray, width: int) -> np.ndarray:
    """(k, 4 width) uint32 words of k blocks of 128 values (uint64) of ``width`` bits."""
    _, shift, firsts = _layout(width)
    shifted = values << shift
    low = np.add.reduceat(shifted & np.uint64(0xFFFFFFFF), firsts, axis=1)  # disjoint bits: + is |
    high = np.add.reduceat(shifted >> np.uint64(32), firsts, axis=1)  # spills into the next word
    low[:, 1:] += high[:, :-1]
    return low.astype(np.uint32)


def _column_offsets(starts: np.ndarray, widths: np.ndarray, columns: int) -> np.ndarray:
    """(blocks, columns) int64: the first word of each block's run of each column."""
    table = widths.reshape(-1, columns).astype(np.int64)
    before = np.cumsum(table, axis=1) - table
    out: np.ndarray = starts[:-1].astype(np.int64)[:, None] + _WORDS_PER_BIT * before
    return out


def unpack_range(
    words: np.ndarray, starts: np.ndarray, widths: np.ndarray, columns: int, column: int, lo: int, hi: int
) -> np.ndarray:
    """Column ``column`` of rows ``lo .. hi - 1`` as uint32, decoded a whole block at a time
    (blocks of one width together): the way to read a long run of rows."""
    if hi <= lo:
        return np.zeros(0, dtype=np.uint32)
    first, last = lo // BLOCK, -(-hi // BLOCK)
    out = np.zeros((last - first, BLOCK), dtype=np.uint32)
    for a in range(first, last, _CHUNK_BLOCKS):
        b = min(last, a + _CHUNK_BLOCKS)
        offsets = _column_offsets(starts[a : b + 1], widths[a * columns : b * columns], columns)[:, column]
        w = widths[a * columns + column : b * columns : columns]
        for width in np.unique(w[w > 0]).tolist():
            sel = np.flatnonzero(w == width)
            word, shift, _ = _layout(width)
            # Each block's run (and the word after it) as a row, then the values' windows from
            # the rows: one index per block, not per value (twice as fast as a gather per value).
            runs = sliding_window_view(words, _WORDS_PER_BIT * width + 1)[offsets[sel]].astype(np.uint64)
            window = runs.take(word, axis=1) | (runs.take(word + 1, axis=1) << np.uint64(32))
            mask = np.uint64((1 << width) - 1)
            out[a - first + sel] = (window >> shift) & mask
    return out.reshape(-1)[lo - first * BLOCK : hi - first * BLOCK]


def bit_widths(values: np.ndarray) -> np.ndarray:
    """Bits needed for each of ``values`` (0 for 0), as uint8."""
    values = np.asarray(values, dtype=np.uint64)
    _, exponent = np.frexp(values.astype(np.float64))  # exact below 2**53
    return np.where(values == 0, 0, exponent).astype(np.uint8)


def unpack(
    words: np.ndarray, starts: np.ndarray, widths: np.ndarray, columns: int, column: int, rows: np.ndarray
) -> np.ndarray:
    """Column ``column`` of a packed table of ``columns`` columns at ``rows`` (any order), as uint32."""
    return unpack_columns(words, starts, widths, columns, (column,), rows)[0]


def unpack_columns(
    words: np.ndarray,
    starts: np.ndarray,
    widths: np.ndarray,
    columns: int,
    wanted: Sequence[int],
    rows: np.ndarray,
) -> list[np.ndarray]:
    """Columns ``wanted`` (ascending) at ``rows``, as uint32: the rows' blocks are found once.
    A query reads a handful to a few thousand rows, where numpy's cost is per call, not per
    value: every step here is one call over all the rows."""
    rows = np.asarray(rows, dtype=np.int64)
    if rows.shape[0] == 0:
        return [np.zeros(0, dtype=np.uint32) for _ in wanted]
    block = rows >> 7
    at = block * columns
    run = starts[block].astype(np.int64) * 32  # the bit where the block's first column starts
    j = rows & (BLOCK - 1)
    out = []
    done = 0
    for column in wanted:
        for c in range(done, column):  # skip the runs of the columns before this one
            run += widths[at + c].astype(np.int64) * BLOCK
        done = column
        w = widths[at + column].astype(np.int64)
        bit = run + j * w
        word = bit >> 5
        window = words[word].astype(np.uint64) | (words[word + 1].astype(np.uint64) << np.uint64(32))
        mask = (np.uint64(1) << w.astype(np.uint64)) - np.uint64(1)
        values: np.ndarray = ((window >> (bit & 31).astype(np.uint64)) & mask).astype(np.uint32)
        out.append(values)
    return out


def ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The rows ``starts[i] .. starts[i] + counts[i] - 1`` for every i, concatenated."""
    starts = np.asarray(starts, dtype=np.int64)
    counts = np.asarray(counts, dtype=np.int64)
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    before = np.cumsum(counts) - counts
    return np.repeat(starts - before, counts) + np.arange(total, dtype=np.int64)


def gaps(values: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Lists of ascending numbers (``counts[i]`` values each, concatenated) as gaps: each
    list's first value itself, then each value minus the one before it."""
    values = np.asarray(values, dtype=np.int64)
    out = values.copy()
    if values.shape[0]:
        out[1:] -= values[:-1]
        firsts = (np.cumsum(counts) - counts)[np.asarray(counts) > 0]
        out[firsts] = values[firsts]
        if int(out.min()) < 0:
            raise ValueError("gaps: a list is not in ascending order")
    return out


def ungap(deltas: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The inverse of ``gaps``: each list's running sum (int64)."""
    running = np.cumsum(deltas, dtype=np.int64)
    if running.shape[0] == 0:
        return running
    before = np.cumsum(counts) - counts  # where each list starts
    carried = running[before - 1]  # the sum of the lists before it (the first's wraps: zeroed)
    carried[before == 0] = 0
    sums: np.ndarray = running - np.repeat(carried, counts)
    return sums


class PackedAppender:
    """``pack`` of columns given a run of rows at a time, exactly: blocks of 128 rows are
    packed as they fill and the rows of an unfinished block wait for the next run. A streamed
    writer (the merge's, ``services.indexing.segment_merge``) packs a table without holding its
    columns whole; the words, starts and widths are those ``pack`` gives the whole columns."""

    def __init__(self, columns: int) -> None:
        self.columns = columns
        self._waiting: list[np.ndarray] = [np.zeros(0, np.uint64) for _ in range(columns)]
        self._words: list[np.ndarray] = []
        self._starts: list[np.ndarray] = [np.zeros(1, dtype=np.uint64)]
        self._widths: list[np.ndarray] = []
        self._end = 0  # words packed so far

    def add(self, columns: Sequence[np.ndarray]) -> None:
        """Append rows (one array per column, of one length)."""
        if len(columns) != self.columns:
            raise ValueError(f"{len(columns)} columns given to a table of {self.columns}")
        for column in columns:  # checked before the widening below could wrap a negative value
            if column.shape[0] and column.dtype.kind == "i" and int(column.min()) < 0:
                raise ValueError("packed values must be integers in 0 .. 2**32 - 1")
        columns = [np.asarray(c) for c in columns]
        waiting = self._waiting[0].shape[0]
        n = columns[0].shape[0]
        # The rows that fill the waiting block (joined: at most 127 of them), then the whole
        # blocks after them packed where they lie (no copy of the run: a range's columns are
        # tens of MB), then the rest left waiting.
        head = min(n, BLOCK - waiting) if waiting else 0
        body = (n - head) // BLOCK * BLOCK
        if waiting:
            self._wait(columns, 0, head)
            if self._waiting[0].shape[0] == BLOCK:
                self._put(pack(self._waiting))
                self._waiting = [w[:0] for w in self._waiting]
        if body:
            self._put(pack([c[head : head + body] for c in columns]))
        if head + body < n:
            self._wait(columns, head + body, n)

    def finish(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(words, starts, widths) of every row added, as ``pack`` gives them."""
        if self._waiting[0].shape[0] or not self._widths:
            self._put(pack(self._waiting))
        self._waiting = [np.zeros(0, np.uint64) for _ in range(self.columns)]
        words = np.concatenate([*self._words, np.zeros(2, dtype=np.uint32)])  # + the spare words
        starts, widths = np.concatenate(self._starts), np.concatenate(self._widths)
        self._words, self._starts, self._widths = [], [np.zeros(1, dtype=np.uint64)], []
        return words, starts, widths

    def _wait(self, columns: Sequence[np.ndarray], start: int, stop: int) -> None:
        """Rows ``start .. stop - 1`` of ``columns`` behind the rows waiting for a block."""
        self._waiting = [
            np.concatenate([w, c[start:stop].astype(np.uint64)])
            for w, c in zip(self._waiting, columns, strict=True)
        ]

    def _put(self, packed: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
        words, starts, widths = packed
        self._words.append(words[:-2])  # the spare words go once, at the end
        self._starts.append(starts[1:] + np.uint64(self._end))
        self._widths.append(widths)
        self._end += int(starts[-1])
