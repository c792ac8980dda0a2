"""Block-max MaxScore (compiled) against the exhaustive top-k: the same documents, the same
scores to the bit, the same count."""

from __future__ import annotations

import numpy as np
import pytest

from services.ranking.impact_levels import dequantize
from services.search.retrieval.blockmax import MAX_LISTS, top_k_blockmax
from services.search.retrieval.blockmax_kernels import INNER
from services.search.retrieval.match_count import COUNT_EXACTLY_UP_TO
from services.search.retrieval.posting_layout import BLOCK, block_maxima, list_block_maxima, source_of
from services.search.retrieval.rank import (
    QueryTerm,
    top_k_exhaustive,
    top_k_maxscore,
    top_k_or,
)
from tests.unit.search.retrieval.random_postings import random_source, terms_of


@pytest.mark.parametrize("seed", range(60))
def test_blockmax_equals_the_exhaustive_top_k(seed: int):
    rng = np.random.default_rng(seed)
    num_docs = int(rng.choice([50, 3000, 20000]))
    source = random_source(rng, num_docs, 12, ties=seed % 2 == 0, zeros=seed % 5 == 0)
    terms = terms_of(rng, source, int(rng.integers(1, 9)))
    prior = np.where(rng.random(num_docs) < 0.3, 0.0, rng.random(num_docs) * 0.4)
    k = int(rng.choice([1, 10, 100, 1000]))
    excluded = np.sort(rng.choice(num_docs, size=num_docs // 10, replace=False)).astype(np.uint32)
    allowed = rng.random(num_docs) < 0.8 if seed % 3 == 0 else None
    use_excluded = excluded if seed % 4 < 2 else None
    want = top_k_exhaustive(terms, prior, k, excluded=use_excluded, allowed=allowed)
    got = top_k_or(terms, prior, k, excluded=use_excluded, allowed=allowed, source=source)
    assert got.docs.tolist() == want.docs.tolist()
    assert got.final.tolist() == want.final.tolist()  # to the bit
    assert got.text.tolist() == want.text.tolist()
    seeds = np.concatenate([want.docs[::2], rng.choice(num_docs, size=7)]).astype(np.uint32)
    seeded = top_k_or(terms, prior, k, excluded=use_excluded, allowed=allowed, source=source, seed=seeds)
    assert (seeded.docs.tolist(), seeded.final.tolist()) == (want.docs.tolist(), want.final.tolist())
    if want.total >= COUNT_EXACTLY_UP_TO:  # counted up to there, estimated beyond when pruned
        assert got.total >= COUNT_EXACTLY_UP_TO and seeded.total >= COUNT_EXACTLY_UP_TO
        assert got.total == want.total if got.exact else abs(got.total - want.total) <= want.total // 10
        return
    assert (got.total, got.exact) == (want.total, True)  # every match counted
    reference = top_k_maxscore(terms, prior, k, excluded=use_excluded, allowed=allowed)
    assert (got.total, got.exact) == (reference.total, reference.exact)
    assert (seeded.total, seeded.exact) == (want.total, True)


def test_block_maxima_are_each_blocks_largest_impact_counted_from_each_list_start():
    levels = (np.arange(300) % 256).astype(np.uint8)
    offsets = np.array([0, 5, 5, 300], np.int64)  # 5 postings, none, 295
    scale = np.array([1.0, 3.0, 0.5], np.float32)  # each term's step
    first, maxima = block_maxima(offsets, levels, scale)
    assert first.tolist() == [0, 1, 1, 4]
    assert maxima.tolist() == [4.0, 132 * 0.5, 255 * 0.5, 43 * 0.5]  # 255 before the wrap to 0
    impacts = dequantize(levels[5:], 0.5)
    assert list_block_maxima(impacts).tolist() == [132 * 0.5, 255 * 0.5, 43 * 0.5]


def test_blocks_that_cannot_reach_the_kth_score_are_skipped_without_losing_the_answer():
    """Two strong documents early in a long list of weak ones: the weak windows after them
    are skipped, a stronger one deep inside found, and the count still says how many matched."""
    n = 200 * BLOCK  # windows of INNER documents: the first and the one holding 20000 are read
    docs = np.arange(n, dtype=np.uint32)
    impacts = np.full(n, 0.1, np.float32)
    impacts[[7, 31, 20000]] = [5.0, 7.0, 9.5]
    other = np.array([31, 40], np.uint32), np.array([1.0, 8.0], np.float32)
    terms = [QueryTerm(1.0, docs, impacts, 9.0), QueryTerm(1.0, other[0], other[1], 8.0)]
    prior = np.zeros(n)
    terms[0] = QueryTerm(1.0, docs, impacts, 9.5)
    got = top_k_or(terms, prior, 2)
    assert got.docs.tolist() == [20000, 40]
    assert got.final.tolist() == [pytest.approx(9.5), pytest.approx(8.1)]
    # 25,600 matches: more than are counted exactly (COUNT_EXACTLY_UP_TO), so estimated (one
    # list holds every document; the other's two postings tilt the sample's ratio a little).
    assert n > COUNT_EXACTLY_UP_TO and not got.exact and abs(got.total - n) <= n // 100
    lists = [(t.weight, t.max_impact, None, t.docs, t.read_impacts) for t in terms]
    met = top_k_blockmax(None, lists, prior, 2, 0.0)
    assert not met.exact and met.counted <= 2 * INNER < n // 2  # most weak windows never read
    counted = top_k_blockmax(None, lists, prior, 2, 0.0, count_limit=n + 2)
    assert (counted.counted, counted.exact) == (n, True)  # then counted apart, exactly
    capped = top_k_blockmax(None, lists, prior, 2, 0.0, count_limit=n + 2, count_up_to=1000)
    assert not capped.exact and capped.estimated  # or up to a cap, then estimated from a sample
    assert abs(capped.counted - n) <= n // 100
    below = top_k_blockmax(None, lists, prior, 2, 0.0, count_limit=n + 2, count_up_to=n + 1)
    assert (below.counted, below.exact) == (n, True)


def test_a_common_query_past_the_exact_count_is_estimated_from_its_lists() -> None:
    """Two lists of 12,000 and 9,000 documents out of 30,000, 6,000 shared: 15,000 match,
    beyond the exact count; the estimate, counted in ranges of documents spread over the
    index, sees the overlap (taking the lists as independent would say 16,800)."""
    n = 30_000
    a = np.arange(0, 12_000, dtype=np.uint32)
    b = np.arange(6_000, 15_000, dtype=np.uint32)
    terms = [
        QueryTerm(1.0, a, np.full(a.shape[0], 0.5, np.float32), 0.5),
        QueryTerm(1.0, b, np.full(b.shape[0], 0.5, np.float32), 0.5),
    ]
    terms[0].impacts[5] = 3.0  # one strong document: the weak windows are pruned
    got = top_k_or(terms, np.zeros(n), 1)
    assert got.docs.tolist() == [5] and not got.exact
    assert abs(got.total - 15_000) <= 15_000 // 20
    small = top_k_or([QueryTerm(1.0, a[:300], np.full(300, 0.5, np.float32), 0.5)], np.zeros(n), 1)
    assert (small.total, small.exact) == (300, True)  # few matches: counted exactly


def test_more_lists_than_a_mask_holds_is_refused_not_misranked():
    docs, impacts = np.array([1, 2], np.uint32), np.array([1.0, 2.0], np.float32)
    lists = [(1.0, 2.0, None, docs, impacts)] * (MAX_LISTS + 1)
    with pytest.raises(ValueError, match="at most 64"):
        top_k_blockmax(None, lists, np.zeros(4), 1, 0.0)


def test_no_terms_or_no_room_gives_nothing():
    prior = np.zeros(10)
    assert top_k_or([], prior, 10).docs.tolist() == []
    term = QueryTerm(1.0, np.array([1, 2], np.uint32), np.array([1.0, 2.0], np.float32), 2.0)
    assert top_k_or([term], prior, 0).docs.tolist() == []


@pytest.mark.parametrize("seed", range(30))
def test_within_ranks_only_the_documents_of_the_given_lists_as_a_mask_would(seed: int):
    """A feedback query: expansion terms score, only documents of the user's words compete.
    The same as the exhaustive top-k with those documents as the ``allowed`` mask."""
    rng = np.random.default_rng(1000 + seed)
    num_docs = int(rng.choice([200, 5000]))
    source = random_source(rng, num_docs, 14, ties=seed % 2 == 0, zeros=seed % 5 == 0)
    user = terms_of(rng, source, int(rng.integers(1, 4)))  # some read in place, some built
    expanded = terms_of(rng, source, int(rng.integers(2, 9)))
    if seed % 3 == 0 and user[0].base_term is not None:
        expanded.append(user[0])  # a user's word among the expansion, as RM3 keeps them
    prior = rng.random(num_docs) * 0.3
    visible = rng.random(num_docs) < 0.9
    excluded = np.sort(rng.choice(num_docs, size=num_docs // 20, replace=False)).astype(np.uint32)
    holding = np.zeros(num_docs, dtype=bool)
    for t in user:
        holding[t.docs] = True
    k = int(rng.choice([1, 10, 50]))
    want = top_k_exhaustive(expanded, prior, k, excluded=excluded, allowed=holding & visible)
    got = top_k_or(
        expanded, prior, k, excluded=excluded, allowed=visible, source=source, count=False, within=user
    )
    assert got.docs.tolist() == want.docs.tolist()
    assert got.final.tolist() == want.final.tolist()
    assert got.text.tolist() == want.text.tolist()
    # Seeded with documents scored first (the first pass's best, and any others: excluded,
    # hidden, holding nothing): the same result.
    first = top_k_exhaustive(user, prior, k, excluded=excluded, allowed=visible).docs
    seeds = np.concatenate([first, rng.choice(num_docs, size=5), excluded[:2]]).astype(np.uint32)
    seeded = top_k_or(
        expanded, prior, k, excluded=excluded, allowed=visible, source=source, within=user, seed=seeds
    )
    assert (seeded.docs.tolist(), seeded.final.tolist()) == (want.docs.tolist(), want.final.tolist())


@pytest.mark.parametrize("seed", range(12))
def test_sparse_probed_lists_among_dense_candidates_score_as_the_exhaustive_top_k(seed: int):
    """A chunk's candidates far outnumbering a probed list's postings there, lists whose blocks
    leave gaps where candidates fall (a document between two blocks is bounded by the block
    before it): the user's words in most documents, the expansion terms in a few, some in one
    block, some spread out."""
    rng = np.random.default_rng(5000 + seed)
    num_docs = 3 * INNER + 77
    lengths = [num_docs // 2, num_docs // 3, 1, 3, 40, BLOCK + 1, 300, num_docs // 9]
    docs, levels, offsets = [], [], [0]
    for n in lengths:
        held = np.sort(rng.choice(num_docs, size=n, replace=False)).astype(np.uint32)
        docs.append(held)
        levels.append(rng.integers(0 if seed % 3 == 0 else 1, 256, n).astype(np.uint8))
        offsets.append(offsets[-1] + n)
    scale = (rng.gamma(2.0, 1.5, len(lengths)) / 100).astype(np.float32)
    source = source_of(np.concatenate(docs), np.concatenate(levels), scale, np.array(offsets, np.int64))
    terms = []
    for t in range(len(lengths)):
        impacts = dequantize(levels[t], float(scale[t]))
        weight = float(rng.choice([1.0, 0.3, 2.5]))
        terms.append(
            QueryTerm(weight, source.docs_of(t), levels[t], float(impacts.max()), t, float(scale[t]))
        )
    user, expanded = terms[:2], terms[:1] + terms[2:]
    prior = rng.random(num_docs) * 0.2
    holding = np.zeros(num_docs, dtype=bool)
    for t in user:
        holding[t.docs] = True
    for k in (1, 10, 100):
        want = top_k_exhaustive(expanded, prior, k, allowed=holding)
        got = top_k_or(expanded, prior, k, source=source, count=False, within=user)
        assert (got.docs.tolist(), got.final.tolist(), got.text.tolist()) == (
            want.docs.tolist(),
            want.final.tolist(),
            want.text.tolist(),
        )
        # The same lists all leading (an OR query): the sparse ones are then probed for the
        # dense ones' candidates where they cannot reach the k-th score alone.
        assert (
            top_k_or(terms, prior, k, source=source).docs.tolist()
            == top_k_exhaustive(terms, prior, k).docs.tolist()
        )
