"""The words-as-typed rescore's reorder (``exact_forms._rescored``) against numpy's: the same
scores to the bit, the same order, ties kept in their first-phase order."""

from __future__ import annotations

import numpy as np
import pytest

from services.search.retrieval.exact_forms import EXACT_FORM_BONUS, _rescored


@pytest.mark.parametrize("seed", range(20))
def test_the_compiled_reorder_equals_numpys(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    final = np.sort(rng.random(n))[::-1].copy()
    if seed % 2:  # ties: equal scores, shares that keep or break them
        final = np.round(final, 1)
    forms = int(rng.integers(1, 4))
    share = rng.integers(0, forms + 1, n) / forms
    k = int(rng.choice([1, 10, n, n + 5]))
    want_final = final * (1.0 + EXACT_FORM_BONUS * share)
    want_order = np.argsort(-want_final, kind="stable")[:k]
    order, got_final = _rescored(final, share, EXACT_FORM_BONUS, k)
    assert got_final.tolist() == want_final.tolist()
    assert order.tolist() == want_order.tolist()


def test_a_page_holding_the_words_as_typed_moves_above_its_equal() -> None:
    order, final = _rescored(np.array([2.0, 2.0, 1.0]), np.array([0.0, 1.0, 1.0]), EXACT_FORM_BONUS, 3)
    assert order.tolist() == [1, 0, 2]  # the bonus orders near-equals
    assert final[2] < final[0]  # and cannot lift a weak match over a strong one
