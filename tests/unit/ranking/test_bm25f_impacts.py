"""BM25F impacts against the formula worked by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from services.ranking.bm25f import BM25FParams, FieldParams, bm25_idf, impacts


def test_idf_is_lucenes_and_stays_positive():
    idf = bm25_idf(np.array([1, 5, 10]), 10)
    assert idf.tolist() == pytest.approx(
        [math.log(1 + 9.5 / 1.5), math.log(1 + 5.5 / 5.5), math.log(1 + 0.5 / 10.5)]
    )
    assert (idf > 0).all()


def test_fields_are_normalised_weighted_and_summed_before_saturation():
    params = BM25FParams(
        1.2,
        {
            "title": FieldParams(2.0, 0.5),
            "body": FieldParams(1.0, 0.75),
            "anchor": FieldParams(1.0, 0.75),
            "url": FieldParams(0.0, 0.5),
            "meta": FieldParams(1.0, 0.75),
            "nav": FieldParams(0.25, 0.5),
        },
    )
    # Two documents; the term is in doc 0's title once and body twice, in doc 1's body once,
    # its meta description once and its navigation twice.
    docs = np.array([0, 1], np.uint32)
    tfs = [np.array(x) for x in ([1, 0], [2, 1], [0, 0], [3, 3], [0, 1], [0, 2])]
    lengths = [np.array(x) for x in ([2, 4], [10, 30], [0, 0], [1, 1], [0, 8], [6, 2])]
    idf = np.array([0.7])
    got = impacts(docs, tfs, np.array([0, 0]), idf, lengths, params)
    # avg title 3, body 20, meta 4, nav 4; anchor all empty -> avg 1; url weight 0 -> ignored.
    pseudo0 = 2.0 * 1 / (0.5 + 0.5 * 2 / 3) + 1.0 * 2 / (0.25 + 0.75 * 10 / 20)
    pseudo1 = 1.0 * 1 / (0.25 + 0.75 * 30 / 20) + 1.0 * 1 / (0.25 + 0.75 * 8 / 4)
    pseudo1 += 0.25 * 2 / (0.5 + 0.5 * 2 / 4)
    want = [0.7 * p * 2.2 / (p + 1.2) for p in (pseudo0, pseudo1)]
    assert got.dtype == np.float32
    assert got.tolist() == pytest.approx(want, rel=1e-6)


def test_impact_saturates_below_idf_times_k1_plus_one():
    docs = np.zeros(3, np.uint32)
    tfs = [np.zeros(3), np.array([1, 10, 1000]), np.zeros(3), np.zeros(3), np.zeros(3), np.zeros(3)]
    lengths = [np.array([0]), np.array([50]), np.array([0]), np.array([0]), np.array([0]), np.array([0])]
    got = impacts(docs, tfs, np.zeros(3, np.int64), np.array([1.0]), lengths)
    assert got[0] < got[1] < got[2] < 2.2
    assert got[2] - got[1] < got[1] - got[0]


def test_params_round_trip_through_segment_meta():
    params = BM25FParams()
    assert BM25FParams.from_meta(params.to_meta()) == params


def test_a_word_only_in_the_navigation_counts_for_less_than_once_in_the_body():
    """The default weights: one occurrence in a nav of average length against one in a body
    of average length (docs/ranking.md: about 0.38 of the idf against 1.0)."""
    docs = np.array([0, 1], np.uint32)
    zero = np.zeros(2)
    tfs = [zero, np.array([1, 0]), zero, zero, zero, np.array([0, 1])]
    lengths = [np.array([3, 3]), np.array([100, 100]), zero, zero, zero, np.array([40, 40])]
    body, nav = impacts(docs, tfs, np.array([0, 0]), np.array([1.0]), lengths).tolist()
    assert body == pytest.approx(1.0) and nav == pytest.approx(0.25 * 2.2 / 1.45, rel=1e-6)


def test_a_full_length_normalisation_with_empty_fields_gives_numbers_not_nan():
    """b = 1 makes an empty field's normaliser 0: a posting without the word there adds 0,
    as it would with any other b, instead of 0 / 0."""
    fields = ("title", "body", "anchor", "url", "meta", "nav")
    full = BM25FParams(1.2, {name: FieldParams(1.0, 1.0) for name in fields})
    docs = np.array([0, 1, 2], np.uint32)
    tfs = [np.array(x) for x in ([1, 0, 0], [2, 1, 0], [0, 0, 0], [0, 0, 0], [0, 0, 1], [0, 0, 0])]
    lengths = [np.array(x) for x in ([2, 0, 0], [10, 30, 0], [0, 0, 0], [0, 0, 0], [0, 0, 4], [0, 0, 0])]
    got = impacts(docs, tfs, np.array([0, 0, 0]), np.array([0.7]), lengths, full)
    assert np.isfinite(got).all() and (got > 0).all()
    # Doc 1: only its body holds the word: the same impact as BM25 over the body alone.
    body = 1 / (30 / (40 / 3))  # b = 1: the length over the mean body length (10, 30, 0)
    assert got[1] == pytest.approx(0.7 * body * 2.2 / (body + 1.2), rel=1e-6)
