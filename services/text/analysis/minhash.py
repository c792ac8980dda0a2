"""Near-duplicate groups by MinHash and LSH, for a whole collection at once (numpy).

Near-duplicates are pages whose text differs in a few tokens only: an error page that
echoes the URL it could not find, one catalogue under many session ids, a notice stamped
with the day's date. Exact copies are folded by the crawler (same bytes, one document);
these are folded when the index is built: documents whose sets of index terms have a
Jaccard resemblance of at least ``RESEMBLANCE`` (Broder, "On the resemblance and
containment of documents", 1997: 0.9 for AltaVista's clusters) form a group, and search
shows each group once, under its first-crawled member, the others listed as "also at".

Why resemblance and not SimHash distance: a 64-bit SimHash within 3 bits (Manku et al.,
WWW 2007) is a cosine of about 0.99, which a 30-word "not found" page misses when it
echoes a two-word path (7-12 bits apart here); the share of common words does not depend
on the page's length.

Signatures are datasketch's MinHash (its documented "legacy" scheme: ``sha1_hash32`` of each
term, ``(a*h + b) mod (2^61 - 1)`` truncated to 32 bits, the library's own permutations), bit
for bit (the unit tests compare them with ``datasketch.MinHash``). The default permutations
are the library's, kept here as constants, and its 32-bit SHA-1 is one line of ``hashlib``:
importing datasketch pulls in scipy.integrate, 0.45-0.55 s of the build's start-up on one
core, for two arrays of 16 numbers (a test checks both against the library); other
parameters still ask the library. What differs is that each
term is hashed once for the whole collection and a document's signature is a minimum over
its terms' rows, where the library's per-document loop hashes every term again for each page
(docs/performance-notes.md). Candidates are documents that agree on all rows of one band (LSH,
Leskovec et al., Mining of Massive Datasets ch. 3: 4 bands of 4 rows find a pair at
resemblance 0.9 with probability 0.986, at 0.95 with 0.9987); each candidate pair is then
checked on the exact term sets, so a band collision never folds two pages by itself.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

RESEMBLANCE = 0.9  # Jaccard of the term sets at or above which two documents are near-duplicates
MIN_TERMS = 10  # distinct terms a document needs before it is compared at all
NUM_PERM = 16  # signature rows; the collection's signatures are its largest cost here
BANDS, ROWS = 4, 4  # BANDS * ROWS == NUM_PERM
SEED = 1
_WINDOW = 16  # neighbours compared within a run of equal bands (bounds degenerate runs)
_ESTIMATE_FLOOR = 0.75  # signature rows agreeing, below which a pair is not checked exactly
_MERSENNE = np.uint64((1 << 61) - 1)
_MAX_HASH = np.uint64((1 << 32) - 1)


# datasketch.MinHash(num_perm=NUM_PERM, seed=SEED, scheme="legacy").permutations (datasketch 2.x).
_PERMUTATIONS = (
    (775169054918279404, 2109959069025162, 401325382989534145, 1130051441076870728,
     401538927472639258, 815244983797985638, 1465635305079316733, 505211975917066639,
     780385900265431000, 283838892089191903, 936072031995811818, 1169969703377029950,
     25625226007148417, 1568788725991793369, 826975332961259499, 1814178924063827016),
    (1758426461858698312, 965365488286768773, 1703346441743126657, 1762784241922636284,
     716042322565387540, 1110853719534651860, 57506563652686492, 838727479550634564,
     1082636226378482417, 1348484356917986390, 1720372350978982919, 1241883087124931897,
     361679113657972945, 720433610630797939, 57968974610545096, 850535481772967366),
)  # fmt: skip


def permutations(num_perm: int = NUM_PERM, seed: int = SEED) -> tuple[np.ndarray, np.ndarray]:
    """datasketch's permutation parameters (a, b) for ``num_perm`` and ``seed``."""
    if (num_perm, seed) == (NUM_PERM, SEED):
        a, b = _PERMUTATIONS
        return np.array(a, dtype=np.uint64), np.array(b, dtype=np.uint64)
    from datasketch import MinHash  # any other parameters: the library's own

    a, b = MinHash(num_perm=num_perm, seed=seed, scheme="legacy").permutations
    return a.astype(np.uint64), b.astype(np.uint64)


def sha1_hash32(data: bytes) -> int:
    """datasketch's ``hashfunc.sha1_hash32``: the first 4 bytes of SHA-1, little-endian."""
    return int.from_bytes(hashlib.sha1(data).digest()[:4], "little")


def term_rows(terms: Sequence[bytes], num_perm: int = NUM_PERM, seed: int = SEED) -> np.ndarray:
    """Each term's permuted hashes (uint32, terms x num_perm): a one-term MinHash signature."""
    a, b = permutations(num_perm, seed)
    hv = np.fromiter((sha1_hash32(t) for t in terms), dtype=np.uint64, count=len(terms))
    out = np.empty((len(terms), num_perm), dtype=np.uint32)
    for start in range(0, len(terms), 1 << 16):
        part = hv[start : start + (1 << 16), None]
        # uint64 products wrap exactly as the library's do (its "legacy" arithmetic).
        out[start : start + part.shape[0]] = ((part * a + b) % _MERSENNE) & _MAX_HASH
    return out


def signatures(offsets: np.ndarray, terms: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """MinHash signature of every document of a forward index (document d's term ids are
    ``terms[offsets[d]:offsets[d+1]]``); an empty document's row is all 2^32 - 1."""
    offsets = offsets.astype(np.int64)
    num_docs = int(offsets.shape[0]) - 1
    out = np.full((num_docs, rows.shape[1]), np.iinfo(np.uint32).max, dtype=np.uint32)
    nonempty = np.flatnonzero(np.diff(offsets))
    # A lane (one permutation's hashes of every term) at a time: gathering a 4-byte value per
    # entry from a lane that stays in cache, then a 1-D ``reduceat``, took half the time of
    # gathering each entry's 64-byte row and reducing the rows (docs/performance-notes.md).
    lanes = np.ascontiguousarray(rows.T)
    if nonempty.shape[0]:
        step = 1 << 20  # postings per pass
        first = 0
        while first < nonempty.shape[0]:
            last = int(np.searchsorted(offsets[nonempty], offsets[nonempty[first]] + step, side="left"))
            last = max(last, first + 1)
            docs = nonempty[first:last]
            lo, hi = int(offsets[docs[0]]), int(offsets[docs[-1] + 1])
            part, starts = terms[lo:hi], offsets[docs] - lo
            block = np.empty((docs.shape[0], lanes.shape[0]), dtype=np.uint32)
            for k in range(lanes.shape[0]):
                block[:, k] = np.minimum.reduceat(lanes[k][part], starts)
            out[docs] = block
            first = last
    return out


def near_duplicate_groups(
    offsets: np.ndarray,
    terms: np.ndarray,
    sigs: np.ndarray,
    *,
    resemblance: float = RESEMBLANCE,
    min_terms: int = MIN_TERMS,
) -> np.ndarray:
    """The representative of each document's group: its lowest document number (the first
    crawled); a document in no group, or with fewer than ``min_terms`` terms, is its own."""
    offsets = offsets.astype(np.int64)
    num_docs = int(offsets.shape[0]) - 1
    parent = np.arange(num_docs, dtype=np.int64)
    sizes = np.diff(offsets)  # each document's distinct terms
    docs = np.flatnonzero(sizes >= min_terms)
    if docs.shape[0] < 2:
        return parent.astype(np.uint32)
    firsts: list[np.ndarray] = []
    seconds: list[np.ndarray] = []
    for band in range(sigs.shape[1] // ROWS):
        block = sigs[docs, band * ROWS : (band + 1) * ROWS]
        order = np.lexsort((docs, *block.T[::-1]))
        ordered_docs, ordered = docs[order], block[order]
        for gap in range(1, min(_WINDOW, ordered_docs.shape[0] - 1) + 1):
            same = (ordered[gap:] == ordered[:-gap]).all(axis=1)
            if not same.any():
                break  # every run of equal bands is shorter than ``gap``
            firsts.append(ordered_docs[:-gap][same])
            seconds.append(ordered_docs[gap:][same])
    if not firsts:
        return parent.astype(np.uint32)
    x, y = np.concatenate(firsts), np.concatenate(seconds)
    low, high = np.minimum(x, y), np.maximum(x, y)
    pairs = np.sort(low * num_docs + high)
    pairs = pairs[np.concatenate([[True], pairs[1:] != pairs[:-1]])]
    low, high = pairs // num_docs, pairs % num_docs
    # Cheap first: the signatures' estimate (a pair at 0.9 agrees on fewer than 12 of 16 rows
    # with probability 0.017, at 0.95 0.0007); then, in document order, the exact term sets.
    # Star groups, not chains: a document folds only into a representative it resembles
    # itself (as an exact copy folds into its original); linking every close pair would chain
    # windows of one long text into one group whose ends share little. Checking only pairs of
    # a representative and an unplaced document makes it one check per document, not per pair.
    likely = _signatures_agree(sigs, low, high, _ESTIMATE_FLOOR)
    # Length filter (Chaudhuri et al., ICDE 2006; Xiao et al.'s PPJoin): sets of n and m terms,
    # n <= m, share at most n, and their union holds at least m, so a resemblance of r needs
    # n >= r * m. A pair that fails it is one ``_resembles`` would refuse, and refusing it
    # places nobody: left out before the loop, the groups are the same. Two thirds of the
    # 100,000-document benchmark's checks were such pairs (docs/performance-notes.md).
    small, large = np.minimum(sizes[low], sizes[high]), np.maximum(sizes[low], sizes[high])
    likely &= small >= resemblance * large
    bounds = offsets.tolist()
    placed = bytearray(num_docs)  # parent[d] != d, as a byte: a Python loop's cheapest test
    for a, b in zip(low[likely].tolist(), high[likely].tolist(), strict=True):  # by a, then b
        if placed[a] or placed[b]:
            continue  # a is folded already, or b has found its representative
        if _resembles(terms[bounds[a] : bounds[a + 1]], terms[bounds[b] : bounds[b + 1]], resemblance):
            parent[b] = a
            placed[b] = 1
    return parent.astype(np.uint32)


_AGREE_PAIRS = 1 << 16  # pairs compared per numpy pass: their rows (4 MB) stay in cache


def _signatures_agree(sigs: np.ndarray, low: np.ndarray, high: np.ndarray, floor: float) -> np.ndarray:
    """Whether each pair's signatures agree on at least ``floor`` of their rows: in passes of
    ``_AGREE_PAIRS`` pairs. The whole at once gathered two (pairs x rows) tables, 94 MB each for
    the 1.5 M pairs of the 100,000-document benchmark, memory the process touched for the first
    time: 0.6 s, against 0.18 in passes."""
    need = floor * sigs.shape[1]
    agree = np.empty(low.shape[0], dtype=bool)
    for at in range(0, low.shape[0], _AGREE_PAIRS):
        end = at + _AGREE_PAIRS
        agree[at:end] = np.count_nonzero(sigs[low[at:end]] == sigs[high[at:end]], axis=1) >= need
    return agree


def _resembles(x: np.ndarray, y: np.ndarray, resemblance: float) -> bool:
    """Whether two sets of distinct term ids (each ascending) have a Jaccard resemblance of at
    least ``resemblance``. Their common terms are the repeats of the two joined and sorted:
    ``np.intersect1d`` does the same behind a Python wrapper that cost a third of the time
    over the ~250,000 pairs a 100,000-document build checks (docs/performance-notes.md)."""
    joined = np.concatenate((x, y))
    joined.sort()
    common = int(np.count_nonzero(joined[1:] == joined[:-1]))
    return bool(common >= resemblance * (x.shape[0] + y.shape[0] - common))
