"""The index job's pure parts: fields, positions, block-at-a-time combining, merging chunks."""

from __future__ import annotations

import random

from mapreduce.postings import (
    Chunk,
    PostingBuffer,
    anchor_postings,
    document_postings,
    merge_chunks,
    url_words,
)
from services.storage.records import Record

WORDS = ["wing", "lift", "drag", "flow", "boundary", "layer", "shock", "wave", "the", "of",
         "supersonic", "nozzle", "heat"]


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


def reference(records: list[Record], anchors: dict[int, str]) -> dict[str, dict[int, list]]:
    """Per-document postings (document_postings / anchor_postings), merged by hand."""
    out: dict[str, dict[int, list]] = {}
    docs = [document_postings(r) for r in records]
    docs += [anchor_postings(doc, text) for doc, text in anchors.items()]
    for d in docs:
        for term, (tt, tb, ta, tu, positions) in d.terms.items():
            entry = out.setdefault(term, {}).setdefault(d.doc, [0, 0, 0, 0, []])
            for i, v in enumerate((tt, tb, ta, tu)):
                entry[i] += v
            entry[4] = sorted(entry[4] + positions)
    return out


def as_dict(chunks) -> dict[str, dict[int, list]]:
    out = {}
    for term, chunk in chunks:
        docs, tt, tb, ta, tu, counts, positions = chunk.as_lists()
        assert docs == sorted(set(docs))  # ascending, one posting per document
        at, entries = 0, {}
        for i, d in enumerate(docs):
            entries[d] = [tt[i], tb[i], ta[i], tu[i], positions[at:at + counts[i]]]
            at += counts[i]
        out[term] = entries
    return out


def test_block_buffer_gives_the_per_document_postings():
    rng = random.Random(7)
    records = [Record(num, f"http://h{num % 3}.test/{rng.choice(WORDS)}", "", "", "text/html",
                      title=" ".join(rng.choices(WORDS, k=rng.randint(0, 4))),
                      text=" ".join(rng.choices(WORDS, k=rng.randint(0, 60))))
               for num in rng.sample(range(100), 40)]  # doc_nums out of order, as after recrawls
    anchors = {num: " | ".join(rng.choices(WORDS, k=3)) for num in rng.sample(range(100), 10)}
    buffer = PostingBuffer()
    for r in records:
        buffer.add(r)
    for doc, text in anchors.items():
        buffer.add_anchor(doc, text)
    chunks, lengths = buffer.drain()
    assert as_dict(chunks) == reference(records, anchors)
    for r in records:
        title, body, _anchor, url = document_postings(r).lengths
        anchor = anchor_postings(r.doc_num, anchors[r.doc_num]).lengths[2] \
            if r.doc_num in anchors else None
        assert lengths[r.doc_num] == [title, body, anchor, url]
    assert all(lengths[doc][2] is not None for doc in anchors)
    assert buffer.tokens == 0 and buffer.drain() == ([], {})


def test_merge_concatenates_disjoint_chunks_and_joins_overlapping_ones():
    a = PostingBuffer()
    a.add(Record(7, "http://a.test/", "", "", "text/html", text="wing wing"))
    b = PostingBuffer()
    b.add(Record(2, "http://b.test/", "", "", "text/html", text="wing"))
    c = PostingBuffer()
    c.add_anchor(7, "Wing page | wings")
    wing = [dict(x.drain()[0])["wing"] for x in (a, b, c)]
    assert merge_chunks(wing[:2]).as_lists() == \
        [[2, 7], [0, 0], [1, 2], [0, 0], [0, 0], [1, 2], [1, 1, 2]]
    merged = merge_chunks(wing)
    assert merged.as_lists() == [[2, 7], [0, 0], [1, 2], [0, 2], [0, 0], [1, 2], [1, 1, 2]]
    assert Chunk.decode(merged.encode()).as_lists() == merged.as_lists()  # the wire format
