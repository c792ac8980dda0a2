"""Scoring over impacts, the PageRank prior, and exact top-k with MaxScore pruning."""

from __future__ import annotations

import numpy as np
import pytest

from services.search.retrieval import rank
from services.search.retrieval.match_count import count_matches
from services.search.retrieval.pool_rescore import rescore
from services.search.retrieval.rank import (
    QueryTerm,
    conjunctive,
    intersect_docs,
    pagerank_prior,
    score_candidates,
    text_scores,
    top_k,
    top_k_exhaustive,
    top_k_maxscore,
    union_docs,
)


def term(docs: list[int], impacts: list[float], weight: float = 1.0) -> QueryTerm:
    arr = np.array(impacts, np.float32)
    return QueryTerm(weight, np.array(docs, np.uint32), arr, float(arr.max()) if len(arr) else 0.0)


def test_text_score_sums_weighted_impacts_of_the_terms_a_document_holds():
    a = term([0, 2], [1.5, 2.0])
    b = term([2, 3], [0.5, 4.0], weight=2.0)  # a query word typed twice counts twice
    scores = text_scores([a, b], np.array([0, 2, 3], np.int64))
    assert scores.tolist() == pytest.approx([1.5, 2.0 + 2 * 0.5, 2 * 4.0])


def test_union_and_intersection_of_posting_lists():
    a, b, c = term([0, 2, 5, 9], [1] * 4), term([2, 3, 9], [1] * 3), term([9, 11], [1] * 2)
    assert union_docs([a, b, c]).tolist() == [0, 2, 3, 5, 9, 11]
    assert intersect_docs([a, b]).tolist() == [2, 9]
    assert intersect_docs([a, b, c]).tolist() == [9]
    assert intersect_docs([a, term([], [])]).tolist() == []


def test_pagerank_prior_is_bounded_and_half_for_an_average_page():
    prior = pagerank_prior(np.array([0.25, 0.0, 1.0, 0.5]), 4)  # N*pr = 1, 0, 4, 2
    assert prior.tolist() == pytest.approx([0.5, 0.0, 0.8, 2 / 3])
    assert pagerank_prior(np.array([1.0]), 10**6)[0] < 1.0


def test_prior_reorders_close_documents_only():
    a = term([0, 1], [2.0, 1.9])
    prior = 0.2 * pagerank_prior(np.array([0.1, 0.9]), 2)  # doc 1 is the linked one
    ranked = score_candidates([a], np.array([0, 1], np.int64), prior, 2)
    assert ranked.docs.tolist() == [1, 0]  # 1.9 * (1 + 0.2*1.8/2.8) > 2.0 * (1 + 0.2*0.2/1.2)
    far = score_candidates([term([0, 1], [3.0, 2.0])], np.array([0, 1], np.int64), prior, 2)
    assert far.docs.tolist() == [0, 1]  # the factor is below 1.2: it cannot make up a third


@pytest.mark.parametrize("scale", [1e-3, 1.0, 1e3])
def test_the_prior_never_lifts_a_weak_match_above_a_strong_one_at_any_score_scale(scale: float):
    """Words on every page have idf near 0 and tiny text scores; a prior in BM25 points
    decided their order by links alone. A factor does not depend on the scale."""
    weight = 0.2
    prior = weight * pagerank_prior(np.array([1e-6, 1.0 - 1e-6]), 2)  # doc 1 holds all the rank
    strong_weak = term([0, 1], [1.25 * scale, 1.0 * scale])  # doc 0 is the page about the query
    assert score_candidates([strong_weak], np.array([0, 1], np.int64), prior, 2).docs.tolist() == [0, 1]
    equal = term([0, 1], [scale, scale])
    assert score_candidates([equal], np.array([0, 1], np.int64), prior, 2).docs.tolist() == [1, 0]


def random_terms(rng: np.random.Generator, num_docs: int, count: int) -> list[QueryTerm]:
    terms = []
    for _ in range(count):
        df = int(rng.integers(1, num_docs // rng.choice([2, 10, 100])))
        docs = np.sort(rng.choice(num_docs, size=df, replace=False))
        impacts = np.round(rng.gamma(2.0, 1.0, size=df), 1)  # coarse: many exact ties
        terms.append(term(docs.tolist(), impacts.tolist(), weight=float(rng.integers(1, 3))))
    return terms


@pytest.mark.parametrize("seed", range(40))
def test_maxscore_returns_exactly_the_exhaustive_top_k(seed):
    rng = np.random.default_rng(seed)
    num_docs = 5_000
    terms = random_terms(rng, num_docs, int(rng.integers(1, 7)))
    prior = pagerank_prior(rng.dirichlet(np.ones(num_docs)), num_docs) * float(rng.choice([0, 1, 3]))
    excluded = (
        np.sort(rng.choice(num_docs, size=200, replace=False)).astype(np.int64) if seed % 3 == 0 else None
    )
    allowed = rng.random(num_docs) < 0.5 if seed % 4 == 1 else None  # feedback's restriction
    for k in (1, 10, 100):
        exact = top_k_exhaustive(terms, prior, k, excluded, allowed=allowed)
        pruned = top_k_maxscore(terms, prior, k, excluded, allowed=allowed)
        assert pruned.docs.tolist() == exact.docs.tolist()
        assert pruned.final.tolist() == exact.final.tolist()  # bit-identical, not approximately
        if excluded is not None:
            assert not np.isin(pruned.docs, excluded).any()
        if allowed is not None:
            assert allowed[pruned.docs].all()


def test_maxscore_skips_documents_holding_only_weak_terms(monkeypatch):
    rare = term(list(range(20)), [10.0] * 20)
    common = term(list(range(0, 5_000, 2)), [0.1] * 2_500)
    prior = np.zeros(5_000)
    scored: list[int] = []
    score = rank.text_scores
    monkeypatch.setattr(
        rank, "text_scores", lambda terms, docs: scored.append(len(docs)) or score(terms, docs)
    )
    pruned = top_k_maxscore([rare, common], prior, 10)
    assert sum(scored) < 100  # scored the rare term's docs only, not the common term's 2,500
    exhaustive = top_k_exhaustive([rare, common], prior, 10)
    assert pruned.docs.tolist() == exhaustive.docs.tolist()
    # The count is still every match (counted apart), not the documents scored.
    assert pruned.total == exhaustive.total == 2_510 and pruned.exact


def test_a_match_count_past_its_postings_limit_is_an_estimate_and_says_so():
    a = term(list(range(0, 1_000, 2)), [1.0] * 500)
    b = term(list(range(0, 1_000, 5)), [1.0] * 200)
    assert count_matches([a, b], 1_000) == (600, True)
    estimate, exact = count_matches([a, b], 1_000, limit=100)
    assert not exact and estimate == 600  # 1000 * (1 - 0.5 * 0.8): independent here
    allowed = np.arange(1_000) < 500
    assert count_matches([a, b], 1_000, allowed=allowed) == (300, True)
    assert count_matches([a, b], 1_000, excluded=np.array([0, 2, 3], dtype=np.uint32)) == (598, True)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_top_k_equals_a_full_sort_with_doc_number_tie_break(seed):
    rng = np.random.default_rng(seed)
    docs = np.sort(rng.choice(10_000, size=500, replace=False)).astype(np.int64)
    scores = np.round(rng.random(500), 1)  # few distinct values: many ties at every cut
    expected = sorted(range(500), key=lambda i: (-scores[i], docs[i]))
    for k in (0, 1, 7, 50, 499, 500, 800):
        assert top_k(docs, scores, k).tolist() == expected[:k]


@pytest.mark.parametrize("seed", range(10))
def test_conjunctive_scores_equal_intersection_then_scoring(seed):
    rng = np.random.default_rng(100 + seed)
    terms = random_terms(rng, 2_000, int(rng.integers(2, 5)))
    common = set.intersection(*(set(t.docs.tolist()) for t in terms))
    expected_docs = np.array(sorted(common), dtype=np.uint32)
    for num_docs in (None, 2_000):  # binary search, and the dense table (many candidates)
        docs, text = conjunctive(terms, num_docs)
        assert docs.tolist() == expected_docs.tolist()
        assert text.tolist() == text_scores(terms, expected_docs).tolist()


def test_conjunctive_mixes_table_and_search_probes_with_the_same_result():
    """Each probe picks a per-document table or binary searches by their cost: many
    candidates against a short list take the table, few against a long list the search;
    one query can take both, and the result is the intersection, scored in query order."""
    from services.search.retrieval.rank import _dense_probe_pays

    # Both cases timed: docs/performance-notes.md (Search, the probe row).
    assert _dense_probe_pays(6_482, 22_761, 100_000)  # the table is faster here
    assert not _dense_probe_pays(1_618, 44_273, 100_000)  # the search is faster here
    rng = np.random.default_rng(5)
    n = 100_000
    sizes = [44_000, 6_500, 22_000, 28_000]  # query order; the probes shrink the candidates
    terms = [
        term(sorted(rng.choice(n, size, replace=False).tolist()), rng.random(size).tolist(), weight=float(w))
        for size, w in zip(sizes, (1, 2, 1, 3), strict=True)
    ]
    common = set.intersection(*(set(t.docs.tolist()) for t in terms))
    expected = np.array(sorted(common), dtype=np.uint32)
    docs, text = conjunctive(terms, n)
    assert docs.tolist() == expected.tolist() and len(expected) > 10
    assert text.tolist() == text_scores(terms, expected).tolist()


def test_text_scores_by_table_and_by_search_give_the_same_floats():
    """Many candidates take the per-range table, few the binary search; a document's score
    is the same float either way (summed in query order from float64 impacts)."""
    from services.search.retrieval.rank import _dense_probe_pays

    rng = np.random.default_rng(9)
    n = 50_000
    terms = [
        term(
            sorted(rng.choice(n, size, replace=False).tolist()),
            rng.gamma(2.0, 1.0, size).tolist(),
            weight=float(w),
        )
        for size, w in ((20_000, 1.0), (300, 2.0), (5_000, 0.37))
    ]
    for count in (40, 30_000):
        docs = np.sort(rng.choice(n, count, replace=False)).astype(np.uint32)
        span = int(docs[-1]) - int(docs[0]) + 1
        paths = {_dense_probe_pays(count, len(t.docs), span) for t in terms}
        expected = []
        for d in docs.tolist():
            total = 0.0
            for t in terms:
                at = np.searchsorted(t.docs, d)
                if at < len(t.docs) and t.docs[at] == d:
                    total += float(t.impacts[at]) * t.weight
            expected.append(total)
        assert text_scores(terms, docs).tolist() == expected
        assert paths == ({False} if count == 40 else {True})  # both paths, compared exactly


@pytest.mark.parametrize("seed", range(20))
def test_rescoring_given_documents_is_the_exhaustive_top_k_over_them(seed: int) -> None:
    """A second phase over a first pass's hits: the same documents and bit-identical scores as
    the exhaustive top-k restricted to them; a document holding no term is no match."""
    rng = np.random.default_rng(300 + seed)
    num_docs = 2_000
    terms = random_terms(rng, num_docs, int(rng.integers(1, 9)))
    for t in terms:
        object.__setattr__(t, "weight", float(rng.random()) + 0.01)  # RM3's weights: any float
    prior = pagerank_prior(rng.dirichlet(np.ones(num_docs)), num_docs) * float(rng.choice([0, 1, 3]))
    pool = np.unique(rng.choice(num_docs, size=int(rng.choice([1, 30, 500])), replace=False)).astype(
        np.uint32
    )
    held = np.array([np.isin(pool, t.docs) for t in terms])
    impacts = np.zeros(held.shape, np.float32)
    for j, t in enumerate(terms):
        impacts[j, held[j]] = t.impacts[np.searchsorted(t.docs, pool[held[j]])]
    mask = np.zeros(num_docs, dtype=bool)
    mask[pool] = True
    for k in (1, 10, 100):
        want = top_k_exhaustive(terms, prior, k, allowed=mask)
        got = rescore(pool, [t.weight for t in terms], held, impacts, prior, k, total=77)
        assert got.docs.tolist() == want.docs.tolist()
        assert got.final.tolist() == want.final.tolist()  # bit-identical, not approximately
        assert got.text.tolist() == want.text.tolist()
        assert got.total == 77  # the caller's count (the first pass's), not the pool's
        assert held[:, np.searchsorted(pool, got.docs)].any(axis=0).all()
