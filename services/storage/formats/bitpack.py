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
for the field frequencies of a few postings, the positions of a phrase's candidates
and the forward index of a few documents. Lists of ascending numbers (positions, term
ids) are stored as gaps (``gaps``) and summed back (``ungap``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

BLOCK = 128
_WORDS_PER_BIT = BLOCK // 32  # a column of width w takes 4 w words in a block
_CHUNK_BLOCKS = 1 << 15  # blocks packed per numpy pass (bounds the temporaries to ~100 MB)


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
        cols.append(arr.astype(np.uint64, copy=False))
    nblocks = -(-n // BLOCK)
    widths = np.zeros((nblocks, len(cols)), dtype=np.uint8)
    padded = nblocks * BLOCK
    for c, col in enumerate(cols):
        full = np.zeros(padded, dtype=np.uint64)
        full[:n] = col
        widths[:, c] = bit_widths(full.reshape(nblocks, BLOCK).max(axis=1) if nblocks else full)
    block_words = widths.astype(np.uint64).sum(axis=1) * _WORDS_PER_BIT
    starts = np.zeros(nblocks + 1, dtype=np.uint64)
    np.cumsum(block_words, out=starts[1:])
    words = np.zeros(int(starts[-1]) + 2, dtype=np.uint32)  # + the spare words a window may read
    before = np.concatenate(
        [np.zeros((nblocks, 1), np.int64), np.cumsum(widths, axis=1, dtype=np.int64)], axis=1
    )
    for first in range(0, nblocks, _CHUNK_BLOCKS):
        last = min(nblocks, first + _CHUNK_BLOCKS)
        lo, hi = first * BLOCK, min(n, last * BLOCK)
        if hi <= lo:
            continue
        base = int(starts[first])
        span = int(starts[last]) - base + 2
        acc = np.zeros(span, dtype=np.float64)  # disjoint bit fields add up to their OR, exactly
        rows = np.arange(lo, hi, dtype=np.int64)
        block = rows >> 7
        j = rows & (BLOCK - 1)
        for c, col in enumerate(cols):
            w = widths[block, c].astype(np.int64)
            bit = (starts[block].astype(np.int64) - base + _WORDS_PER_BIT * before[block, c]) * 32 + j * w
            values = col[lo:hi]
            word = bit >> 5
            shift = (bit & 31).astype(np.uint64)
            shifted = values << shift  # at most 32 + 31 bits: fits
            acc += np.bincount(
                word, weights=(shifted & np.uint64(0xFFFFFFFF)).astype(np.float64), minlength=span
            )
            acc += np.bincount(
                word + 1, weights=(shifted >> np.uint64(32)).astype(np.float64), minlength=span
            )
        words[base : base + span - 1] |= acc[: span - 1].astype(np.uint64).astype(np.uint32)
    return words, starts, widths.reshape(-1)


def bit_widths(values: np.ndarray) -> np.ndarray:
    """Bits needed for each of ``values`` (0 for 0), as uint8."""
    values = np.asarray(values, dtype=np.uint64)
    _, exponent = np.frexp(values.astype(np.float64))  # exact below 2**53
    return np.where(values == 0, 0, exponent).astype(np.uint8)


def unpack(
    words: np.ndarray, starts: np.ndarray, widths: np.ndarray, columns: int, column: int, rows: np.ndarray
) -> np.ndarray:
    """Column ``column`` of a packed table of ``columns`` columns at ``rows`` (any order), as uint32."""
    rows = np.asarray(rows, dtype=np.int64)
    if rows.shape[0] == 0:
        return np.zeros(0, dtype=np.uint32)
    block = rows >> 7
    table = widths.reshape(-1, columns)
    w = table[block, column].astype(np.int64)
    before = table[block, :column].sum(axis=1, dtype=np.int64) if column else 0
    bit = (starts[block].astype(np.int64) + _WORDS_PER_BIT * before) * 32 + (rows & (BLOCK - 1)) * w
    word = bit >> 5
    window = words[word].astype(np.uint64) | (words[word + 1].astype(np.uint64) << np.uint64(32))
    mask = (np.uint64(1) << w.astype(np.uint64)) - np.uint64(1)
    values: np.ndarray = ((window >> (bit & 31).astype(np.uint64)) & mask).astype(np.uint32)
    return values


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
    deltas = np.asarray(deltas, dtype=np.int64)
    running = np.concatenate([[0], np.cumsum(deltas)])
    before = np.cumsum(counts) - counts
    sums: np.ndarray = running[1:] - np.repeat(running[np.asarray(before, dtype=np.int64)], counts)
    return sums
