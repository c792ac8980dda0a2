"""Postings as the index job builds them: pure functions, no mrjob, no I/O.

A document is indexed in four fields (the BM25F fields of docs/ranking.md):

    title   the record's title
    body    description + text
    anchor  the anchor text of links pointing at the document (from MRLinkGraph)
    url     words of the URL's host and path

Positions, for phrase queries, count analyzed terms of ``title`` then
``body``, with a gap between the two so no phrase spans the boundary. Stop
words are dropped before positions are counted, so the phrase "speed of
sound" matches "speed sound" (the query analyzer drops "of" too).

The job combines in the mapper across the documents of a block
(``PostingBuffer``): one row per distinct term per block, each holding that
term's postings in column form, instead of one row per (term, document).
The reducer merges the chunks of a term (``merge_chunks``); an anchor
posting and a page posting of the same document become one posting.
"""

from __future__ import annotations

import base64
import operator
import re
import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import pairwise

import numpy as np

from services.storage.records import Record
from services.text.analyze import content_tokens, terms_of

TITLE, BODY, ANCHOR, URL = range(4)  # field order: services.search.bm25f.FIELD_NAMES
FIELD_GAP = 1  # positions skipped between title and body
TF_MAX = np.iinfo(np.uint16).max  # field frequencies are stored as uint16, clipped
_URL_WORDS = re.compile(r"[^0-9A-Za-z]+")


def url_words(url: str) -> str:
    """The words of a URL's host and path ("www.example.com/Flow-Models" -> "www example com
    Flow Models"): separators become spaces, the scheme is dropped."""
    rest = url.split("://", 1)[-1]
    return _URL_WORDS.sub(" ", rest)


class PostingBuffer:
    """In-mapper combining: the postings of many documents, built a block at a time.

    ``add`` and ``add_anchor`` only tokenize (a regular expression, in C), drop
    stop words and append the tokens to one list, remembering which document and field each
    run of tokens belongs to. ``drain`` does the rest for the whole buffer at
    once: the stop list and stemming once per distinct token
    (``services.text.analyze.terms_of``), then numpy for the positions (counted
    after stop words are dropped, as ``analyze`` does), the grouping into
    postings by (term, document), field frequencies and field lengths. The
    result equals ``analyze`` applied document by document (a test compares
    them), at a fraction of the per-token Python work.
    """

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._tokens: list[str] = []
        self._seg_doc: list[int] = []  # one "segment" per (document, field) run of tokens
        self._seg_field: list[int] = []
        self._seg_len: list[int] = []

    @property
    def tokens(self) -> int:
        """Tokens buffered (the measure of its memory)."""
        return len(self._tokens)

    def _append(self, doc: int, field_id: int, words: list[str]) -> None:
        self._tokens.extend(words)
        self._seg_doc.append(doc)
        self._seg_field.append(field_id)
        self._seg_len.append(len(words))

    def add(self, record: Record) -> None:
        """Buffer a record's title, body and URL (in this order: the body's positions
        continue after the title's)."""
        self._append(record.doc_num, TITLE, content_tokens(record.title))
        self._append(record.doc_num, BODY, content_tokens(f"{record.description} {record.text}"))
        self._append(record.doc_num, URL, content_tokens(url_words(record.url)))

    def add_anchor(self, doc: int, anchor_text: str) -> None:
        """Buffer one document's in-link anchor text (capped by ``MRLinkGraph``)."""
        self._append(doc, ANCHOR, content_tokens(anchor_text))

    def drain(self) -> tuple[Postings, dict[int, list[int | None]]]:
        """(the buffered postings of every term, field lengths by document), emptying the
        buffer.

        A document's lengths are ``[title, body, anchor, url]``, with None for
        the fields this buffer did not see (a page without its anchors, or
        anchors without their page).
        """
        tokens = self._tokens
        seg_doc = np.asarray(self._seg_doc, dtype=np.int64)
        seg_field = np.asarray(self._seg_field, dtype=np.int64)
        seg_len = np.asarray(self._seg_len, dtype=np.int64)
        self._reset()
        if not seg_doc.shape[0]:
            return Postings.empty(), {}
        # Distinct tokens and each token's id, with the loops in C (dict.fromkeys, and
        # itemgetter's lookups of all tokens at once): 0.71 s instead of 0.92 s for a
        # 10,000-page block's 5.3M tokens with a set and map(__getitem__).
        surfaces = list(dict.fromkeys(tokens))
        surface_ids = dict(zip(surfaces, range(len(surfaces)), strict=True))
        sid = _lookup_all(surface_ids, tokens)
        del tokens, surface_ids
        terms = terms_of(surfaces)
        vocab = sorted(set(terms) - {""})
        term_ids = dict(zip(vocab, range(len(vocab)), strict=True))
        term_of_surface = np.array([term_ids.get(t, -1) for t in terms], dtype=np.int64)
        term = term_of_surface[sid] if sid.shape[0] else sid
        keep = term >= 0

        # Field lengths after the stop list, and each kept token's position in its field.
        seg_of_token = np.repeat(np.arange(seg_doc.shape[0]), seg_len)
        kept_per_seg = np.bincount(seg_of_token[keep], minlength=seg_doc.shape[0])
        seg_first_kept = np.concatenate([[0], np.cumsum(kept_per_seg)[:-1]])
        term, seg_of_kept = term[keep], seg_of_token[keep]
        rank = np.arange(term.shape[0]) - seg_first_kept[seg_of_kept]
        offset = np.full(seg_doc.shape[0], -1, dtype=np.int64)  # no positions in url, anchor
        offset[seg_field == TITLE] = 0
        body = np.flatnonzero(seg_field == BODY)
        offset[body] = kept_per_seg[body - 1] + FIELD_GAP  # the title run precedes the body run
        pos = np.where(offset[seg_of_kept] >= 0, rank + offset[seg_of_kept], -1)
        field_of = seg_field[seg_of_kept]
        doc = seg_doc[seg_of_kept]

        lengths: dict[int, list[int | None]] = {}
        for d, f, n in zip(seg_doc.tolist(), seg_field.tolist(), kept_per_seg.tolist(), strict=True):
            entry = lengths.setdefault(d, [None, None, None, None])
            entry[f] = (entry[f] or 0) + n
        if not term.shape[0]:
            return Postings.empty(), lengths

        first_doc = int(doc.min())
        span = int(doc.max()) - first_doc + 1
        key = term * span + (doc - first_doc)
        # Grouped by (term, document), stable so positions stay ascending. Pages arrive in
        # document order (a block's records, blocks by name), so a stable sort by term alone
        # gives the same order; numpy sorts 16-bit keys by radix, 5x faster than the
        # 64-bit keys (a block holds ~30,000 terms). Anchor rows come in any order.
        if len(vocab) <= 1 << 16 and bool((doc[1:] >= doc[:-1]).all()):
            order = np.argsort(term.astype(np.uint16), kind="stable")
        else:
            order = np.argsort(key, kind="stable")
        key, field_of, pos = key[order], field_of[order], pos[order]
        new_posting = np.concatenate([[True], key[1:] != key[:-1]])
        starts = np.flatnonzero(new_posting)
        posting_of = np.cumsum(new_posting) - 1
        num_postings = starts.shape[0]
        tf = np.bincount(posting_of * 4 + field_of, minlength=num_postings * 4).reshape(-1, 4)
        tf = np.minimum(tf, TF_MAX, out=tf).astype(np.uint16)
        has_pos = pos >= 0
        pos_counts = np.bincount(posting_of[has_pos], minlength=num_postings).astype(np.uint32)
        pos_values = pos[has_pos].astype(np.uint32)
        post_term = key[starts] // span
        post_doc = (key[starts] % span + first_doc).astype(np.uint32)
        term_starts = np.flatnonzero(np.concatenate([[True], post_term[1:] != post_term[:-1]]))
        terms_present = [vocab[t] for t in post_term[term_starts].tolist()]
        return Postings(terms_present, term_starts, post_doc, tf, pos_counts, pos_values), lengths


def _lookup_all(ids: dict[str, int], tokens: list[str]) -> np.ndarray:
    """``[ids[t] for t in tokens]`` as int64 (itemgetter of one key returns a scalar)."""
    if len(tokens) == 1:
        return np.array([ids[tokens[0]]], dtype=np.int64)
    if not tokens:
        return np.zeros(0, dtype=np.int64)
    return np.array(operator.itemgetter(*tokens)(ids), dtype=np.int64)


@dataclass
class Chunk:
    """Postings of one term, ascending by document, one posting per document."""

    docs: np.ndarray  # uint32 [n]
    tfs: np.ndarray  # uint16 [n, 4]: title, body, anchor, url
    counts: np.ndarray  # uint32 [n]: positions of each posting
    positions: np.ndarray  # uint32 [sum(counts)]

    def encode(self) -> bytes:
        """The chunk on the wire: one region (``encode_runs``)."""
        return encode_runs(self.docs, self.tfs, self.counts, self.positions,
                           np.zeros(1, dtype=np.int64))[0]

    @classmethod
    def decode(cls, text: bytes | str) -> Chunk:
        """A term's value on the wire (one region, or several joined by ``join_pieces``)."""
        _df, docs, tfs, counts, positions = decode_terms([text])
        return cls(docs, tfs, counts, positions)

    def as_lists(self) -> list[list[int]]:
        """``[docs, tf_title, tf_body, tf_anchor, tf_url, counts, positions]`` (for tests, logs)."""
        return [self.docs.tolist(), *(self.tfs[:, f].tolist() for f in range(4)),
                self.counts.tolist(), self.positions.tolist()]


# The wire format. A term's postings travel as base64 of one or more REGIONS. A region
# is a header of two uint32 words, n (postings) and q (positions, its top bit the NARROW
# flag), then whole uint32 words:
#
#     wide:    docs u32 x n | tfs u16 x 4n | counts u32 x n      | positions u32 x q
#     narrow:  docs u32 x n | tfs u8 x 4n  | counts u8 x n, pad  | positions u16 x q, pad
#
# and zero words up to a multiple of 12 bytes. A region is narrow when its field
# frequencies and position counts fit a byte and its positions 16 bits: nearly every
# region of real text, at 9 bytes a posting and 2 a position instead of 16 and 4.
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
    tfs = np.where(narrow, n, 2 * n)
    counts = np.where(narrow, -(-n // 4), n)
    positions = np.where(narrow, -(-q // 2), q)
    used = _HEAD_WORDS + n + tfs + counts + positions
    align = _REGION_ALIGN // 4
    return np.stack([np.full_like(n, _HEAD_WORDS), n, tfs, counts, positions,
                     -(-used // align) * align - used], axis=1)


def _word_labels(layout: np.ndarray, narrow: np.ndarray) -> np.ndarray:
    """What each uint32 word of the regions holds (``_HEAD`` ... ``_PAD``): one pass of
    np.repeat, so columns are written and read with boolean masks instead of index
    arithmetic per number."""
    kinds = np.where(narrow[:, None], [_HEAD, _DOCS, _TFS8, _COUNTS8, _POS16, _PAD],
                     [_HEAD, _DOCS, _TFS16, _COUNTS32, _POS32, _PAD]).astype(np.uint8)
    return np.repeat(kinds.ravel(), layout.ravel())


def _packed(per_region: np.ndarray, per_word: int) -> tuple[np.ndarray, int]:
    """(mask of the real slots among the word-padded slots, slot count): narrow values of
    several regions, each region's run padded to whole words."""
    slots = -(-per_region // per_word) * per_word
    real = np.repeat(np.tile(np.array([True, False]), per_region.shape[0]),
                     np.stack([per_region, slots - per_region], axis=1).ravel())
    return real, int(slots.sum())


def _run_max(values: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The largest value of each run (0 for an empty run)."""
    out = np.zeros(lengths.shape[0], dtype=np.int64)
    filled = lengths > 0
    if values.shape[0] and filled.any():
        out[filled] = np.maximum.reduceat(values, starts[filled])
    return out


def encode_runs(docs: np.ndarray, tfs: np.ndarray, counts: np.ndarray, positions: np.ndarray,
                run_starts: np.ndarray) -> list[bytes]:
    """The wire text of each run of postings (a run: one term's postings, ``run_starts``
    ascending), all runs written in one pass of numpy and one base64 call."""
    num_postings = docs.shape[0]
    bounds = np.append(np.asarray(run_starts, dtype=np.int64), num_postings)
    n = np.diff(bounds)
    pos_offsets = np.concatenate([[0], np.cumsum(counts, dtype=np.int64)])
    q = np.diff(pos_offsets[bounds])
    tfs = np.ascontiguousarray(tfs, dtype=np.uint16)
    narrow = ((_run_max(np.maximum(tfs.max(axis=1, initial=0), counts), bounds[:-1], n) < 1 << 8)
              & (_run_max(positions, pos_offsets[bounds[:-1]], q) < 1 << 16))
    layout = _layout(n, q, narrow)
    labels = _word_labels(layout, narrow)
    words = np.zeros(labels.shape[0], dtype=np.uint32)
    words[labels == _HEAD] = np.stack([n, q | np.where(narrow, _NARROW, 0)], axis=1).ravel()
    words[labels == _DOCS] = docs
    in_narrow = np.repeat(narrow, n)
    pos_in_narrow = np.repeat(narrow, q)
    words[labels == _TFS16] = tfs[~in_narrow].view(np.uint32).ravel()
    words[labels == _TFS8] = tfs[in_narrow].astype(np.uint8).view(np.uint32).ravel()
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
    text = base64.b64encode(words.tobytes())
    ends = (np.concatenate([[0], np.cumsum(layout.sum(axis=1))]) * 16 // 3).tolist()
    return [text[a:b] for a, b in zip(ends[:-1], ends[1:], strict=True)]


def _region_words(n: int, q: int, narrow: bool) -> int:
    """Words of one region: ``_layout``'s row sum, in plain ints for the header walk."""
    used = _HEAD_WORDS + (2 * n + -(-n // 4) + -(-q // 2) if narrow else 4 * n + q)
    return -(-used // (_REGION_ALIGN // 4)) * (_REGION_ALIGN // 4)


def _regions(raw: bytes, text_starts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(n, q, narrow) of each region in ``raw``, in order; ``text_starts``: the byte where
    each text begins (a region never spans two texts).

    Walks every text at once, one region per step, in numpy: a text holds one region
    per map task flush that saw its term, so there are a handful of steps, where a
    Python loop took a step per region (400,000 of them on 100,000 documents).
    """
    end = len(raw)
    if end % 4:
        raise ValueError(f"truncated postings: {end} bytes is not a whole number of words")
    words = np.frombuffer(raw, dtype=np.uint32)
    text_ends = np.append(text_starts[1:], end)
    at = text_starts[text_starts < text_ends]
    stop = text_ends[text_starts < text_ends]
    found: list[np.ndarray] = []
    while at.shape[0]:
        if (at + 4 * _HEAD_WORDS > stop).any():
            raise ValueError("truncated postings: a region's header is cut off")
        n = words[at // 4].astype(np.int64)
        q_flag = words[at // 4 + 1].astype(np.int64)
        narrow = (q_flag & _NARROW) != 0
        q = q_flag & ~_NARROW
        found.append(np.stack([at, n, q, narrow], axis=1))
        at = at + 4 * _layout(n, q, narrow).sum(axis=1)
        if (at > stop).any():
            raise ValueError("truncated postings: the last region of a text needs more bytes")
        more = at < stop
        at, stop = at[more], stop[more]
    if not found:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, bool)
    regions = np.concatenate(found)
    regions = regions[np.argsort(regions[:, 0], kind="stable")]
    return regions[:, 1], regions[:, 2], regions[:, 3].astype(bool)


def decode_terms(texts: list[bytes | str]) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                    np.ndarray, np.ndarray]:
    """(postings per text, docs, tfs [P, 4], counts, positions) of the texts' regions,
    concatenated in order: every term of a job output in one base64 call and one numpy
    pass (a region's postings stay together, in the order they came)."""
    parts = [t.encode("ascii") if isinstance(t, str) else t for t in texts]
    raw = base64.b64decode(b"".join(parts))
    text_ends = np.cumsum([len(t) * 3 // 4 for t in parts], dtype=np.int64)
    n, q, narrow = _regions(raw, np.concatenate([[0], text_ends[:-1]]).astype(np.int64))
    layout = _layout(n, q, narrow)
    region_start = np.concatenate([[0], np.cumsum(layout.sum(axis=1))])[:-1] * 4
    per_text = np.bincount(np.searchsorted(text_ends, region_start, side="right"), weights=n,
                           minlength=len(parts)).astype(np.int64)
    words = np.frombuffer(raw, dtype=np.uint32)
    labels = _word_labels(layout, narrow)
    in_narrow = np.repeat(narrow, n)
    tfs = _interleave(in_narrow, words[labels == _TFS8].view(np.uint8).reshape(-1, 4),
                      words[labels == _TFS16].view(np.uint16).reshape(-1, 4), np.uint16)
    real, _slots = _packed(n[narrow], 4)
    counts = _interleave(in_narrow, words[labels == _COUNTS8].view(np.uint8)[real],
                         words[labels == _COUNTS32], np.uint32)
    real, _slots = _packed(q[narrow], 2)
    positions = _interleave(np.repeat(narrow, q), words[labels == _POS16].view(np.uint16)[real],
                            words[labels == _POS32], np.uint32)
    return per_text, words[labels == _DOCS], tfs, counts, positions


def _interleave(is_narrow: np.ndarray, narrow: np.ndarray, wide: np.ndarray, dtype: type
                ) -> np.ndarray:
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


@dataclass
class Postings:
    """A drained buffer's postings in column form, sorted by term, then document."""

    terms: list[str]  # the terms present, ascending
    term_starts: np.ndarray  # first posting of each term
    docs: np.ndarray  # uint32 [P]
    tfs: np.ndarray  # uint16 [P, 4]
    counts: np.ndarray  # uint32 [P]
    positions: np.ndarray  # uint32 [sum(counts)]

    @classmethod
    def empty(cls) -> Postings:
        return cls([], np.zeros(0, np.int64), np.zeros(0, np.uint32), np.zeros((0, 4), np.uint16),
                   np.zeros(0, np.uint32), np.zeros(0, np.uint32))

    def __len__(self) -> int:
        return len(self.terms)

    def __iter__(self) -> Iterator[tuple[str, Chunk]]:
        """(term, chunk) of each term (for tests and small inputs; the job uses ``encoded``)."""
        ends = np.append(self.term_starts[1:], self.docs.shape[0]).tolist()
        pos_offsets = np.concatenate([[0], np.cumsum(self.counts, dtype=np.int64)]).tolist()
        for term, a, b in zip(self.terms, self.term_starts.tolist(), ends, strict=True):
            yield term, Chunk(self.docs[a:b], self.tfs[a:b], self.counts[a:b],
                              self.positions[pos_offsets[a]:pos_offsets[b]])

    def encoded(self) -> list[tuple[str, bytes]]:
        """(term, wire text) of each term."""
        if not self.terms:
            return []
        texts = encode_runs(self.docs, self.tfs, self.counts, self.positions, self.term_starts)
        return list(zip(self.terms, texts, strict=True))


def _span(text: bytes) -> tuple[int, int] | None:
    """(first, last document) of a one-region text, None for anything else."""
    head = base64.b64decode(text[:16])  # n, q, first doc
    n, q, first = struct.unpack("<III", head)
    if n == 0 or len(text) * 3 // 4 != 4 * _region_words(n, q & ~_NARROW, bool(q & _NARROW)):
        return None
    at = 4 * (_HEAD_WORDS + n - 1)  # the last doc's byte, inside a 3-byte quantum
    quantum = at // 3 * 3
    window = base64.b64decode(text[quantum // 3 * 4:(quantum // 3 + 2) * 4])
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
    if all(span is not None for span in spans):
        order = sorted(range(len(pieces)), key=lambda i: spans[i])
        ranges = [spans[i] for i in order]
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
        return Chunk(np.zeros(0, np.uint32), np.zeros((0, 4), np.uint16), np.zeros(0, np.uint32),
                     np.zeros(0, np.uint32))
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
    # Overlapping: group postings by document, sum field counts, sort positions per document.
    order = np.argsort(docs, kind="stable")
    sorted_docs = docs[order]
    starts = np.flatnonzero(np.concatenate([[True], sorted_docs[1:] != sorted_docs[:-1]]))
    merged_tfs = np.add.reduceat(tfs[order].astype(np.uint32), starts, axis=0)
    owner = np.repeat(docs, counts.astype(np.int64))
    by_doc = np.lexsort((positions, owner))
    unique_docs = sorted_docs[starts]
    merged_counts = np.bincount(np.searchsorted(unique_docs, owner),
                                minlength=unique_docs.shape[0]).astype(np.uint32)
    return Chunk(unique_docs, np.minimum(merged_tfs, TF_MAX).astype(np.uint16), merged_counts,
                 positions[by_doc])
