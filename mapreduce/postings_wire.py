"""Postings on the wire: how the index job's rows carry a term's postings, and how the
reducer joins a term's pieces from several map tasks. Pure functions, no mrjob, no I/O.

``Chunk`` is one term's postings in column form; ``encode_runs`` writes many terms'
postings at once (a mapper's flush), ``decode_terms`` reads many at once (the
publisher). Joining a term's pieces from several tasks is ``mapreduce.postings_join``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pybase64

TF_MAX = np.iinfo(np.uint16).max  # field frequencies are stored as uint16, clipped
NUM_FIELDS = 6  # title, body, anchor, url, meta, nav (services.ranking.bm25f.FIELD_NAMES)


@dataclass
class Chunk:
    """Postings of one term, ascending by document, one posting per document."""

    docs: np.ndarray  # uint32 [n]
    tfs: np.ndarray  # uint16 [n, NUM_FIELDS]: title, body, anchor, url, meta, nav
    counts: np.ndarray  # uint32 [n]: positions of each posting
    positions: np.ndarray  # uint32 [sum(counts)]

    def encode(self) -> bytes:
        """The chunk on the wire: one region (``encode_runs``)."""
        return encode_runs(self.docs, self.tfs, self.counts, self.positions, np.zeros(1, dtype=np.int64))[0]

    @classmethod
    def decode(cls, text: bytes | str) -> Chunk:
        """A term's value on the wire (one region, or several joined by ``join_pieces``)."""
        _df, docs, tfs, counts, positions = decode_terms([text])
        return cls(docs, tfs, counts, positions)

    def as_lists(self) -> list[list[int]]:
        """``[docs, tf_title, tf_body, tf_anchor, tf_url, tf_meta, tf_nav, counts, positions]``
        (for tests, logs)."""
        return [
            self.docs.tolist(),
            *(self.tfs[:, f].tolist() for f in range(NUM_FIELDS)),
            self.counts.tolist(),
            self.positions.tolist(),
        ]


# The wire format. A term's postings travel as base64 of one or more REGIONS. A region
# is a header of two uint32 words, n (postings) and q (positions, its top bit the NARROW
# flag), then whole uint32 words:
#
#     wide:    docs u32 x n | tfs u16 x 6n, pad | counts u32 x n      | positions u32 x q
#     narrow:  docs u32 x n | tfs u8 x 6n, pad  | counts u8 x n, pad  | positions u16 x q, pad
#
# and zero words up to a multiple of 12 bytes. A region is narrow when its field
# frequencies and position counts fit a byte and its positions 16 bits: nearly every
# region of real text, at 11 bytes a posting and 2 a position instead of 20 and 4.
#
# Whole 3-byte base64 quanta make the base64 of two regions their two texts joined, so a
# reducer that receives a term's pieces from several map tasks, over disjoint document
# ranges, joins the texts in document order without decoding anything (``join_pieces``);
# whole 4-byte words let a whole block's regions be written and read as one uint32 array
# with numpy boolean masks (``encode_runs``, ``decode_terms``). Nobody parses millions of
# integers one by one.
HEAD_WORDS = 2
REGION_ALIGN = 12
NARROW = 1 << 31
_HEAD, _DOCS, _TFS8, _TFS16, _COUNTS8, _COUNTS32, _POS16, _POS32, _PAD = range(9)


def _layout(n: np.ndarray, q: np.ndarray, narrow: np.ndarray) -> np.ndarray:
    """Words of each part of each region: [regions, 6] (head, docs, tfs, counts,
    positions, padding)."""
    tfs = np.where(narrow, -(-NUM_FIELDS * n // 4), -(-NUM_FIELDS * n // 2))
    counts = np.where(narrow, -(-n // 4), n)
    positions = np.where(narrow, -(-q // 2), q)
    used = HEAD_WORDS + n + tfs + counts + positions
    align = REGION_ALIGN // 4
    return np.stack(
        [np.full_like(n, HEAD_WORDS), n, tfs, counts, positions, -(-used // align) * align - used], axis=1
    )


def _word_labels(layout: np.ndarray, narrow: np.ndarray) -> np.ndarray:
    """What each uint32 word of the regions holds (``_HEAD`` ... ``_PAD``): one pass of
    np.repeat, so columns are written and read with boolean masks instead of index
    arithmetic per number."""
    kinds = np.where(
        narrow[:, None],
        [_HEAD, _DOCS, _TFS8, _COUNTS8, _POS16, _PAD],
        [_HEAD, _DOCS, _TFS16, _COUNTS32, _POS32, _PAD],
    ).astype(np.uint8)
    return np.repeat(kinds.ravel(), layout.ravel())


def _packed(per_region: np.ndarray, per_word: int) -> tuple[np.ndarray, int]:
    """(mask of the real slots among the word-padded slots, slot count): narrow values of
    several regions, each region's run padded to whole words."""
    slots = -(-per_region // per_word) * per_word
    real = np.repeat(
        np.tile(np.array([True, False]), per_region.shape[0]),
        np.stack([per_region, slots - per_region], axis=1).ravel(),
    )
    return real, int(slots.sum())


def _run_max(values: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The largest value of each run (0 for an empty run)."""
    out = np.zeros(lengths.shape[0], dtype=np.int64)
    filled = lengths > 0
    if values.shape[0] and filled.any():
        out[filled] = np.maximum.reduceat(values, starts[filled])
    return out


def encode_runs(
    docs: np.ndarray, tfs: np.ndarray, counts: np.ndarray, positions: np.ndarray, run_starts: np.ndarray
) -> list[bytes]:
    """The wire text of each run of postings (a run: one term's postings, ``run_starts``
    ascending), all runs written in one pass of numpy and one base64 call."""
    num_postings = docs.shape[0]
    bounds = np.append(np.asarray(run_starts, dtype=np.int64), num_postings)
    n = np.diff(bounds)
    pos_offsets = np.concatenate([[0], np.cumsum(counts, dtype=np.int64)])
    q = np.diff(pos_offsets[bounds])
    tfs = np.ascontiguousarray(tfs, dtype=np.uint16)
    narrow = (_run_max(np.maximum(tfs.max(axis=1, initial=0), counts), bounds[:-1], n) < 1 << 8) & (
        _run_max(positions, pos_offsets[bounds[:-1]], q) < 1 << 16
    )
    layout = _layout(n, q, narrow)
    labels = _word_labels(layout, narrow)
    words = np.zeros(labels.shape[0], dtype=np.uint32)
    words[labels == _HEAD] = np.stack([n, q | np.where(narrow, NARROW, 0)], axis=1).ravel()
    words[labels == _DOCS] = docs
    in_narrow = np.repeat(narrow, n)
    pos_in_narrow = np.repeat(narrow, q)
    real, slots = _packed(n[~narrow] * NUM_FIELDS, 2)
    wide_tfs = np.zeros(slots, dtype=np.uint16)
    wide_tfs[real] = tfs[~in_narrow].ravel()
    words[labels == _TFS16] = wide_tfs.view(np.uint32)
    real, slots = _packed(n[narrow] * NUM_FIELDS, 4)
    narrow_tfs = np.zeros(slots, dtype=np.uint8)
    narrow_tfs[real] = tfs[in_narrow].ravel()
    words[labels == _TFS8] = narrow_tfs.view(np.uint32)
    words[labels == _COUNTS32] = counts[~in_narrow]
    real, slots = _packed(n[narrow], 4)
    packed = np.zeros(slots, dtype=np.uint8)
    packed[real] = counts[in_narrow]
    words[labels == _COUNTS8] = packed.view(np.uint32)
    words[labels == _POS32] = positions[~pos_in_narrow]
    real, slots = _packed(q[narrow], 2)
    packed16 = np.zeros(slots, dtype=np.uint16)
    packed16[real] = positions[pos_in_narrow]
    words[labels == _POS16] = packed16.view(np.uint32)
    text = pybase64.b64encode(words.tobytes())
    ends = (np.concatenate([[0], np.cumsum(layout.sum(axis=1))]) * 16 // 3).tolist()
    return [text[a:b] for a, b in zip(ends[:-1], ends[1:], strict=True)]


def _region_words(n: int, q: int, narrow: bool) -> int:
    """Words of one region: ``_layout``'s row sum, in plain ints for the header walk."""
    if narrow:
        used = HEAD_WORDS + n + -(-NUM_FIELDS * n // 4) + -(-n // 4) + -(-q // 2)
    else:
        used = HEAD_WORDS + n + -(-NUM_FIELDS * n // 2) + n + q
    return -(-used // (REGION_ALIGN // 4)) * (REGION_ALIGN // 4)


def _regions(raw: bytes, text_starts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(text, n, q, narrow) of each region in ``raw``, in order; ``text_starts``: the byte
    where each text begins (a region never spans two texts).

    Walks every text at once, one region per step, in numpy: a text holds one region
    per map task flush that saw its term, so there are a handful of steps, where a
    Python loop would take a step per region (400,000 of them on 100,000 documents).
    """
    end = len(raw)
    if end % 4:
        raise ValueError(f"truncated postings: {end} bytes is not a whole number of words")
    words = np.frombuffer(raw, dtype=np.uint32)
    text_ends = np.append(text_starts[1:], end)
    text = np.flatnonzero(text_starts < text_ends)
    at, stop = text_starts[text], text_ends[text]
    found: list[np.ndarray] = []
    while at.shape[0]:
        if (at + 4 * HEAD_WORDS > stop).any():
            raise ValueError("truncated postings: a region's header is cut off")
        n = words[at // 4].astype(np.int64)
        q_flag = words[at // 4 + 1].astype(np.int64)
        narrow = (q_flag & NARROW) != 0
        q = q_flag & ~NARROW
        found.append(np.stack([at, text, n, q, narrow], axis=1))
        at = at + 4 * _layout(n, q, narrow).sum(axis=1)
        if (at > stop).any():
            raise ValueError("truncated postings: the last region of a text needs more bytes")
        more = at < stop
        at, stop, text = at[more], stop[more], text[more]
    if not found:
        return (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, bool))
    regions = np.concatenate(found)
    regions = regions[np.argsort(regions[:, 0], kind="stable")]
    return regions[:, 1], regions[:, 2], regions[:, 3], regions[:, 4].astype(bool)


@dataclass
class WireRegions:
    """The regions of many texts, parsed: each column is read from ``words`` with a
    boolean mask over ``labels``. The columns are independent, so the publisher reads
    the positions on a second thread while it scores the postings."""

    per_text: np.ndarray  # postings of each text
    words: np.ndarray  # uint32: every region, in order
    labels: np.ndarray  # what each word holds (_HEAD ... _PAD)
    n: np.ndarray  # postings of each region
    q: np.ndarray  # positions of each region
    narrow: np.ndarray  # bool: each region's layout

    def docs(self) -> np.ndarray:
        return self.words[self.labels == _DOCS]

    @cached_property
    def _posting_in_narrow(self) -> np.ndarray:
        """Whether each posting's region is narrow (``tfs`` and ``counts`` both need it)."""
        return np.repeat(self.narrow, self.n)

    def tfs(self) -> np.ndarray:
        """uint16 [postings, NUM_FIELDS]."""
        narrow_real, _slots = _packed(self.n[self.narrow] * NUM_FIELDS, 4)
        wide_real, _slots = _packed(self.n[~self.narrow] * NUM_FIELDS, 2)
        return _interleave(
            self._posting_in_narrow,
            self.words[self.labels == _TFS8].view(np.uint8)[narrow_real].reshape(-1, NUM_FIELDS),
            self.words[self.labels == _TFS16].view(np.uint16)[wide_real].reshape(-1, NUM_FIELDS),
            np.uint16,
        )

    def counts(self) -> np.ndarray:
        real, _slots = _packed(self.n[self.narrow], 4)
        return _interleave(
            self._posting_in_narrow,
            self.words[self.labels == _COUNTS8].view(np.uint8)[real],
            self.words[self.labels == _COUNTS32],
            np.uint32,
        )

    def positions(self) -> np.ndarray:
        real, _slots = _packed(self.q[self.narrow], 2)
        return _interleave(
            np.repeat(self.narrow, self.q),
            self.words[self.labels == _POS16].view(np.uint16)[real],
            self.words[self.labels == _POS32],
            np.uint32,
        )


def read_regions(texts: list[bytes | str]) -> WireRegions:
    """Every region of the texts, in order: every term of a job output in one base64
    call and one numpy pass (a region's postings stay together, in the order they came)."""
    parts = [t.encode("ascii") if isinstance(t, str) else t for t in texts]
    raw = pybase64.b64decode(b"".join(parts), validate=True)
    text_starts = np.cumsum([0, *(len(t) * 3 // 4 for t in parts[:-1])], dtype=np.int64)
    text, n, q, narrow = _regions(raw, text_starts)
    per_text = np.bincount(text, weights=n, minlength=len(parts)).astype(np.int64)
    labels = _word_labels(_layout(n, q, narrow), narrow)
    return WireRegions(per_text, np.frombuffer(raw, dtype=np.uint32), labels, n, q, narrow)


def decode_terms(
    texts: list[bytes | str],
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(postings per text, docs, tfs [P, NUM_FIELDS], counts, positions) of the texts' regions,
    concatenated in order (``read_regions``)."""
    regions = read_regions(texts)
    return (regions.per_text, regions.docs(), regions.tfs(), regions.counts(), regions.positions())


def _interleave(is_narrow: np.ndarray, narrow: np.ndarray, wide: np.ndarray, dtype: type) -> np.ndarray:
    """Values in item order from the narrow regions' and the wide regions' values (often
    all narrow: then only a widening copy, not a masked scatter)."""
    if not wide.shape[0]:
        return narrow.astype(dtype)
    if not narrow.shape[0]:
        return wide.astype(dtype, copy=False)
    out = np.empty((is_narrow.shape[0], *narrow.shape[1:]), dtype=dtype)
    out[np.flatnonzero(is_narrow)] = narrow
    out[np.flatnonzero(~is_narrow)] = wide
    return out


def piece_span(text: bytes) -> tuple[int, int] | None:
    """(first, last document) of a one-region text (a map task's piece of a term), None for
    anything else: read from its head and one quantum, the rest left encoded."""
    head = pybase64.b64decode(text[:16], validate=True)  # n, q, first doc
    n, q, first = struct.unpack("<III", head)
    if n == 0 or len(text) * 3 // 4 != 4 * _region_words(n, q & ~NARROW, bool(q & NARROW)):
        return None
    at = 4 * (HEAD_WORDS + n - 1)  # the last doc's byte, inside a 3-byte quantum
    quantum = at // 3 * 3
    window = pybase64.b64decode(text[quantum // 3 * 4 : (quantum // 3 + 2) * 4], validate=True)
    return first, struct.unpack_from("<I", window, at - quantum)[0]
