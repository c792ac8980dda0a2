"""The compiled AND top-k against numpy's intersection, filtered, scored and cut to k as the
retrieval did it: the same documents, the same scores to the bit, the same count."""

from __future__ import annotations

import numpy as np
import pytest

from services.search.retrieval.conjunction import top_k_and
from services.search.retrieval.rank import best_of, combine, conjunctive
from tests.unit.search.retrieval.random_postings import random_source, terms_of


def numpy_and(terms, prior, k, excluded, allowed):  # type: ignore[no-untyped-def]
    docs, text = conjunctive(terms, prior.shape[0])
    keep = ~np.isin(docs, excluded) if excluded is not None else np.ones(docs.shape[0], dtype=bool)
    if allowed is not None:
        keep &= allowed[docs]
    docs, text = docs[keep], text[keep]
    return best_of(docs, combine(text, prior[docs]), text, k, int(docs.shape[0]))


@pytest.mark.parametrize("seed", range(60))
def test_the_compiled_and_equals_numpys(seed: int) -> None:
    rng = np.random.default_rng(2000 + seed)
    num_docs = int(rng.choice([50, 3000, 20000]))
    # Few lists and long ones, so that most queries have matches; ties and zeros on some seeds.
    source = random_source(rng, num_docs, 6, ties=seed % 2 == 0, zeros=seed % 5 == 0)
    terms = terms_of(rng, source, int(rng.integers(1, 5)))
    prior = np.where(rng.random(num_docs) < 0.3, 0.0, rng.random(num_docs) * 0.4)
    k = int(rng.choice([0, 1, 10, 1000]))
    excluded = np.sort(rng.choice(num_docs, size=num_docs // 10, replace=False)).astype(np.uint32)
    use_excluded = excluded if seed % 4 < 2 else None
    allowed = rng.random(num_docs) < 0.8 if seed % 3 == 0 else None
    want = numpy_and(terms, prior, k, use_excluded, allowed)
    lists = [(t.weight, t.base_term, t.docs, t.read_impacts) for t in terms]
    docs, final, text, count = top_k_and(source, lists, prior, k, use_excluded, allowed)
    assert docs.tolist() == want.docs.tolist()
    assert final.tolist() == want.final.tolist()  # to the bit
    assert text.tolist() == want.text.tolist()
    assert count == want.total


def test_a_term_without_documents_matches_nothing() -> None:
    docs = np.array([1, 2, 3], np.uint32)
    impacts = np.ones(3, np.float32)
    empty = (1.0, None, np.zeros(0, np.uint32), np.zeros(0, np.float32))
    got = top_k_and(None, [(1.0, None, docs, impacts), empty], np.zeros(5), 10)
    assert (got[0].tolist(), got[3]) == ([], 0)


def test_matches_past_the_first_k_are_counted_not_ranked() -> None:
    docs = np.arange(100, dtype=np.uint32)
    impacts = np.linspace(1.0, 2.0, 100).astype(np.float32)
    every_other = docs[::2].copy(), impacts[::2].copy()
    got = top_k_and(None, [(1.0, None, docs, impacts), (1.0, None, *every_other)], np.zeros(100), 3)
    assert got[0].tolist() == [98, 96, 94] and got[3] == 50
