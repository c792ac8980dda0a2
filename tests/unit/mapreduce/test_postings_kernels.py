"""The index job's compiled drain steps give numpy's arrays."""

from __future__ import annotations

import numpy as np

from mapreduce.postings import _grouped, _kept_terms
from mapreduce.postings_kernels import encoded_runs, grouped_postings, kept_terms
from mapreduce.postings_wire import NUM_FIELDS, TF_MAX, encode_runs


def test_kept_terms_expand_as_numpy_does_with_the_forms_gathered_alike() -> None:
    rng = np.random.default_rng(21)
    for _ in range(25):
        distinct = int(rng.integers(1, 300))
        rough_kept = rng.choice([0, 0, 1, 1, 1, 2, 3], size=distinct).astype(np.int32)
        rough_term_ids = rng.integers(0, 500, int(rough_kept.sum())).astype(np.int32)
        rough_form_ids = rng.integers(0, 700, int(rough_kept.sum())).astype(np.int32)
        seg_len = rng.integers(0, 40, int(rng.integers(0, 60))).astype(np.int64)
        rough_ids = rng.integers(0, distinct, int(seg_len.sum())).astype(np.int32)
        want_term, want_per_seg, src = _kept_terms(rough_ids, seg_len, rough_term_ids, rough_kept)
        term, per_seg, form = kept_terms(rough_ids, seg_len, rough_term_ids, rough_kept, rough_form_ids)
        assert term.dtype == want_term.dtype and term.tolist() == want_term.tolist()
        assert per_seg.tolist() == want_per_seg.tolist()
        assert form.tolist() == rough_form_ids[src].tolist()


def _as_lists(group: tuple[np.ndarray, ...]) -> list[tuple[str, list]]:
    return [(str(a.dtype), a.tolist()) for a in group]


def test_postings_grouped_in_two_passes_are_numpys_sorted_groups() -> None:
    rng = np.random.default_rng(22)
    for _ in range(25):
        n = int(rng.integers(1, 5000))
        num_terms = int(rng.integers(1, 400))
        term = rng.integers(0, num_terms, n).astype(np.int32)
        doc = np.sort(rng.integers(0, int(rng.integers(1, 300)), n)).astype(np.uint32)
        field_of = rng.integers(0, NUM_FIELDS, n).astype(np.int8)
        pos = np.where(rng.random(n) < 0.3, -1, rng.integers(0, 900, n)).astype(np.int32)
        group = grouped_postings(term, doc, field_of, pos, num_terms, NUM_FIELDS)
        assert group is not None
        assert _as_lists(group) == _as_lists(_grouped(term, doc, field_of, pos, num_terms))


def test_a_field_frequency_past_the_limit_is_clipped_alike() -> None:
    n = TF_MAX + 10
    term = np.zeros(n, np.int32)
    doc = np.zeros(n, np.uint32)
    field_of = np.ones(n, np.int8)
    pos = np.arange(n, dtype=np.int32)
    group = grouped_postings(term, doc, field_of, pos, 1, NUM_FIELDS)
    assert group is not None and int(group[3][0, 1]) == TF_MAX and int(group[4][0]) == n
    assert _as_lists(group) == _as_lists(_grouped(term, doc, field_of, pos, 1))


def test_words_of_documents_out_of_order_are_left_to_numpy() -> None:
    doc = np.array([2, 1], np.uint32)
    ones = np.ones(2, np.int32)
    assert grouped_postings(ones, doc, ones.astype(np.int8), ones, 2, NUM_FIELDS) is None


def test_the_compiled_encoder_writes_encode_runs_bytes_narrow_and_wide() -> None:
    rng = np.random.default_rng(23)
    for _ in range(30):
        runs = int(rng.integers(1, 12))
        sizes = rng.integers(1, 40, runs)
        n = int(sizes.sum())
        docs = np.sort(rng.choice(10_000, n, replace=False)).astype(np.uint32)
        big = rng.random() < 0.3  # some flushes with a field frequency, a count or a position past narrow
        tfs = rng.integers(0, 300 if big else 9, (n, NUM_FIELDS)).astype(np.uint16)
        counts = rng.integers(0, 5, n).astype(np.uint32)
        if big:
            counts[rng.integers(0, n)] = 300
        positions = rng.integers(0, 70_000 if big else 900, int(counts.sum())).astype(np.uint32)
        run_starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        assert encoded_runs(docs, tfs, counts, positions, run_starts) == encode_runs(
            docs, tfs, counts, positions, run_starts
        )
