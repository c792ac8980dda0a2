"""Impacts stored one byte each: within half a step of the float, never 0 where they were
not, never past the bound, the same bytes whichever documents a segment holds."""

from __future__ import annotations

import numpy as np
import pytest

from services.ranking.bm25f import bm25_idf
from services.ranking.impact_levels import (
    LEVELS,
    dequantize,
    dequantize_terms,
    impact_scales,
    quantize,
    term_maxima,
)

K1 = 1.2


def test_levels_are_within_half_a_step_and_below_the_bound() -> None:
    rng = np.random.default_rng(3)
    idf = np.array([0.05, 1.0, 9.7], np.float32)  # a word on every page, a common one, a rare one
    scales = impact_scales(idf, K1)
    per_term = np.array([1000, 1000, 1000])
    saturation = rng.random(3000).astype(np.float32)  # tf~ / (tf~ + k1), in [0, 1)
    impacts = (np.repeat(idf, per_term) * saturation * np.float32(K1 + 1)).astype(np.float32)
    levels = quantize(impacts, scales, per_term)
    assert levels.dtype == np.uint8 and int(levels.max()) <= LEVELS
    back = dequantize_terms(levels, scales, per_term)
    steps = np.repeat(scales, per_term)
    lifted = impacts < steps * 0.5  # kept at one step, not rounded to 0
    error = np.abs(back - impacts)
    assert np.all(error[~lifted] <= steps[~lifted] * 0.5 + impacts[~lifted] * 1e-6)
    assert lifted.any() and np.all(levels[lifted] == 1) and np.all(error[lifted] <= steps[lifted])


def test_a_positive_impact_keeps_a_step_and_zero_stays_zero() -> None:
    scales = impact_scales(np.array([2.0], np.float32), K1)
    tiny = np.array([0.0, 1e-9, float(scales[0]) * 0.49], np.float32)
    assert quantize(tiny, scales, np.array([3])).tolist() == [0, 1, 1]


def test_the_bound_itself_is_the_last_level() -> None:
    idf = np.array([3.0], np.float32)
    top = np.array([3.0 * (K1 + 1)], np.float32)  # unreachable by BM25F, clipped if met
    assert quantize(top, impact_scales(idf, K1), np.array([1])).tolist() == [LEVELS]


def test_the_step_depends_on_the_term_not_on_the_segment() -> None:
    """A delta and the full build score a posting against the same collection: same byte."""
    idf = bm25_idf(np.array([5, 50]), 1000).astype(np.float32)
    scales = impact_scales(idf, K1)
    impacts = np.array([1.7, 0.3, 0.9], np.float32)
    whole = quantize(impacts, scales, np.array([2, 1]))
    part = quantize(impacts[2:], scales[1:], np.array([1]))  # a segment holding only the second term
    assert whole[2:].tolist() == part.tolist()


def test_term_maxima_are_the_largest_stored_impacts_and_zero_for_empty_terms() -> None:
    levels = np.array([3, 200, 7, 255, 1], np.uint8)
    scales = np.array([0.5, 1.0, 0.25, 2.0], np.float32)
    offsets = np.array([0, 2, 2, 4, 5])  # the second term has no postings
    got = term_maxima(levels, scales, offsets)
    assert got.tolist() == [100.0, 0.0, 255 * 0.25, 2.0]
    assert got[0] == dequantize(levels[:2], scales[0]).max()


def test_corrupt_inputs_are_refused_not_stored() -> None:
    scales = impact_scales(np.array([1.0], np.float32), K1)
    with pytest.raises(ValueError, match="not finite"):
        quantize(np.array([np.nan], np.float32), scales, np.array([1]))
    with pytest.raises(ValueError, match="2 impacts but the terms hold 1"):
        quantize(np.ones(2, np.float32), scales, np.array([1]))
