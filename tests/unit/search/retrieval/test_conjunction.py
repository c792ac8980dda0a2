"""The compiled AND top-k against numpy's intersection, filtered, scored and cut to k as the
retrieval did it: the same documents, the same scores to the bit, the same count."""

from __future__ import annotations

import numpy as np
import pytest

from services.ranking.impact_levels import dequantize
from services.search.retrieval.conjunction import top_k_and
from services.search.retrieval.conjunction_kernel import SEEK_COST, WINDOW
from services.search.retrieval.posting_layout import source_of
from services.search.retrieval.rank import QueryTerm, best_of, combine, conjunctive
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


@pytest.mark.parametrize("seed", range(24))
def test_lists_narrowed_window_by_window_equal_numpys(seed: int) -> None:
    """Long lists, intersected a window of documents at a time: the first followers, about as
    long as the lead, read in turn into the window's table; the later, longer ones, left with
    few candidates, seek them. The same matches, scores and count as numpy's, across windows,
    gaps wider than a window, lists the query built and lists that end early."""
    rng = np.random.default_rng(9000 + seed)
    num_docs = 24 * WINDOW if seed % 4 == 0 else int(rng.choice([24 * WINDOW + 17, 48 * WINDOW]))
    m = int(rng.integers(2, 5))
    lead_n = int(rng.integers(WINDOW, num_docs // 16))
    # A follower of about the lead's length is read in turn; one 2-3 times longer, after the
    # first thinned the candidates (to at most a sixteenth), is sought.
    sizes = [lead_n, int(lead_n * rng.uniform(1.0, 1.5))]
    sizes += [int(min(num_docs - 1, lead_n * rng.uniform(2.0, 3.0))) for _ in range(m - 2)]
    docs, levels, offsets = [], [], [0]
    for t, n in enumerate(sizes):
        span = num_docs if t % 2 == 0 or seed % 3 else num_docs // 2  # some end halfway
        held = np.sort(rng.choice(span, size=min(n, span), replace=False)).astype(np.uint32)
        if seed % 4 == 0:  # a gap wider than a window in every list
            held = held[(held < WINDOW // 2) | (held > 3 * WINDOW)]
        docs.append(held)
        levels.append(rng.integers(0 if seed % 5 == 0 else 1, 256, held.shape[0]).astype(np.uint8))
        offsets.append(offsets[-1] + held.shape[0])
    source = source_of(
        np.concatenate(docs), np.concatenate(levels), np.full(m, 0.01, np.float32), np.array(offsets)
    )
    terms = []
    for t in range(m):
        impacts = dequantize(levels[t], 0.01)
        weight = float(rng.choice([1.0, 0.37, 2.0]))
        if t == m - 1 and seed % 2:  # a list the query built (a word's forms joined)
            terms.append(QueryTerm(weight, docs[t].copy(), impacts, float(impacts.max(initial=0.0))))
        else:
            terms.append(QueryTerm(weight, docs[t], levels[t], float(impacts.max(initial=0.0)), t, 0.01))
    # The first follower is read in turn (the lead's candidates in a window, times SEEK_COST,
    # outnumber its postings there), a third list's candidates are few enough to seek.
    per_window = [t.length * WINDOW // num_docs for t in terms]
    assert (lead_n * WINDOW // num_docs) * SEEK_COST >= per_window[1]
    if m > 2:
        thinned = (lead_n * WINDOW // num_docs) * sizes[1] / num_docs
        assert thinned * SEEK_COST < per_window[2]
    prior = rng.random(num_docs) * 0.3
    excluded = np.sort(rng.choice(num_docs, size=num_docs // 20, replace=False)).astype(np.uint32)
    allowed = rng.random(num_docs) < 0.7
    for k, ex, al in ((10, None, None), (1, excluded, allowed), (0, excluded, None), (500, None, allowed)):
        want = numpy_and(terms, prior, k, ex, al)
        lists = [(t.weight, t.base_term, t.docs, t.read_impacts) for t in terms]
        got_docs, final, text, count = top_k_and(source, lists, prior, k, ex, al)
        assert got_docs.tolist() == want.docs.tolist()
        assert final.tolist() == want.final.tolist()
        assert text.tolist() == want.text.tolist()
        assert count == want.total


def test_hundreds_of_lists_are_intersected() -> None:
    """A judged collection's long prose: hundreds of words, every one required."""
    docs = np.arange(0, 2 * WINDOW, 2, dtype=np.uint32)
    levels = np.full(docs.shape[0], 7, np.uint8)
    source = source_of(docs, levels, np.full(1, 0.01, np.float32), np.array([0, docs.shape[0]]))
    for m in (256, 257):
        lists = [(1.0, 0, docs, levels)] * m
        assert top_k_and(source, lists, np.zeros(2 * WINDOW), 3, None, None)[3] == docs.shape[0]


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
