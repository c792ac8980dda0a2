"""RM3 weights on a forward index small enough to work by hand."""

from __future__ import annotations

import numpy as np
import pytest

from services.search.feedback import rm3_weights

# Doc 0: term 0 x2, term 1 x2 (length 4); doc 1: term 0 x1, term 2 x3 (length 4).
FWD_OFFSETS = np.array([0, 2, 4], np.uint64)
FWD_TERMS = np.array([0, 1, 0, 2], np.uint32)
FWD_TFS = np.array([2, 2, 1, 3], np.uint16)
LENGTHS = np.array([4, 4], np.uint32)


def test_rm3_mixes_the_query_with_the_feedback_documents_model():
    got = rm3_weights(
        {0: 1.0},
        np.array([0, 1]),
        np.array([3.0, 1.0]),
        FWD_OFFSETS,
        FWD_TERMS,
        FWD_TFS,
        LENGTHS,
        fb_terms=10,
        original_weight=0.5,
    )
    # p(d) = 0.75, 0.25; RM1: t0 = .75*.5 + .25*.25 = .4375, t1 = .375, t2 = .1875 (sum 1)
    assert got == pytest.approx({0: 0.5 + 0.5 * 0.4375, 1: 0.5 * 0.375, 2: 0.5 * 0.1875})
    assert sum(got.values()) == pytest.approx(1.0)  # the original query's length


def test_rm3_keeps_the_most_likely_terms_only_and_off_means_unchanged():
    got = rm3_weights(
        {0: 2.0},
        np.array([0, 1]),
        np.array([3.0, 1.0]),
        FWD_OFFSETS,
        FWD_TERMS,
        FWD_TFS,
        LENGTHS,
        fb_terms=2,
        original_weight=0.5,
    )
    assert set(got) == {0, 1} and sum(got.values()) == pytest.approx(2.0)
    assert rm3_weights(
        {0: 1.0},
        np.array([], np.int64),
        np.array([]),
        FWD_OFFSETS,
        FWD_TERMS,
        FWD_TFS,
        LENGTHS,
        fb_terms=10,
        original_weight=0.5,
    ) == {0: 1.0}
