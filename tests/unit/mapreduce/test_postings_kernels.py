"""The index job's compiled drain steps give numpy's arrays."""

from __future__ import annotations

import numpy as np

from mapreduce.postings import _kept_terms
from mapreduce.postings_kernels import kept_terms


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
