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

from services.compiled import compiled_on_first_use
from services.storage.formats import bitpack
from services.storage.formats.segment import FORWARD_CODE_BITS

_TF_WIDTHS = 17  # a frequency (uint16) takes 0 .. 16 bits
_GAP_WIDTHS = 33  # a gap (of uint32 term ids) 0 .. 32
_PAIRS = _GAP_WIDTHS * _TF_WIDTHS  # code symbols: gap bits * _TF_WIDTHS + frequency bits
_TF_BITS = bitpack.bit_widths(np.arange(1 << 16)).astype(np.int32)  # the bits of every frequency
_CHUNK = 1 << 18  # entries written per numpy pass (bounds the temporaries: about 30 MB)


def compact_forward(
    offsets: np.ndarray, terms: np.ndarray, tfs: np.ndarray, chunk: int = _CHUNK
) -> dict[str, np.ndarray]:
    """The stored forward index (``fwd_starts``, ``fwd_bits``, ``fwd_code_*``) of the plain
    one: document d's entries are ``terms[off[d]:off[d+1]]`` (ascending) and their ``tfs``.
    Two numpy passes over whole documents' runs of about ``chunk`` entries: the pairs
    counted, then (the code built from the counts) the entries written. The bytes do not
    depend on ``chunk``. Not compiled: numba in the publish process would add its ~140 MB to
    the build's peak, which is this step's (beside near-duplicate folding)."""
    bounds = np.asarray(offsets).astype(np.int64)
    runs = _runs(bounds, chunk)
    pairs = np.zeros(_PAIRS, dtype=np.int64)
    for a, b, counts in runs:
        pairs += np.bincount(_pairs(terms, tfs, a, b, counts)[1], minlength=_PAIRS)
    lengths = code_lengths(pairs, FORWARD_CODE_BITS)
    codes = canonical_codes(lengths)
    symbol = np.arange(_PAIRS)
    gap_low, tf_low = np.maximum(symbol // _TF_WIDTHS - 1, 0), np.maximum(symbol % _TF_WIDTHS - 1, 0)
    entry_bits = lengths + gap_low + tf_low
    gap_mask, tf_mask = ((1 << gap_low) - 1).astype(np.uint64), ((1 << tf_low) - 1).astype(np.uint64)
    gap_shift, tf_shift = lengths.astype(np.uint64), (lengths + gap_low).astype(np.uint64)
    total = int((pairs * entry_bits).sum())
    used = -(-total // 32) + 2  # + the spare words a read may touch
    words = np.zeros(-(-used // 2), dtype=np.uint64)  # the stream, written 64 bits at a time
    starts = np.full(bounds.shape[0], total, dtype=np.uint64)
    at = 0
    for a, b, counts in runs:
        gaps, pair = _pairs(terms, tfs, a, b, counts)
        values = (gaps.view(np.uint64) & gap_mask[pair]) << gap_shift[pair]
        values |= (np.asarray(tfs[a:b]).astype(np.uint64) & tf_mask[pair]) << tf_shift[pair]
        values |= codes[pair].astype(np.uint64)
        sizes = entry_bits[pair]
        begins = np.cumsum(sizes) - sizes + at
        at += int(sizes.sum())
        _put(words, begins, values)
        first, last = np.searchsorted(bounds[:-1], [a, b], "left")
        starts[first:last] = begins[bounds[first:last] - a]
    stream = words.view(np.uint32)[:used]  # each word's low half first (a segment is little-endian)
    return {"fwd_starts": starts, "fwd_bits": stream, **decode_table(lengths, codes)}


def _runs(bounds: np.ndarray, chunk: int) -> list[tuple[int, int, np.ndarray]]:
    """(first entry, end, entries of each document in it) of whole documents' runs of about
    ``chunk`` entries: a gap is within a document."""
    entries = int(bounds[-1])
    edges = np.unique(np.append(bounds[np.searchsorted(bounds, np.arange(0, entries, chunk))], entries))
    out = []
    for a, b in zip(edges[:-1].tolist(), edges[1:].tolist(), strict=True):
        run = bounds[np.searchsorted(bounds, a, "left") : np.searchsorted(bounds, b, "right")]
        out.append((a, b, np.diff(run)))
    return out


def _pairs(
    terms: np.ndarray, tfs: np.ndarray, a: int, b: int, counts: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The gaps (int64) of entries ``a .. b - 1`` and their pairs' symbols."""
    gaps = bitpack.gaps(np.asarray(terms[a:b]), counts)  # refuses term ids out of order
    _, gap_bits = np.frexp(gaps.astype(np.float64))  # each gap's bits (0 for 0; exact below 2**53)
    return gaps, gap_bits * _TF_WIDTHS + _TF_BITS[np.asarray(tfs[a:b])]


def _put(words: np.ndarray, begins: np.ndarray, values: np.ndarray) -> None:
    """Or ``values`` (at most 58 bits: a code, 31 gap and 15 frequency bits) into the 64-bit
    ``words`` at bits ``begins`` (ascending): each falls in one word or two, and the values
    starting in one word are or-ed together first."""
    if begins.shape[0] == 0:
        return
    word = begins >> 6
    shift = (begins & 63).astype(np.uint64)
    low = values << shift
    high = (values >> np.uint64(1)) >> (np.uint64(63) - shift)  # 0 where the value fits
    firsts = np.flatnonzero(np.diff(word, prepend=-1))
    at = word[firsts]
    words[at] |= np.bitwise_or.reduceat(low, firsts)
    words[at + 1] |= np.bitwise_or.reduceat(high, firsts)


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
