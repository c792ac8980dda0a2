"""Word-form filters read across two arrays (a base's mapped, its deltas' joined) answer as
the same filters in one array."""

from __future__ import annotations

import numpy as np

from services.text.analysis.forms import (
    build_filters,
    form_hashes,
    form_pairs,
    held_shares,
    holds,
    holds_at_reference,
    holds_in,
)


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
        split = holds_in(filters[:cut], start, start + size, np.arange(start.shape[0]), q1, q2, filters[cut:])
        assert split.tolist() == whole.tolist(), cut
    # A Bloom filter has no false negatives: each form is found where it is.
    assert whole[0][0] and whole[0][3] and whole[1][1] and whole[2][3]
    assert not whole[:, 2].any()  # document 2 has no filter: it holds nothing


def test_the_compiled_probe_answers_as_the_numpy_reference() -> None:
    """Random filters of random sizes (some documents with none), read whole and split in
    two arrays at every document boundary, one form and several."""
    rng = np.random.default_rng(7)
    forms = [f"form{i}" for i in range(60)]
    per_doc = {d: list(rng.choice(forms, size=int(rng.integers(0, 12)), replace=False)) for d in range(40)}
    pairs = [(d, *form_hashes([f])) for d, held in per_doc.items() for f in held]
    pair_docs = np.array([d for d, _, _ in pairs], dtype=np.int64)
    h1 = np.array([int(a[0]) for _, a, _ in pairs], dtype=np.uint64)
    h2 = np.array([int(b[0]) for _, _, b in pairs], dtype=np.uint64)
    held, offsets, packed = build_filters(pair_docs, h1, h2)
    filters = np.frombuffer(packed, dtype=np.uint8)
    sizes = np.zeros(41, dtype=np.int64)
    sizes[held + 1] = np.diff(offsets)
    doc_offsets = np.cumsum(sizes)
    asked = rng.permutation(40).astype(np.int64)
    start, size = doc_offsets[asked], doc_offsets[asked + 1] - doc_offsets[asked]
    q1, q2 = form_hashes(forms[:25])
    for cut in sorted({0, filters.shape[0], *doc_offsets[::7].tolist()}):
        parts = (filters[:cut], start, size)
        got = holds_in(filters[:cut], start, start + size, np.arange(40), q1, q2, filters[cut:])
        assert got.tolist() == holds_at_reference(*parts, q1, q2, filters[cut:]).tolist(), cut
        one = holds_in(
            filters[:cut], start, start + size, np.arange(40), int(q1[3]), int(q2[3]), filters[cut:]
        )
        assert one.shape == (40,) and one.tolist() == got[3].tolist()
        # The share of the forms each holds, in the probe's pass: the rows summed, as numpy sums them.
        shares = held_shares(
            filters[:cut], start, start + size, np.arange(40), form_pairs(forms[:25]), filters[cut:]
        )
        assert shares.tolist() == (got.sum(axis=0) / 25).tolist(), cut
    # No false negatives: every document holds each of its own forms.
    for d, held_forms in per_doc.items():
        if held_forms:
            f1, f2 = form_hashes(held_forms)
            assert holds(filters, doc_offsets, np.array([d]), f1, f2).all()


def test_form_pairs_are_form_hashes_one_form_after_another() -> None:
    forms = ["glacier", "Glaciers", "ß", "東京", ""]
    h1, h2 = form_hashes(forms)
    pairs = form_pairs(forms)
    assert pairs[0::2].tolist() == h1.tolist()
    assert (pairs[1::2] | np.uint64(1)).tolist() == h2.tolist()
    empty = np.frombuffer(b"\x01", dtype=np.uint8)  # no pairs: no form is held anywhere
    assert held_shares(
        empty, np.zeros(1, np.int64), np.ones(1, np.int64), np.zeros(1), form_pairs([])
    ).tolist() == [0.0]
