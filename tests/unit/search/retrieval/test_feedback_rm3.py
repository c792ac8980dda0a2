"""RM3 weights on a forward index small enough to work by hand."""

from __future__ import annotations

import numpy as np
import pytest

from services.search.retrieval.feedback import rm3_weights

# Doc 0: term 0 x2, term 1 x2 (length 4); doc 1: term 0 x1, term 2 x3 (length 4).
FWD = (np.array([2, 2]), np.array([0, 1, 0, 2], np.int64), np.array([2, 2, 1, 3], np.int64))
LENGTHS = np.array([4, 4], np.uint32)


def test_rm3_mixes_the_query_with_the_feedback_documents_model():
    got = rm3_weights(
        {0: 1.0},
        np.array([0, 1]),
        np.array([3.0, 1.0]),
        FWD,
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
        FWD,
        LENGTHS,
        fb_terms=2,
        original_weight=0.5,
    )
    assert set(got) == {0, 1} and sum(got.values()) == pytest.approx(2.0)
    assert rm3_weights(
        {0: 1.0},
        np.array([], np.int64),
        np.array([]),
        (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)),
        LENGTHS,
        fb_terms=10,
        original_weight=0.5,
    ) == {0: 1.0}


def test_common_terms_are_not_expansion_candidates_and_none_outweighs_a_query_word() -> None:
    import numpy as np

    from services.search.retrieval.feedback import rm3_weights

    # Two feedback docs. Term 0 is the rare query word; term 9 is in 40 % of the collection
    # and fills the feedback docs; term 5 is a rare co-occurring word.
    both = (
        np.array([3, 3]),
        np.array([0, 5, 9, 0, 5, 9], np.int64),
        np.array([1, 2, 20, 1, 2, 20], np.int64),
    )
    lengths = np.array([23, 23, *[10] * 8], dtype=np.uint32)  # a collection of 10 documents
    df = np.zeros(10, dtype=np.uint32)
    df[[0, 1, 2, 3, 5, 9]] = [1, 1, 1, 1, 1, 4]  # term 9: 40 % of the documents
    args = (np.array([0, 1]), np.array([2.0, 1.0]), both, lengths, 10, 0.5)
    query = {0: 1.0, 1: 1.0, 2: 1.0, 3: 1.0}  # a verbose four-word query
    before = rm3_weights(query, *args)
    assert before[9] > 2 * before[0]  # the failure: the generic word drowns the query's words
    after = rm3_weights(query, *args, df=df, max_df=0.1, cap_to_query=True)
    assert 9 not in after and set(after) == {0, 1, 2, 3, 5}
    assert after[5] <= min(after[t] for t in query)  # no expansion term outweighs a typed word
    kept = rm3_weights({9: 1.0}, *args, df=df, max_df=0.1)  # a common word the user typed stays
    assert 9 in kept


def numpy_rm1(terms: np.ndarray, tfs: np.ndarray, counts: np.ndarray, per_doc: np.ndarray, fb_terms: int):
    """The relevance model as it was computed in numpy (unique, bincount, lexsort)."""
    weights = tfs.astype(np.float64) * np.repeat(per_doc, counts)
    unique, inverse = np.unique(terms, return_inverse=True)
    rm1 = np.bincount(inverse, weights=weights, minlength=unique.shape[0])
    keep = np.lexsort((unique, -rm1))[:fb_terms]
    return unique[keep], rm1[keep]


@pytest.mark.parametrize("seed", range(20))
def test_the_compiled_relevance_model_is_numpys_to_the_bit(seed: int):
    """Sums in the same order, ties (equal weights abound with small frequencies) broken by
    term id: the same terms and the same floats."""
    from services.search.retrieval.feedback import _relevance_model

    rng = np.random.default_rng(seed)
    counts = rng.choice([0, 1, 30, 400], 10)
    terms = np.concatenate([np.sort(rng.choice(2_000, n, replace=False)) for n in counts.tolist()])
    tfs = rng.choice([1, 1, 2, 3, 40], terms.shape[0]).astype(np.int64)
    scores = rng.choice([1.0, 2.5, 7.0], 10)
    per_doc = (scores / scores.sum()) / np.maximum(rng.choice([3.0, 50.0, 900.0], 10), 1.0)
    fb_terms = int(rng.choice([1, 10, 50]))
    got = _relevance_model(
        terms.astype(np.int64),
        tfs,
        counts.astype(np.int64),
        per_doc,
        np.ones(terms.shape[0], np.bool_),
        fb_terms,
    )
    want = numpy_rm1(terms, tfs, counts, per_doc, fb_terms)
    assert got[0].tolist() == want[0].tolist()
    assert got[1].tolist() == want[1].tolist()


def _pages(seed: int, n: int = 400) -> list[tuple[str, str, str, str]]:
    """Pages of words drawn Zipf-like from a small vocabulary: many share a few words,
    fewer share many, as a query's OR matches do."""
    rng = np.random.default_rng(seed)
    vocabulary = [f"{a}{b}" for a in ("mar", "tel", "gor", "ven", "sil") for b in ("ak", "op", "ut", "en")]
    weights = 1.0 / np.arange(1, len(vocabulary) + 1)
    weights /= weights.sum()
    pages = []
    for num in range(n):
        words = rng.choice(vocabulary, size=int(rng.integers(5, 60)), p=weights)
        pages.append((f"http://s{num % 37}.test/p{num}", str(words[0]), " ".join(words), ""))
    return pages


QUERIES = ["silen OR venut OR telop OR marak", "gorut OR silop OR venen OR telak OR marut"]


@pytest.mark.parametrize("seed", range(4))
def test_feedback_over_a_condensed_list_rescores_the_first_pass_best_only(seed: int) -> None:
    """``feedback_pool``: the expanded query ranks the first pass's best ``pool`` documents;
    a pool holding every match ranks as the expanded query over all of them (pool 0)."""
    from services.config.search import SearchSettings
    from services.search.query.language import parse_query
    from services.search.retrieval.retrieve import retrieve
    from tests.unit.search.retrieval.web_pages import index_of

    index = index_of(_pages(seed))
    reordered = 0
    for q in QUERIES:
        query = parse_query(q)
        everything = retrieve(index, query, 10, SearchSettings(feedback_pool=0))
        whole_pool = retrieve(index, query, 10, SearchSettings(feedback_pool=index.num_docs))
        assert everything.mode == whole_pool.mode == "or+feedback"
        assert whole_pool.ranked.docs.tolist() == everything.ranked.docs.tolist()
        assert whole_pool.ranked.final.tolist() == everything.ranked.final.tolist()
        first = retrieve(index, query, 12, SearchSettings(feedback_docs=0))
        condensed = retrieve(index, query, 10, SearchSettings(feedback_pool=12))
        assert condensed.mode == "or+feedback"
        assert set(condensed.ranked.docs.tolist()) <= set(first.ranked.docs.tolist())
        assert condensed.ranked.total == first.ranked.total == everything.ranked.total
        assert np.all(np.diff(condensed.ranked.final) <= 0)  # by the expanded query's score
        reordered += condensed.ranked.docs.tolist() != first.ranked.docs[:10].tolist()
    assert reordered  # the feedback changed something: the pages share the expansion terms
