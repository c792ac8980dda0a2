"""The index job's pure parts: fields, positions, in-mapper combining, merging chunks."""

from __future__ import annotations

from mapreduce.postings import (
    PostingBuffer,
    anchor_postings,
    document_postings,
    merge_chunks,
    url_words,
)
from services.storage.records import Record


def test_url_words_split_host_and_path():
    assert url_words("https://www.Example.com/Flow-Models/a_b?x=1") == \
        "www Example com Flow Models a b x 1"


def test_document_fields_and_positions():
    rec = Record(4, "http://w.test/wing", "", "", "text/html", title="Wing lift",
                 description="Lift!", text="the wing")
    p = document_postings(rec)
    assert p.lengths == (2, 2, 0, 3)  # url: w, test, wing
    assert p.terms["wing"] == [1, 1, 0, 1, [0, 4]]  # title pos 0; body after title + gap
    assert p.terms["lift"] == [1, 1, 0, 0, [1, 3]]


def test_buffer_combines_documents_and_merge_joins_anchor_and_page_postings():
    buffer = PostingBuffer()
    buffer.add(document_postings(Record(7, "http://a.test/", "", "", "text/html", text="wing wing")))
    buffer.add(document_postings(Record(2, "http://b.test/", "", "", "text/html", text="wing")))
    assert buffer.postings == 5  # doc 7: wing, test ("a" is a stop word); doc 2: wing, b, test
    page = dict(buffer.drain())
    anchors = PostingBuffer()
    anchors.add(anchor_postings(7, "Wing page | wings"))
    merged = merge_chunks([page["wing"], dict(anchors.drain())["wing"]])
    assert merged == [[2, 7], [0, 0], [1, 2], [0, 2], [0, 0], [1, 2], [1, 1, 2]]
    assert buffer.chunks == {} and buffer.postings == 0
