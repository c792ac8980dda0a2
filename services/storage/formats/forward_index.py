"""The forward index as a segment stores it (format 11): each document's entries as one run
of prefix codes in a bit stream, read by feedback ten documents a query.

An entry is a term id and its title + body + meta frequency; a document's term ids ascend,
so each is stored as its gap from the one before (the first as itself). A number of ``b``
bits is its top bit, always 1, and ``b - 1`` bits below it (0 is 0 bits), so an entry is

    code      the pair (bits of the gap, bits of the frequency): a canonical Huffman code of
              at most ``FORWARD_CODE_BITS`` bits, built from the segment's own counts of pairs
    gap       the gap's bits below its top one
    tf        the frequency's bits below its top one

least significant bit first, entry after entry, document after document (``fwd_bits``:
uint32 words, then two spare words a read may touch). ``fwd_starts[d]`` is the bit where
document d's entries start (``fwd_offsets`` still counts them). The code is read with a
table of ``2 ** FORWARD_CODE_BITS`` rows (``fwd_code_lengths``, ``fwd_code_gap_bits``,
``fwd_code_tf_bits``): the stream's next bits index a row, which gives the code's length and
the two numbers' bits (how deflate's decoders read a canonical code).

Why a code per entry and not blocks of one width (``bitpack``): the gaps run from 1 to tens
of thousands in one document, so a block's width is set by its few wide gaps; the pairs'
code spends about 4.5 bits where the widths differ and the numbers' own bits after it
(docs/benchmarks.md, "Issue 31: the forward index coded": 23.7 MB against 53.4 byte-aligned
on the 100k benchmark, for about 17 µs more a feedback query). The compiled reader decodes
an entry at a time; ``forward_lists_reference`` decodes the same stream in numpy, a step of
every document at once, and is tested equal.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from services.compiled import compiled_for_the_build, compiled_on_first_use
from services.storage.formats import bitpack
from services.storage.formats.segment import FORWARD_CODE_BITS

_TF_WIDTHS = 17  # a frequency (uint16) takes 0 .. 16 bits
_GAP_WIDTHS = 33  # a gap (of uint32 term ids) 0 .. 32
_PAIRS = _GAP_WIDTHS * _TF_WIDTHS  # code symbols: gap bits * _TF_WIDTHS + frequency bits
_WIDTHS16 = bitpack.bit_widths(np.arange(1 << 16))  # the bits of every 16-bit number


def compact_forward(offsets: np.ndarray, terms: np.ndarray, tfs: np.ndarray) -> dict[str, np.ndarray]:
    """The stored forward index (``fwd_starts``, ``fwd_bits``, ``fwd_code_*``) of the plain
    one: document d's entries are ``terms[off[d]:off[d+1]]`` (ascending) and their ``tfs``.
    Two compiled passes (``services.compiled.compiled_for_the_build``: the publish step runs
    them, never a MapReduce task nor a query): the pairs counted, the code built from the
    counts, the entries written. Written in numpy, a dozen passes over the entries took 10x
    the byte-aligned form's time."""
    offsets = np.asarray(offsets, dtype=np.uint64)
    terms = np.asarray(terms, dtype=np.uint32)
    tfs = np.asarray(tfs, dtype=np.uint16)
    pairs = np.zeros(_PAIRS, dtype=np.int64)
    if not _count_pairs(offsets, terms, tfs, _WIDTHS16, pairs):
        raise ValueError("compact_forward: a document's term ids are not in ascending order")
    lengths = code_lengths(pairs, FORWARD_CODE_BITS)
    codes = canonical_codes(lengths)
    symbol = np.arange(_PAIRS)
    entry_bits = lengths + np.maximum(symbol // _TF_WIDTHS - 1, 0) + np.maximum(symbol % _TF_WIDTHS - 1, 0)
    total = int((pairs * entry_bits).sum())
    words = np.zeros(-(-total // 32) + 2, dtype=np.uint32)  # + the spare words a read may touch
    starts = np.zeros(offsets.shape[0], dtype=np.uint64)
    _write_entries(offsets, terms, tfs, _WIDTHS16, lengths, codes, words, starts)
    return {"fwd_starts": starts, "fwd_bits": words, **decode_table(lengths, codes)}


@compiled_for_the_build
def _count_pairs(offsets, terms, tfs, widths16, pairs):  # type: ignore[no-untyped-def]
    """Count each entry's pair (bits of its gap, bits of its frequency) into ``pairs``;
    False if a document's term ids descend somewhere."""
    for d in range(offsets.shape[0] - 1):
        before = np.int64(0)
        for e in range(np.int64(offsets[d]), np.int64(offsets[d + 1])):
            gap = np.int64(terms[e]) - before
            if gap < 0:
                return False
            before = np.int64(terms[e])
            high = gap >> 16
            gap_bits = 16 + np.int64(widths16[high]) if high > 0 else np.int64(widths16[gap])
            pairs[gap_bits * _TF_WIDTHS + np.int64(widths16[tfs[e]])] += 1
    return True


@compiled_for_the_build
def _write_entries(offsets, terms, tfs, widths16, lengths, codes, words, starts):  # type: ignore[no-untyped-def]
    """Write every entry into ``words`` (zeros, long enough) and each document's first bit
    into ``starts``: its pair's code, then the gap's and the frequency's bits below their
    top ones, each part (at most 32 bits) or-ed into the one or two words it falls in."""
    bit = np.int64(0)
    for d in range(offsets.shape[0] - 1):
        starts[d] = bit
        before = np.int64(0)
        for e in range(np.int64(offsets[d]), np.int64(offsets[d + 1])):
            gap = np.int64(terms[e]) - before
            before = np.int64(terms[e])
            tf = np.int64(tfs[e])
            high = gap >> 16
            gap_bits = 16 + np.int64(widths16[high]) if high > 0 else np.int64(widths16[gap])
            tf_bits = np.int64(widths16[tf])
            pair = gap_bits * _TF_WIDTHS + tf_bits
            for part in range(3):
                if part == 0:
                    value, size = np.int64(codes[pair]), np.int64(lengths[pair])
                elif part == 1:
                    size = gap_bits - 1 if gap_bits > 0 else np.int64(0)
                    value = gap & ((np.int64(1) << size) - 1)
                else:
                    size = tf_bits - 1 if tf_bits > 0 else np.int64(0)
                    value = tf & ((np.int64(1) << size) - 1)
                if size > 0:
                    at = bit >> 5
                    shift = bit & 31
                    words[at] |= np.uint32((value << shift) & 0xFFFFFFFF)
                    if shift + size > 32:
                        words[at + 1] |= np.uint32(value >> (32 - shift))
                    bit += size
    starts[offsets.shape[0] - 1] = bit


def code_lengths(counts: np.ndarray, limit: int) -> np.ndarray:
    """Each symbol's code length (0 for a symbol never seen) in an optimal prefix code of at
    most ``limit`` bits (package-merge, Larmore and Hirschberg); a lone symbol gets 1 bit.
    Ties are broken by symbol, so the same counts give the same code."""
    symbols = [s for s in range(counts.shape[0]) if counts[s] > 0]
    lengths = np.zeros(counts.shape[0], dtype=np.int64)
    if len(symbols) > 1 << limit:
        raise ValueError(f"{len(symbols)} symbols do not fit codes of {limit} bits")
    if len(symbols) == 1:
        lengths[symbols[0]] = 1
        return lengths
    leaves: list[tuple[int, tuple[int, ...]]] = sorted((int(counts[s]), (s,)) for s in symbols)
    items = leaves
    for _ in range(limit - 1):  # each round: the leaves and the previous round's pairs
        pairs = [(x[0] + y[0], x[1] + y[1]) for x, y in zip(items[0::2], items[1::2], strict=False)]
        items = sorted(leaves + pairs)
    for _, chosen in items[: 2 * len(symbols) - 2]:
        for s in chosen:
            lengths[s] += 1
    return lengths


def canonical_codes(lengths: np.ndarray) -> np.ndarray:
    """The canonical code of these lengths (shorter codes first, then by symbol), each code's
    bits reversed: the stream is read from its least significant bit."""
    codes = np.zeros(lengths.shape[0], dtype=np.int64)
    code, previous = 0, 0
    for s in sorted(np.flatnonzero(lengths).tolist(), key=lambda s: (int(lengths[s]), s)):
        code <<= int(lengths[s]) - previous
        previous = int(lengths[s])
        codes[s] = int(format(code, f"0{previous}b")[::-1], 2)
        code += 1
    return codes


def decode_table(lengths: np.ndarray, codes: np.ndarray) -> dict[str, np.ndarray]:
    """The rows a reader looks the next ``FORWARD_CODE_BITS`` bits up in: the length of the
    code they start with and its pair's gap and frequency bits (a code of ``n`` bits fills
    the ``2 ** (FORWARD_CODE_BITS - n)`` rows that start with it)."""
    rows = 1 << FORWARD_CODE_BITS
    out = {
        "fwd_code_lengths": np.zeros(rows, np.uint8),
        "fwd_code_gap_bits": np.zeros(rows, np.uint8),
        "fwd_code_tf_bits": np.zeros(rows, np.uint8),
    }
    for s in np.flatnonzero(lengths).tolist():
        n = int(lengths[s])
        at = int(codes[s]) + (np.arange(rows >> n) << n)
        out["fwd_code_lengths"][at] = n
        out["fwd_code_gap_bits"][at] = s // _TF_WIDTHS
        out["fwd_code_tf_bits"][at] = s % _TF_WIDTHS
    return out


# What ``compact_forward`` makes (what a segment stores in place of the plain forward index), and
# what a reader passes (``forward_lists``; the search side's warm-up).
CODED_ARRAYS = ("fwd_starts", "fwd_bits", "fwd_code_lengths", "fwd_code_gap_bits", "fwd_code_tf_bits")
FORWARD_ARRAYS = ("fwd_offsets", *CODED_ARRAYS)


def forward_lists(
    arrays: Mapping[str, np.ndarray], docs: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(entries of each of ``docs``, their term ids concatenated (ascending per document),
    their title + body + meta frequencies), all int64. Compiled (``services.compiled``):
    feedback reads ten documents' 2,000 entries or so a query; ``forward_lists_reference``
    is the same in numpy."""
    entries: tuple[np.ndarray, np.ndarray, np.ndarray] = _forward_entries(
        *(arrays[name] for name in FORWARD_ARRAYS), np.asarray(docs, dtype=np.int64)
    )
    return entries


@compiled_on_first_use
def _forward_entries(offsets, starts, words, code_lengths, gap_bits, tf_bits, docs):  # type: ignore[no-untyped-def]
    """Each document's run of entries from its first bit: a code's row (the next bits), then
    the gap's and the frequency's bits below their top ones; term ids are the running sum of
    the gaps. A read takes 64 bits from two words and uses at most 32 of them."""
    n = docs.shape[0]
    counts = np.empty(n, dtype=np.int64)
    total = 0
    for x in range(n):
        counts[x] = np.int64(offsets[docs[x] + 1]) - np.int64(offsets[docs[x]])
        total += counts[x]
    terms = np.empty(total, dtype=np.int64)
    tfs = np.empty(total, dtype=np.int64)
    row_mask = np.int64(code_lengths.shape[0] - 1)  # the table has 2 ** FORWARD_CODE_BITS rows
    out = 0
    for x in range(n):
        bit = np.int64(starts[docs[x]])
        term = np.int64(0)
        for _ in range(counts[x]):
            at = bit >> 5
            window = (np.int64(words[at]) | (np.int64(words[at + 1]) << 32)) >> (bit & 31)
            row = window & row_mask
            bit += np.int64(code_lengths[row])
            g = np.int64(gap_bits[row])
            t = np.int64(tf_bits[row])
            if g > 0:
                at = bit >> 5
                window = (np.int64(words[at]) | (np.int64(words[at + 1]) << 32)) >> (bit & 31)
                term += (np.int64(1) << (g - 1)) | (window & ((np.int64(1) << (g - 1)) - 1))
                bit += g - 1
            tf = np.int64(0)
            if t > 0:
                at = bit >> 5
                window = (np.int64(words[at]) | (np.int64(words[at + 1]) << 32)) >> (bit & 31)
                tf = (np.int64(1) << (t - 1)) | (window & ((np.int64(1) << (t - 1)) - 1))
                bit += t - 1
            terms[out] = term
            tfs[out] = tf
            out += 1
    return counts, terms, tfs


def forward_lists_reference(
    arrays: Mapping[str, np.ndarray], docs: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``forward_lists`` in numpy: the documents decoded side by side, entry j of every
    document still going in one step (the compiled one is tested against it; a whole
    segment's expansion takes as many steps as its longest document has entries)."""
    docs = np.asarray(docs, dtype=np.int64)
    offsets = arrays["fwd_offsets"]
    counts = offsets[docs + 1].astype(np.int64) - offsets[docs].astype(np.int64)
    total = int(counts.sum())
    terms = np.zeros(total, dtype=np.int64)
    tfs = np.zeros(total, dtype=np.int64)
    words = arrays["fwd_bits"]
    lengths, gap_bits, tf_bits = (arrays[name].astype(np.int64) for name in CODED_ARRAYS[2:])
    row_mask = lengths.shape[0] - 1
    out = np.cumsum(counts) - counts  # where each document's next entry goes
    bit = arrays["fwd_starts"][docs].astype(np.int64)
    term = np.zeros(docs.shape[0], dtype=np.int64)
    for step in range(int(counts.max()) if docs.shape[0] else 0):
        live = np.flatnonzero(counts > step)
        row = _read(words, bit[live], row_mask)
        bit[live] += lengths[row]
        number_bits = []
        for width in (gap_bits[row], tf_bits[row]):
            low = np.maximum(width - 1, 0)
            below = _read(words, bit[live], (np.int64(1) << low) - 1)
            number_bits.append(np.where(width > 0, (np.int64(1) << low) | below, 0))
            bit[live] += low
        term[live] += number_bits[0]
        terms[out[live] + step] = term[live]
        tfs[out[live] + step] = number_bits[1]
    return counts, terms, tfs


def _read(words: np.ndarray, bit: np.ndarray, mask: np.ndarray | int) -> np.ndarray:
    """The bits from ``bit`` on (at most 32), masked."""
    at = bit >> 5
    window = words[at].astype(np.int64) | (words[at + 1].astype(np.int64) << 32)
    out: np.ndarray = (window >> (bit & 31)) & mask
    return out
