"""Per-document Bloom filters of word forms: no false negatives, few false positives."""

from __future__ import annotations

import numpy as np

from mapreduce.postings import PostingBuffer
from services.storage.formats.records import Record
from services.text.analysis.forms import build_filters, filters_in_document_order, form_hashes, holds


def _filters(docs: list[list[str]]) -> tuple[np.ndarray, np.ndarray, list[str]]:
    vocab = sorted({f for d in docs for f in d})
    ids = {f: i for i, f in enumerate(vocab)}
    pairs = sorted({(d, ids[f]) for d, forms in enumerate(docs) for f in forms})
    h1, h2 = form_hashes(vocab)
    pair_docs = np.array([d for d, _ in pairs], np.int64)
    pair_forms = np.array([f for _, f in pairs], np.int64)
    found, offsets, blob = build_filters(pair_docs, h1[pair_forms], h2[pair_forms])
    full = np.zeros(len(docs) + 1, np.int64)  # offsets for every document, as publish stores them
    for i, d in enumerate(found.tolist()):
        full[d + 1] = offsets[i + 1] - offsets[i]
    return np.frombuffer(blob, np.uint8), np.cumsum(full), vocab


def test_every_form_a_document_holds_is_found_and_few_others_are() -> None:
    rng = np.random.default_rng(5)
    words = [f"form{i}" for i in range(5000)]
    docs = [list(rng.choice(words, size=int(rng.integers(5, 400)), replace=False)) for _ in range(40)]
    docs.append([])  # a document without title or body words
    filters, offsets, _ = _filters(docs)
    every = np.arange(len(docs))
    false, asked = 0, 0
    for probe in words[:600]:
        h1, h2 = form_hashes([probe])
        got = holds(filters, offsets, every, int(h1[0]), int(h2[0]))
        truth = np.array([probe in d for d in docs])
        assert not (truth & ~got).any()  # never a false negative
        false += int((got & ~truth).sum())
        asked += int((~truth).sum())
    assert false / asked < 0.06  # ~3 % expected at 8 bits and 3 probes per form
    assert not got[-1]


def test_the_index_job_records_each_documents_forms_before_stemming() -> None:
    buffer = PostingBuffer()
    buffer.add(
        Record(0, "http://x/a", "", "", "text/html", "Experiments", "The experiment's U.S. results", "")
    )
    buffer.add(Record(1, "http://x/b", "", "", "text/html", "Experience", "An experience", ""))
    postings, _ = buffer.drain()
    terms = dict(postings)
    assert set(terms["experi"].docs.tolist()) == {0, 1}  # one stem for both words
    blobs = [postings.forms[0], postings.forms[1]]
    filters = np.frombuffer(b"".join(blobs), np.uint8)
    offsets = np.array([0, len(blobs[0]), len(blobs[0]) + len(blobs[1])])
    for form, expected in (
        ("experiments", [True, False]),
        ("experience", [False, True]),
        ("us", [True, False]),
    ):
        h1, h2 = form_hashes([form])
        assert holds(filters, offsets, np.array([0, 1]), int(h1[0]), int(h2[0])).tolist() == expected, form


def test_several_forms_at_once_answer_as_each_form_alone():
    rng = np.random.default_rng(4)
    docs_forms = [[f"w{rng.integers(0, 60)}" for _ in range(rng.integers(0, 12))] for _ in range(40)]
    pairs = sorted({(d, f) for d, forms in enumerate(docs_forms) for f in forms})
    h1, h2 = form_hashes([f for _, f in pairs])
    docs, offsets_by_doc, blob = build_filters(np.array([d for d, _ in pairs]), h1, h2)
    offsets = np.zeros(41, dtype=np.int64)  # one entry per document + 1, empty filters between
    starts, ends = offsets_by_doc[:-1].tolist(), offsets_by_doc[1:].tolist()
    for d, start, end in zip(docs.tolist(), starts, ends, strict=True):
        offsets[d] = start
        offsets[d + 1 :] = end
    filters = np.frombuffer(blob, dtype=np.uint8)
    every = np.arange(40)
    q1, q2 = form_hashes(["w1", "w7", "w33", "never"])
    together = holds(filters, offsets, every, q1, q2)
    assert together.shape == (4, 40)
    for i in range(4):
        assert together[i].tolist() == holds(filters, offsets, every, int(q1[i]), int(q2[i])).tolist()
    assert together[:3].any()  # the test is about something: some documents hold these forms


def test_filters_built_in_document_order_are_build_filters_bytes_and_counts() -> None:
    rng = np.random.default_rng(8)
    forms = [f"form{i}" for i in range(300)]
    h1, h2 = form_hashes(forms)
    for _ in range(20):
        n = int(rng.integers(1, 4000))
        doc = np.sort(rng.integers(0, int(rng.integers(1, 150)), n)).astype(np.uint32)
        form = rng.integers(0, len(forms), n).astype(np.int32)
        docs, offsets, blob, held = filters_in_document_order(doc, form, h1, h2)
        pairs = sorted(set(zip(doc.tolist(), form.tolist(), strict=True)))
        pair_docs = np.array([d for d, _ in pairs], np.int64)
        pair_forms = np.array([f for _, f in pairs], np.int64)
        want_docs, want_offsets, want_blob = build_filters(pair_docs, h1[pair_forms], h2[pair_forms])
        assert docs.tolist() == want_docs.tolist() and offsets.tolist() == want_offsets.tolist()
        assert blob == want_blob
        assert held.tolist() == np.bincount(pair_forms, minlength=len(forms)).tolist()


def test_filters_of_documents_out_of_order_are_left_to_the_sort() -> None:
    h1, h2 = form_hashes(["a", "b"])
    doc = np.array([3, 3, 1, 4], np.uint32)  # document 1 after document 3
    assert filters_in_document_order(doc, np.array([0, 1, 0, 1], np.int32), h1, h2) is None
