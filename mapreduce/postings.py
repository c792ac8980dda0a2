"""Postings as the index job builds them: pure functions, no mrjob, no I/O.

A document is indexed in six fields (the BM25F fields of docs/ranking.md):

    title   the record's title
    body    its text
    anchor  the anchor text of links pointing at the document (from MRLinkGraph)
    url     words of the URL's host and path
    meta    the page's own summary: <meta name=description> and <meta name=keywords>
    nav     what a reader sees beside the text: menus, link lists, form words (Record.nav)

Each page is analyzed in its language (``Record.lang``: the analysis of
``services.text.analysis.languages``), its anchor text too (anchors are mostly
written in the language of the page they point at); the buffer keeps the
rough tokens of each language apart, so a word is stemmed by its own language's
stemmer once per block. The pages of each analysis are counted (``languages``):
the segment records them, and search analyzes a query of unknown language in the
index's common languages.

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

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from mapreduce.postings_kernels import encoded_runs, grouped_postings, index_dtype, kept_terms
from mapreduce.postings_wire import NUM_FIELDS, TF_MAX, Chunk, encode_runs
from mapreduce.rough_terms import RoughAnalyses, rough_terms
from services.storage.formats.records import Record
from services.text.analysis.analyze import rough_bytes
from services.text.analysis.forms import build_filters, filters_in_document_order, form_hashes
from services.text.analysis.languages import DEFAULT_LANGUAGE, analysis_key
from services.text.analysis.rough_ids import RoughIds, kernels_usable

TITLE, BODY, ANCHOR, URL, META, NAV = range(NUM_FIELDS)  # field order: services.ranking.bm25f.FIELD_NAMES
FIELD_GAP = 1  # positions skipped between title and body
_URL_WORDS = re.compile(r"[^0-9A-Za-z]+")


def url_words(url: str) -> str:
    """The words of a URL's host and path ("www.example.com/Flow-Models" -> "www example com
    Flow Models"): separators become spaces, the scheme is dropped."""
    rest = url.split("://", 1)[-1]
    return _URL_WORDS.sub(" ", rest)


class PostingBuffer:
    """In-mapper combining: the postings of many documents, built a block at a time.

    ``add`` and ``add_anchor`` only make each field's text rough bytes
    (``services.text.analysis.analyze.rough_bytes``: normalised, a byte table, in C),
    remembering which document and field each run belongs to; the pending texts are
    cut into rough tokens and numbered together, in one compiled pass
    (``services.text.analysis.rough_ids``), when the buffer is asked how many tokens
    it holds (the job asks after each block) or drained. ``drain`` does the rest for the whole buffer at
    once: the word regex, the stop list and stemming once per distinct rough
    token, then numpy for the terms in order, their positions (counted
    after stop words are dropped, as ``analyze`` does), the grouping into
    postings by (term, document), field frequencies and field lengths. The
    result equals ``analyze`` applied document by document (tests compare
    them), at a fraction of the per-token Python work: no string is made per
    token.
    """

    def __init__(self, *, compiled: bool = False) -> None:
        # compiled: number the rough tokens with numba's kernel (``RoughIds``), where its disk
        # cache outlives a build; else bytes.split and a dict (the same numbers).
        self._compiled = compiled
        self._analyses = RoughAnalyses()  # kept across flushes
        self._reset()

    def _reset(self) -> None:
        self._numbers = RoughIds(compiled=self._compiled)  # distinct rough token (per analysis) -> id
        self.languages: dict[str, int] = {}  # pages of each analysis since the last drain
        self._ids: list[np.ndarray] = []  # the id of every rough token, in order
        self._num_ids = 0
        self._pending: list[bytes] = []  # rough bytes of the segments not yet numbered
        self._pending_keys: list[int] = []
        self._seg_doc: list[int] = []  # a "segment" per (document, field) run
        self._seg_field: list[int] = []
        self._seg_len: list[np.ndarray] = []  # rough tokens per segment, as numbered

    @property
    def tokens(self) -> int:
        """Rough tokens buffered, about one per word (the measure of its memory)."""
        self._number_pending()
        return self._num_ids

    def _append(self, doc: int, field_id: int, text: str, key: str) -> None:
        self._pending.append(rough_bytes(text))
        self._pending_keys.append(self._numbers.key_index(key))
        self._seg_doc.append(doc)
        self._seg_field.append(field_id)

    def _number_pending(self) -> None:
        if not self._pending:
            return
        ids, counts = self._numbers.number(self._pending, self._pending_keys)
        self._pending, self._pending_keys = [], []
        self._ids.append(ids)
        self._seg_len.append(counts)
        self._num_ids += int(ids.shape[0])

    def add(self, record: Record) -> None:
        """Buffer a record's title, body, URL, meta and nav fields (title and body first:
        the body's positions continue after the title's)."""
        key = analysis_key(record.lang)
        self.languages[key] = self.languages.get(key, 0) + 1
        self._append(record.doc_num, TITLE, record.title, key)
        self._append(record.doc_num, BODY, record.text, key)
        self._append(record.doc_num, URL, url_words(record.url), key)
        if record.description or record.keywords:  # most pages have neither: no empty run
            self._append(record.doc_num, META, f"{record.description} {record.keywords}", key)
        if record.nav:
            self._append(record.doc_num, NAV, record.nav, key)

    def add_anchor(self, doc: int, anchor_text: str, lang: str = "") -> None:
        """Buffer one document's in-link anchor text (capped by ``MRLinkGraph``), analyzed
        in the language of the document it describes (``lang``; "" : the default)."""
        self._append(doc, ANCHOR, anchor_text, analysis_key(lang) if lang else DEFAULT_LANGUAGE)

    def drain(self) -> tuple[Postings, dict[int, list[int | None]]]:
        """(the buffered postings of every term, field lengths by document), emptying the
        buffer.

        A document's lengths are ``[title, body, anchor, url, meta, nav]``, with None for
        the fields this buffer did not see (a page without its anchors, or
        anchors without their page).
        """
        self._number_pending()
        rough_ids = np.concatenate(self._ids) if self._ids else np.zeros(0, np.int32)
        numbers = self._numbers
        roughs = numbers.roughs
        names = numbers.analysis_names
        keys = numbers.analyses if len(names) > 1 else next(iter(names), "")
        seg_doc = np.asarray(self._seg_doc, dtype=np.int64)
        seg_field = np.asarray(self._seg_field, dtype=np.int64)
        seg_len = np.concatenate(self._seg_len) if self._seg_len else np.zeros(0, np.int64)
        self._reset()
        if not seg_doc.shape[0]:
            return Postings.empty(), {}
        vocab, rough_term_ids, rough_kept, forms, rough_form_ids = rough_terms(roughs, keys, self._analyses)
        compiled = self._compiled and kernels_usable()
        if compiled:
            term, kept_per_seg, form = kept_terms(
                rough_ids, seg_len, rough_term_ids, rough_kept, rough_form_ids
            )
        else:
            term, kept_per_seg, src = _kept_terms(rough_ids, seg_len, rough_term_ids, rough_kept)
            form = rough_form_ids[src]
            del src
        n = int(term.shape[0])
        index_type = term.dtype  # int32 unless the flush is huge
        del roughs, keys, rough_ids

        # Each term's position in its field.
        seg_of_kept = np.repeat(np.arange(seg_doc.shape[0], dtype=index_type), kept_per_seg)
        seg_first_kept = np.concatenate([[0], np.cumsum(kept_per_seg)[:-1]]).astype(index_type)
        pos = np.arange(n, dtype=index_type)
        pos -= seg_first_kept[seg_of_kept]
        offset = np.full(seg_doc.shape[0], -1, dtype=index_type)  # none in url, anchor, meta, nav
        offset[seg_field == TITLE] = 0
        body = np.flatnonzero(seg_field == BODY)
        offset[body] = kept_per_seg[body - 1] + FIELD_GAP  # the title run precedes the body run
        pos_offset = offset[seg_of_kept]
        pos += pos_offset
        pos[pos_offset < 0] = -1
        del pos_offset
        field_of = seg_field.astype(np.int8)[seg_of_kept]
        doc = seg_doc.astype(np.uint32)[seg_of_kept]
        del seg_of_kept
        filters, vocabulary = _form_filters(doc, field_of, form, forms, compiled)
        del form

        lengths: dict[int, list[int | None]] = {}
        for d, f, k in zip(seg_doc.tolist(), seg_field.tolist(), kept_per_seg.tolist(), strict=True):
            entry = lengths.setdefault(d, [None] * NUM_FIELDS)
            entry[f] = (entry[f] or 0) + k
            if f == TITLE:  # a page without description and keywords adds no meta run, nor
                for empty in (META, NAV):  # one without navigation text a nav run
                    if entry[empty] is None:
                        entry[empty] = 0
        if not n:
            return Postings.empty(), lengths  # no kept word: no filters either

        group = grouped_postings(term, doc, field_of, pos, len(vocab), NUM_FIELDS) if compiled else None
        if group is None:
            group = _grouped(term, doc, field_of, pos, len(vocab))
        present, term_starts, post_doc, tf, pos_counts, pos_values = group
        terms_present = [vocab[t] for t in present.tolist()]
        postings = Postings(
            terms_present, term_starts, post_doc, tf, pos_counts, pos_values, filters, vocabulary, compiled
        )
        return postings, lengths


def _grouped(
    term: np.ndarray, doc: np.ndarray, field_of: np.ndarray, pos: np.ndarray, num_terms: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(the terms present, ascending; where each one's postings start; each posting's
    document; its field frequencies, clipped at ``TF_MAX``; its positions' count; the
    positions, posting after posting) of a flush's kept words (``term``, ``doc``, ``field_of``
    and ``pos`` each), in numpy: ``postings_kernels.grouped_postings`` where compiled."""
    n = term.shape[0]
    index_type = term.dtype  # int32 unless the flush is huge
    # Grouped by (term, document), stable so positions stay ascending. Pages arrive in
    # document order (a block's records, blocks by name), so a stable sort by term alone
    # gives the same order; numpy sorts 16-bit keys by radix, several times faster than
    # 64-bit keys (docs/benchmarks.md), and a block's terms fit 16 bits (~30,000 of them).
    # Anchor rows come in any order.
    if num_terms <= 1 << 16 and bool((doc[1:] >= doc[:-1]).all()):
        order = np.argsort(term.astype(np.uint16), kind="stable")
    else:
        first_doc = int(doc.min())
        span = int(doc.max()) - first_doc + 1
        order = np.argsort(term.astype(np.int64) * span + (doc - first_doc), kind="stable")
    term, doc, field_of, pos = term[order], doc[order], field_of[order], pos[order]
    del order
    new_posting = np.empty(n, dtype=bool)
    new_posting[0] = True
    np.not_equal(term[1:], term[:-1], out=new_posting[1:])
    new_posting[1:] |= doc[1:] != doc[:-1]
    starts = np.flatnonzero(new_posting)
    posting_of = np.cumsum(new_posting, dtype=index_type)
    posting_of -= 1
    num_postings = starts.shape[0]
    tf = np.bincount(posting_of * NUM_FIELDS + field_of, minlength=num_postings * NUM_FIELDS)
    tf = tf.reshape(-1, NUM_FIELDS)
    tf = np.minimum(tf, TF_MAX, out=tf).astype(np.uint16)
    has_pos = pos >= 0
    pos_counts = np.bincount(posting_of[has_pos], minlength=num_postings).astype(np.uint32)
    pos_values = pos[has_pos].astype(np.uint32)
    post_term = term[starts]
    post_doc = doc[starts]
    term_starts = np.flatnonzero(np.concatenate([[True], post_term[1:] != post_term[:-1]]))
    return post_term[term_starts], term_starts, post_doc, tf, pos_counts, pos_values


def _form_filters(
    doc: np.ndarray, field_of: np.ndarray, form: np.ndarray, forms: list[str], compiled: bool = False
) -> tuple[dict[int, bytes], dict[str, int]]:
    """Each document's Bloom filter of the forms its title, body and meta words were written
    in, and how many documents hold each form (from the same distinct pairs: the spelling
    vocabulary costs one bincount). ``compiled``: with the job's kernel where the pages came
    in document order (``forms.filters_in_document_order``), else sorted here."""
    text = (field_of == TITLE) | (field_of == BODY) | (field_of == META)
    if not text.any():
        return {}, {}
    h1, h2 = form_hashes(forms)
    built = filters_in_document_order(doc[text], form[text], h1, h2) if compiled else None
    if built is not None:
        docs, offsets, blob, held = built
    else:
        docs, offsets, blob, held = _sorted_filters(doc[text], form[text], h1, h2)
    bounds = offsets.tolist()
    filters = {d: blob[a:b] for d, a, b in zip(docs.tolist(), bounds[:-1], bounds[1:], strict=True)}
    vocabulary = {forms[i]: int(held[i]) for i in np.flatnonzero(held).tolist()}
    return filters, vocabulary


def _sorted_filters(
    doc: np.ndarray, form: np.ndarray, h1: np.ndarray, h2: np.ndarray
) -> tuple[np.ndarray, np.ndarray, bytes, np.ndarray]:
    """``filters_in_document_order`` in numpy, for pages in any order: the distinct
    (document, form) pairs by sorting."""
    width = max(h1.shape[0], 1)
    pairs = doc.astype(np.int64) * width + form
    pairs.sort()  # then drop repeats: numpy's hash-based unique is far slower (docs/benchmarks.md)
    pairs = pairs[np.concatenate([[True], pairs[1:] != pairs[:-1]])]
    pair_docs, pair_forms = pairs // width, pairs % width
    docs, offsets, blob = build_filters(pair_docs, h1[pair_forms], h2[pair_forms])
    return docs, offsets, blob, np.bincount(pair_forms, minlength=h1.shape[0])


def _kept_terms(
    rough_ids: np.ndarray, seg_len: np.ndarray, rough_term_ids: np.ndarray, rough_kept: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(the term id of every kept word, in order; kept words per segment; where each kept
    word's ids sit in ``rough_term_ids``, to gather parallel arrays the same way).

    A rough token holds no kept term ("the", "..."), one ("wing.") or several
    ("1990–95"); stop words and overlong words take no position. Arrays are
    32-bit where the counts allow (posting ids times NUM_FIELDS included): half the
    memory traffic, and small enough for the allocator to reuse between flushes.
    """
    rough_start = np.concatenate([[0], np.cumsum(rough_kept, dtype=np.int64)[:-1]])
    kept = rough_kept[rough_ids]
    n = int(kept.sum(dtype=np.int64))
    index_type = index_dtype(n)
    kept_end = np.cumsum(kept, dtype=index_type)
    seg_bounds = np.concatenate([[0], np.cumsum(seg_len)])
    kept_before = np.concatenate([np.zeros(1, index_type), kept_end])
    kept_per_seg = (kept_before[seg_bounds[1:]] - kept_before[seg_bounds[:-1]]).astype(np.int64)
    src = np.repeat(rough_start[rough_ids] - (kept_end - kept), kept)
    src += np.arange(n, dtype=index_type)
    return rough_term_ids[src].astype(index_type, copy=False), kept_per_seg, src


@dataclass
class Postings:
    """A drained buffer's postings in column form, sorted by term, then document."""

    terms: list[str]  # the terms present, ascending
    term_starts: np.ndarray  # first posting of each term
    docs: np.ndarray  # uint32 [P]
    tfs: np.ndarray  # uint16 [P, NUM_FIELDS]
    counts: np.ndarray  # uint32 [P]
    positions: np.ndarray  # uint32 [sum(counts)]
    # doc_num -> Bloom filter of its title and body word forms (services.text.analysis.forms)
    forms: dict[int, bytes] = field(default_factory=dict)
    # written form -> documents of this flush holding it (the spelling vocabulary)
    vocabulary: dict[str, int] = field(default_factory=dict)
    # encoded by the job's kernel (``postings_kernels.encoded_runs``): the same bytes
    compiled: bool = False

    @classmethod
    def empty(cls) -> Postings:
        return cls(
            [],
            np.zeros(0, np.int64),
            np.zeros(0, np.uint32),
            np.zeros((0, NUM_FIELDS), np.uint16),
            np.zeros(0, np.uint32),
            np.zeros(0, np.uint32),
        )

    def __len__(self) -> int:
        return len(self.terms)

    def __iter__(self) -> Iterator[tuple[str, Chunk]]:
        """(term, chunk) of each term (for tests and small inputs; the job uses ``encoded``)."""
        ends = np.append(self.term_starts[1:], self.docs.shape[0]).tolist()
        pos_offsets = np.concatenate([[0], np.cumsum(self.counts, dtype=np.int64)]).tolist()
        for term, a, b in zip(self.terms, self.term_starts.tolist(), ends, strict=True):
            yield (
                term,
                Chunk(
                    self.docs[a:b],
                    self.tfs[a:b],
                    self.counts[a:b],
                    self.positions[pos_offsets[a] : pos_offsets[b]],
                ),
            )

    def encoded(self) -> list[tuple[str, bytes]]:
        """(term, wire text) of each term."""
        if not self.terms:
            return []
        encode = encoded_runs if self.compiled else encode_runs
        texts = encode(self.docs, self.tfs, self.counts, self.positions, self.term_starts)
        return list(zip(self.terms, texts, strict=True))
