"""Phrase matching over positions, against a brute-force check."""

from __future__ import annotations

import numpy as np

from mapreduce.mr_index import LENGTH, TERM
from mapreduce.postings import PostingBuffer
from services.indexing.index_rows import collect_index_rows
from services.indexing.segment_arrays import segment_arrays
from services.search.retrieval.phrase import phrase_matches
from services.search.retrieval.rank import QueryTerm, intersect_docs
from services.search.retrieval.segment import SegmentIndex
from services.storage.formats.records import Record
from services.storage.formats.segment_codec import compact_segment
from services.text.analysis.analyze import analyze

TEXTS = [
    ("Boundary layer", "the boundary layer of a wing"),
    ("Layers", "a layer near the boundary; boundary conditions"),
    ("Flow", "boundary layer flow and boundary layer separation"),
    ("Boundary", "layer"),  # title ends with "boundary", body starts with "layer": no phrase
]


def index_of(texts: list[tuple[str, str]]) -> SegmentIndex:
    buffer, rows = PostingBuffer(), []
    for num, (title, text) in enumerate(texts):
        buffer.add(Record(num, f"http://t.test/{num}", "", "", "text/html", title=title, text=text))
    chunks, lengths = buffer.drain()
    rows += [([LENGTH, num], [n or 0 for n in fields]) for num, fields in lengths.items()]
    rows += [([TERM, t], c.encode()) for t, c in chunks]
    n = len(texts)
    return SegmentIndex(
        0, "t", None, {}, compact_segment(segment_arrays(collect_index_rows(rows), np.full(n, 1 / n), n))
    )


def matches(index: SegmentIndex, phrase: str) -> list[int]:
    ids = [index.term_id(t) for t in analyze(phrase)]
    terms = [QueryTerm(1.0, *index.postings(i), 1.0) for i in ids]
    candidates = intersect_docs(terms)
    return phrase_matches(candidates, ids, index.locate, index.positions).tolist()


def brute_force(phrase: str) -> list[int]:
    want = analyze(phrase)
    found = []
    for num, (title, text) in enumerate(TEXTS):
        for stream in (analyze(title), analyze(text)):
            if any(stream[i : i + len(want)] == want for i in range(len(stream))):
                found.append(num)
                break
    return found


def test_phrase_needs_adjacent_terms_in_order_within_one_field():
    index = index_of(TEXTS)
    assert matches(index, "boundary layer") == brute_force("boundary layer") == [0, 2]
    assert matches(index, "layer boundary") == brute_force("layer boundary") == []
    assert matches(index, "boundary layer flow") == [2]
    assert matches(index, "boundary conditions") == [1]
