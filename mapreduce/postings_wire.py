"""Postings on the wire: how the index job's rows carry a term's postings, and how the
reducer joins a term's pieces from several map tasks. Pure functions, no mrjob, no I/O.

``Chunk`` is one term's postings in column form; ``encode_runs`` writes many terms'
postings at once (a mapper's flush), ``decode_terms`` reads many at once (the
publisher), ``join_pieces`` is the reducer's work and ``merge_chunks`` its fallback
when two pieces hold the same document (a page's postings and its anchors');
``join_decoded`` is the same join done by the publisher of a map-only job, on many
terms' pieces decoded at once.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from itertools import pairwise

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
_HEAD_WORDS = 2
_REGION_ALIGN = 12
_NARROW = 1 << 31
_HEAD, _DOCS, _TFS8, _TFS16, _COUNTS8, _COUNTS32, _POS16, _POS32, _PAD = range(9)


def _layout(n: np.ndarray, q: np.ndarray, narrow: np.ndarray) -> np.ndarray:
    """Words of each part of each region: [regions, 6] (head, docs, tfs, counts,
    positions, padding)."""
    tfs = np.where(narrow, -(-NUM_FIELDS * n // 4), -(-NUM_FIELDS * n // 2))
    counts = np.where(narrow, -(-n // 4), n)
    positions = np.where(narrow, -(-q // 2), q)
    used = _HEAD_WORDS + n + tfs + counts + positions
    align = _REGION_ALIGN // 4
    return np.stack(
        [np.full_like(n, _HEAD_WORDS), n, tfs, counts, positions, -(-used // align) * align - used], axis=1
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
    words[labels == _HEAD] = np.stack([n, q | np.where(narrow, _NARROW, 0)], axis=1).ravel()
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
        used = _HEAD_WORDS + n + -(-NUM_FIELDS * n // 4) + -(-n // 4) + -(-q // 2)
    else:
        used = _HEAD_WORDS + n + -(-NUM_FIELDS * n // 2) + n + q
    return -(-used // (_REGION_ALIGN // 4)) * (_REGION_ALIGN // 4)


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
        if (at + 4 * _HEAD_WORDS > stop).any():
            raise ValueError("truncated postings: a region's header is cut off")
        n = words[at // 4].astype(np.int64)
        q_flag = words[at // 4 + 1].astype(np.int64)
        narrow = (q_flag & _NARROW) != 0
        q = q_flag & ~_NARROW
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


def _span(text: bytes) -> tuple[int, int] | None:
    """(first, last document) of a one-region text, None for anything else."""
    head = pybase64.b64decode(text[:16], validate=True)  # n, q, first doc
    n, q, first = struct.unpack("<III", head)
    if n == 0 or len(text) * 3 // 4 != 4 * _region_words(n, q & ~_NARROW, bool(q & _NARROW)):
        return None
    at = 4 * (_HEAD_WORDS + n - 1)  # the last doc's byte, inside a 3-byte quantum
    quantum = at // 3 * 3
    window = pybase64.b64decode(text[quantum // 3 * 4 : (quantum // 3 + 2) * 4], validate=True)
    return first, struct.unpack_from("<I", window, at - quantum)[0]


def join_pieces(pieces: list[bytes]) -> bytes:
    """One term's pieces from the map tasks -> its posting list on the wire.

    Pieces over disjoint document ranges (each map task reads whole blocks) are joined
    as text in document order, unread; otherwise (a page's postings and its anchors'
    postings from another task) they are decoded and merged (``merge_chunks``).
    """
    if len(pieces) == 1:
        return pieces[0]
    spans = [_span(piece) for piece in pieces]
    known = [span for span in spans if span is not None]
    if len(known) == len(spans):
        order = sorted(range(len(pieces)), key=lambda i: known[i])
        ranges = [known[i] for i in order]
        if all(a[1] < b[0] for a, b in pairwise(ranges)):
            return b"".join(pieces[i] for i in order)
    return merge_chunks(Chunk.decode(piece) for piece in pieces).encode()


def merge_chunks(chunks: Iterable[Chunk]) -> Chunk:
    """One term's chunks -> one chunk with ascending docs, one posting per document.

    Chunks over disjoint ranges of documents are concatenated in order.
    Otherwise (a page's chunk and its anchors' chunk, say), postings of the
    same document are summed field by field and their positions merged.
    """
    chunks = sorted((c for c in chunks if c.docs.shape[0]), key=lambda c: int(c.docs[0]))
    if not chunks:
        return Chunk(
            np.zeros(0, np.uint32),
            np.zeros((0, NUM_FIELDS), np.uint16),
            np.zeros(0, np.uint32),
            np.zeros(0, np.uint32),
        )
    if len(chunks) == 1:
        return chunks[0]
    docs = np.concatenate([c.docs for c in chunks])
    tfs = np.concatenate([c.tfs for c in chunks])
    counts = np.concatenate([c.counts for c in chunks])
    positions = np.concatenate([c.positions for c in chunks])
    # Each chunk ascends (the class's invariant): they are disjoint when each ends
    # before the next begins, checked at the joins instead of over every posting.
    if all(int(a.docs[-1]) < int(b.docs[0]) for a, b in pairwise(chunks)):
        return Chunk(docs, tfs, counts, positions)
    return merge_same_documents(docs, tfs, counts, positions)


def merge_same_documents(
    docs: np.ndarray, tfs: np.ndarray, counts: np.ndarray, positions: np.ndarray
) -> Chunk:
    """One term's postings, in any order, some of the same document (a page's and its
    anchors', from two tasks) -> one posting per document, ascending: field frequencies
    summed (clipped), each document's positions sorted."""
    order = np.argsort(docs, kind="stable")
    sorted_docs = docs[order]
    starts = np.flatnonzero(np.concatenate([[True], sorted_docs[1:] != sorted_docs[:-1]]))
    merged_tfs = np.add.reduceat(tfs[order].astype(np.uint32), starts, axis=0)
    owner = np.repeat(docs, counts.astype(np.int64))
    by_doc = np.lexsort((positions, owner))
    unique_docs = sorted_docs[starts]
    merged_counts = np.bincount(np.searchsorted(unique_docs, owner), minlength=unique_docs.shape[0]).astype(
        np.uint32
    )
    return Chunk(
        unique_docs, np.minimum(merged_tfs, TF_MAX).astype(np.uint16), merged_counts, positions[by_doc]
    )


def _gather_runs(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The indices ``starts[i] .. starts[i] + lengths[i] - 1`` of every run, one after another."""
    lengths = lengths.astype(np.int64, copy=False)
    before = np.cumsum(lengths) - lengths
    out: np.ndarray = np.repeat(starts.astype(np.int64) - before, lengths)
    out += np.arange(out.shape[0], dtype=np.int64)
    return out


def join_decoded(
    pieces_per_term: np.ndarray,
    per_piece: np.ndarray,
    docs: np.ndarray,
    tfs: np.ndarray,
    counts: np.ndarray,
    positions: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Many terms' pieces, decoded -> (postings per term, docs, tfs, counts, positions), each
    term's postings one list ascending by document: what ``join_pieces`` then decoding gives.

    The pieces come term by term (``pieces_per_term`` each, in any order within a term;
    ``per_piece`` postings each, their columns concatenated as ``decode_terms`` gives them).
    A term's pieces over disjoint document ranges are put in document order (for most terms
    they are already: nothing is copied then); a term whose pieces share a document (a page's
    and its anchors', from two tasks) is merged as ``merge_chunks`` merges it.
    """
    pieces_per_term = np.asarray(pieces_per_term, dtype=np.int64)
    per_piece = np.asarray(per_piece, dtype=np.int64)
    num_pieces = per_piece.shape[0]
    piece_term = np.repeat(np.arange(pieces_per_term.shape[0], dtype=np.int64), pieces_per_term)
    post_bounds = np.concatenate([[0], np.cumsum(per_piece)])
    filled = per_piece > 0
    first = np.zeros(num_pieces, dtype=np.int64)
    last = np.zeros(num_pieces, dtype=np.int64)
    first[filled] = docs[post_bounds[:-1][filled]]
    last[filled] = docs[post_bounds[1:][filled] - 1]
    # By term, a term's empty pieces first (they hold nothing), then by first document.
    order = np.lexsort((first, filled, piece_term))
    held = order[filled[order]]
    same_term = piece_term[held[1:]] == piece_term[held[:-1]]
    overlapping = np.unique(piece_term[held[1:]][same_term & (last[held[:-1]] >= first[held[1:]])])
    if not bool((order == np.arange(num_pieces)).all()):
        pos_bounds = np.concatenate([[0], np.cumsum(counts, dtype=np.int64)])[post_bounds]
        post_index = _gather_runs(post_bounds[:-1][order], per_piece[order])
        pos_index = _gather_runs(pos_bounds[:-1][order], np.diff(pos_bounds)[order])
        docs, tfs, counts, positions = (
            docs[post_index],
            tfs[post_index],
            counts[post_index],
            positions[pos_index],
        )
    term_bounds = post_bounds[np.concatenate([[0], np.cumsum(pieces_per_term)])]
    if not overlapping.shape[0]:
        return np.diff(term_bounds), docs, tfs, counts, positions
    return _merge_overlapping(overlapping.tolist(), term_bounds, docs, tfs, counts, positions)


def _merge_overlapping(
    terms: list[int],
    term_bounds: np.ndarray,
    docs: np.ndarray,
    tfs: np.ndarray,
    counts: np.ndarray,
    positions: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``join_decoded``'s columns with each of ``terms`` (ascending; their postings between
    ``term_bounds``) merged by ``merge_same_documents``; the other terms' postings as they are."""
    pos_bounds = np.concatenate([[0], np.cumsum(counts, dtype=np.int64)])
    per_term = np.diff(term_bounds)
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
    at = 0  # the first posting not yet in ``parts``
    for term in terms:
        a, b = int(term_bounds[term]), int(term_bounds[term + 1])
        p, q = int(pos_bounds[a]), int(pos_bounds[b])
        parts.append((docs[at:a], tfs[at:a], counts[at:a], positions[pos_bounds[at] : p]))
        merged = merge_same_documents(docs[a:b], tfs[a:b], counts[a:b], positions[p:q])
        parts.append((merged.docs, merged.tfs, merged.counts, merged.positions))
        per_term[term] = merged.docs.shape[0]
        at = b
    parts.append((docs[at:], tfs[at:], counts[at:], positions[pos_bounds[at] :]))
    return (
        per_term,
        np.concatenate([part[0] for part in parts]).astype(np.uint32, copy=False),
        np.concatenate([part[1] for part in parts]).astype(np.uint16, copy=False),
        np.concatenate([part[2] for part in parts]).astype(np.uint32, copy=False),
        np.concatenate([part[3] for part in parts]).astype(np.uint32, copy=False),
    )
