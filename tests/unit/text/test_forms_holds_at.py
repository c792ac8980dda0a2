"""Word-form filters read across two arrays (a base's mapped, its deltas' joined) answer as
the same filters in one array."""

from __future__ import annotations

import numpy as np

from services.text.analysis.forms import build_filters, form_hashes, holds, holds_at


def test_two_arrays_read_as_one() -> None:
    docs = {0: ["glacier", "ice"], 1: ["desert"], 3: ["fjord", "glacier", "valley"]}
    pairs = [(d, *form_hashes([f])) for d, forms in docs.items() for f in forms]
    pair_docs = np.array([d for d, _, _ in pairs], dtype=np.int64)
    h1 = np.array([int(a[0]) for _, a, _ in pairs], dtype=np.uint64)
    h2 = np.array([int(b[0]) for _, _, b in pairs], dtype=np.uint64)
    held, offsets, packed = build_filters(pair_docs, h1, h2)
    filters = np.frombuffer(packed, dtype=np.uint8)
    per_doc = np.zeros(5, dtype=np.int64)
    per_doc[held + 1] = np.diff(offsets)
    doc_offsets = np.cumsum(per_doc)
    asked = np.arange(4, dtype=np.int64)
    q1, q2 = form_hashes(["glacier", "desert", "valley", "moraine"])
    whole = holds(filters, doc_offsets, asked, q1, q2)
    start = doc_offsets[asked]
    size = doc_offsets[asked + 1] - start
    for cut in (0, int(start[1]), int(start[3]), filters.shape[0]):
        split = holds_at(filters[:cut], start, size, q1, q2, filters[cut:])
        assert split.tolist() == whole.tolist(), cut
    # A Bloom filter has no false negatives: each form is found where it is.
    assert whole[0][0] and whole[0][3] and whole[1][1] and whole[2][3]
    assert not whole[:, 2].any()  # document 2 has no filter: it holds nothing
