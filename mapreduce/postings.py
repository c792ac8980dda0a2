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
How those rows travel and how the reducer joins a term's pieces is
``mapreduce.postings_wire``.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from mapreduce.postings_wire import TF_MAX, Chunk, encode_runs
from services.storage.records import Record
from services.text.analyze import content_tokens, terms_of

TITLE, BODY, ANCHOR, URL = range(4)  # field order: services.search.bm25f.FIELD_NAMES
FIELD_GAP = 1  # positions skipped between title and body
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
