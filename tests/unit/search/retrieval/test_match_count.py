"""The match count past its exact limit: ``sampled_count`` against the true count on lists
laid out as a crawl lays them out (sites numbered together, words that co-occur, lists read in
place and lists the query built), where taking the words as independent goes wrong."""

from __future__ import annotations

import numpy as np
import pytest

from services.ranking.impact_levels import LEVEL_DTYPE
from services.search.retrieval.blockmax import count_arguments
from services.search.retrieval.match_count import (
    SAMPLE_POSTINGS,
    SAMPLE_WINDOWS,
    count_matches,
    sampled_count,
)
from services.search.retrieval.posting_layout import lay_out, source_of
from services.search.retrieval.rank import QueryTerm

N = 60_000


def _estimate(
    lists: list[np.ndarray],
    built: set[int] = frozenset(),  # type: ignore[assignment]
    excluded: np.ndarray | None = None,
    allowed: np.ndarray | None = None,
) -> int:
    """``sampled_count`` of ``lists`` (document numbers ascending), those in ``built`` passed as
    the query's own lists, the others read in place from a segment."""
    offsets = np.concatenate([[0], np.cumsum([d.shape[0] for d in lists])]).astype(np.int64)
    levels = np.ones(int(offsets[-1]), LEVEL_DTYPE)
    source = source_of(np.concatenate(lists), levels, np.ones(len(lists), np.float32), offsets)
    impacts = np.ones(1, np.float32)
    lay = lay_out(
        source,
        [
            (None, d, np.ones(d.shape[0], np.float32)) if j in built else (j, d, impacts)
            for j, d in enumerate(lists)
        ],
    )
    listed = count_arguments(
        lay,
        np.ones(len(lists), np.bool_),
        N,
        np.zeros(0, np.uint32) if excluded is None else excluded.astype(np.uint32),
        np.zeros(0, np.bool_) if allowed is None else allowed,
    )
    return int(sampled_count(*listed, SAMPLE_POSTINGS, SAMPLE_WINDOWS))


def _true(
    lists: list[np.ndarray], excluded: np.ndarray | None = None, allowed: np.ndarray | None = None
) -> int:
    terms = [QueryTerm(1.0, d, np.ones(d.shape[0], np.float32), 1.0) for d in lists]
    return count_matches(terms, N, excluded, allowed, limit=10**9)[0]


def _sites(rng: np.random.Generator, sites: int = 300) -> np.ndarray:
    """Each document's site: a crawl numbers a site's pages together, runs of uneven length."""
    return np.sort(rng.integers(0, sites, N))


def _words(rng: np.random.Generator, site: np.ndarray, topical: float, base: float) -> np.ndarray:
    """A word's documents: on ``topical`` of the sites it is common (40 %), elsewhere rare."""
    on = rng.random(int(site.max()) + 1) < topical
    p = np.where(on[site], 0.4, base)
    return np.flatnonzero(rng.random(N) < p).astype(np.uint32)


@pytest.mark.parametrize("seed", range(6))
def test_words_that_cluster_by_site_and_co_occur_are_estimated_within_a_tenth(seed: int) -> None:
    """Four words common on the same few sites (they co-occur) and rare elsewhere, as a
    topic's words are: the independence estimate overstates their union; the sample does
    not, whether the lists are read in place or built by the query."""
    rng = np.random.default_rng(seed)
    site = _sites(rng)
    on = rng.random(301) < 0.15
    lists = []
    for _ in range(4):
        p = np.where(on[site], 0.45, 0.01) * rng.uniform(0.7, 1.3)
        lists.append(np.flatnonzero(rng.random(N) < p).astype(np.uint32))
    true = _true(lists)
    terms = [QueryTerm(1.0, d, np.ones(d.shape[0], np.float32), 1.0) for d in lists]
    independent = count_matches(terms, N, limit=0)[0]
    assert independent > 1.15 * true  # the failure this estimate is for
    for built in (set(), {1, 3}):
        assert abs(_estimate(lists, built) - true) <= 0.1 * true


@pytest.mark.parametrize("seed", range(4))
def test_excluded_and_filtered_documents_are_not_counted(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    site = _sites(rng)
    lists = [_words(rng, site, 0.2, 0.02) for _ in range(3)]
    excluded = np.sort(rng.choice(N, N // 5, replace=False))
    allowed = rng.random(N) < 0.5  # half the documents folded away, as near-duplicates are
    true = _true(lists, excluded, allowed)
    assert abs(_estimate(lists, excluded=excluded, allowed=allowed) - true) <= 0.1 * true


def test_identical_lists_and_disjoint_ones_the_two_extremes() -> None:
    rng = np.random.default_rng(7)
    every_third = np.arange(0, N, 3, dtype=np.uint32)
    assert (
        abs(_estimate([every_third, every_third.copy()]) - every_third.shape[0]) <= every_third.shape[0] // 50
    )
    halves = [np.arange(0, N // 2, dtype=np.uint32), np.arange(N // 2, N, dtype=np.uint32)]
    assert abs(_estimate(halves) - N) <= N // 50
    one_site = np.sort(rng.choice(np.arange(10_000, 16_000), 5_000, replace=False)).astype(np.uint32)
    assert abs(_estimate([one_site]) - 5_000) <= 500  # all on one site, a tenth of the range
    assert _estimate([np.array([N - 1], np.uint32)]) in (-1, 1)  # missed by every range: unknown
    assert _estimate([np.arange(N, dtype=np.uint32)] * 3) <= N  # never more than the documents


@pytest.mark.parametrize("seed", range(12))
def test_count_or_counts_exactly_to_the_limit_and_estimates_past_it(seed: int) -> None:
    """A results page that stops before its partial matches counts them without ranking them
    (``rank.count_or``): the documents holding any word, not excluded, allowed; exact under
    ``COUNT_EXACTLY_UP_TO`` (numpy's count to the document), estimated at or past it."""
    from services.search.retrieval.match_count import COUNT_EXACTLY_UP_TO
    from services.search.retrieval.rank import count_or
    from tests.unit.search.retrieval.random_postings import random_source, terms_of

    rng = np.random.default_rng(500 + seed)
    num_docs = int(rng.choice([300, 5_000, 40_000]))
    source = random_source(rng, num_docs, 6, ties=False)
    terms = terms_of(rng, source, int(rng.integers(1, 5)))
    excluded = np.sort(rng.choice(num_docs, size=num_docs // 10, replace=False)).astype(np.uint32)
    allowed = rng.random(num_docs) < 0.6 if seed % 2 else None
    use_excluded = excluded if seed % 3 else None
    want, _ = count_matches(terms, num_docs, use_excluded, allowed)  # exact: few postings
    got, exact = count_or(terms, num_docs, use_excluded, allowed, source)
    if want < COUNT_EXACTLY_UP_TO:
        assert (got, exact) == (want, True)
    else:
        assert not exact and got >= COUNT_EXACTLY_UP_TO and abs(got - want) <= want // 10


def test_a_count_whose_sample_meets_no_posting_takes_the_words_as_independent() -> None:
    """Past the exact count, a list whose documents all fall between the sample's ranges: the
    estimate is the independence formula's (one list: its postings), said to be estimated."""
    from services.search.retrieval.blockmax import count_any

    num_docs = 32_000  # 32 ranges of 125 documents, one every 1,000
    docs = np.arange(500, 600, dtype=np.uint32)  # between the first two ranges
    impacts = np.ones(docs.shape[0], np.float32)
    assert count_any(None, [(None, docs, impacts)], num_docs, count_limit=1, count_up_to=1000) == (
        100,
        False,
        True,
    )
    # Counted exactly when the lists are small enough to.
    assert count_any(None, [(None, docs, impacts)], num_docs, count_limit=1000, count_up_to=1000) == (
        100,
        True,
        False,
    )
