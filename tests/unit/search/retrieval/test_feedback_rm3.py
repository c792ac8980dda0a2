"""RM3 weights on a forward index small enough to work by hand."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from services.search.retrieval.feedback import rm3_expansion


def rm3_weights(*args, **kwargs) -> dict[int, float]:
    """``rm3_expansion`` as a mapping from term id to weight."""
    terms, weights = rm3_expansion(*args, **kwargs)
    return dict(zip(terms.tolist(), weights.tolist(), strict=True))


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


def reference_rm3(query, fb_scores, fb_forward, lengths, fb_terms, original_weight, cap, keep=None):
    """RM3 in numpy and Python, the formula as written (``numpy_rm1``; sums in order)."""
    qlen = float(sum(query.values()))
    scores = np.maximum(fb_scores.astype(np.float64), 0.0)
    mass = sum(scores.tolist())
    p_doc = scores / mass if mass > 0 else np.full(scores.shape, 1 / scores.shape[0])
    counts, terms, tfs = fb_forward
    per_doc = p_doc / np.maximum(lengths.astype(np.float64), 1.0)
    if keep is not None:  # the common terms left out: the runs without them
        docs_of = np.repeat(np.arange(counts.shape[0]), counts)[keep]
        counts, terms, tfs = np.bincount(docs_of, minlength=counts.shape[0]), terms[keep], tfs[keep]
    kept, rm1 = numpy_rm1(terms, tfs, counts, per_doc, fb_terms)
    total = sum(rm1.tolist())
    expanded = {t: original_weight * w / qlen for t, w in query.items()}
    if total > 0:
        for term, w in zip(kept.tolist(), (rm1 / total).tolist(), strict=True):
            expanded[term] = expanded.get(term, 0.0) + (1.0 - original_weight) * w
    out = {t: w * qlen for t, w in expanded.items() if w > 0}
    if cap and query:
        floor = min(out.get(t, 0.0) for t in query)
        out = {t: (w if t in query else min(w, floor)) for t, w in out.items()}
    return dict(sorted(out.items()))


@pytest.mark.parametrize("seed", range(30))
def test_the_compiled_expansion_is_the_formula_to_the_bit(seed: int):
    """The relevance model, the top terms (equal weights abound with small frequencies: ties
    by term id), the mixing and the cap in one compiled pass: the same terms, the same floats
    as the formula computed in numpy and Python, sums in the same order."""
    rng = np.random.default_rng(seed)
    n_docs = int(rng.choice([1, 3, 10, 12]))
    counts = rng.choice([0, 1, 30, 400], n_docs)
    terms = np.concatenate([np.sort(rng.choice(2_000, n, replace=False)) for n in counts.tolist()])
    tfs = rng.choice([1, 1, 2, 3, 40], terms.shape[0]).astype(np.int64)
    scores = rng.choice([0.0, 1.0, 2.5, 7.0, -1.0], n_docs)  # none positive: p(d) uniform
    lengths = rng.choice([0, 3, 50, 900], 2_000).astype(np.uint32)
    fb_docs = rng.choice(2_000, n_docs, replace=False)
    query = {int(t): float(rng.choice([1.0, 2.0])) for t in rng.choice(2_000, int(rng.integers(1, 6)))}
    if terms.shape[0]:
        query[int(terms[0])] = 1.0  # a typed word the model also keeps
    fb_terms = int(rng.choice([1, 10, 50]))
    weight = float(rng.choice([0.0, 0.5, 0.9, 1.0]))
    cap = bool(rng.integers(2))
    forward = (counts.astype(np.int64), terms.astype(np.int64), tfs)
    got_terms, got = rm3_expansion(
        query, fb_docs, scores, forward, lengths, fb_terms, weight, cap_to_query=cap
    )
    want = reference_rm3(query, scores, forward, lengths[fb_docs], fb_terms, weight, cap)
    assert got_terms.tolist() == list(want)
    assert got.tolist() == list(want.values())  # bit-identical, not approximately
    df = rng.integers(0, 2_000, 2_000)
    got_terms, got = rm3_expansion(
        query, fb_docs, scores, forward, lengths, fb_terms, weight, df=df, max_df=0.5, cap_to_query=cap
    )
    keep = ~(df[terms].astype(np.float64) > 0.5 * 2_000) | np.isin(terms, list(query))
    if keep.any():
        want = reference_rm3(query, scores, forward, lengths[fb_docs], fb_terms, weight, cap, keep)
        assert got_terms.tolist() == list(want) and got.tolist() == list(want.values())


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
    a pool holding every match ranks as the expanded query over all of them (pool 0). (The
    queries' ORs make every one an OR query; ``feedback_explicit_or`` gives them feedback.)"""
    from services.config.search import SearchSettings
    from services.search.query.language import parse_query
    from services.search.retrieval.retrieve import retrieve
    from tests.unit.search.retrieval.web_pages import index_of

    index = index_of(_pages(seed))
    ored = SearchSettings(feedback_explicit_or=True)
    reordered = 0
    for q in QUERIES:
        query = parse_query(q)
        everything = retrieve(index, query, 10, replace(ored, feedback_pool=0))
        whole_pool = retrieve(index, query, 10, replace(ored, feedback_pool=index.num_docs))
        assert everything.mode == whole_pool.mode == "or+feedback"
        assert whole_pool.ranked.docs.tolist() == everything.ranked.docs.tolist()
        assert whole_pool.ranked.final.tolist() == everything.ranked.final.tolist()
        first = retrieve(index, query, 12, SearchSettings(feedback_docs=0))
        condensed = retrieve(index, query, 10, replace(ored, feedback_pool=12))
        assert condensed.mode == "or+feedback"
        assert set(condensed.ranked.docs.tolist()) <= set(first.ranked.docs.tolist())
        assert condensed.ranked.total == first.ranked.total == everything.ranked.total
        assert np.all(np.diff(condensed.ranked.final) <= 0)  # by the expanded query's score
        reordered += condensed.ranked.docs.tolist() != first.ranked.docs[:10].tolist()
    assert reordered  # the feedback changed something: the pages share the expansion terms


@pytest.mark.parametrize("seed", range(2))
def test_an_explicit_or_runs_as_written_unless_feedback_explicit_or(seed: int) -> None:
    """A user who writes OR chose the alternatives: by default the query runs as written (the
    first pass's ranking, no feedback); the same words typed without OR, where AND finds too
    few, take feedback; ``feedback_explicit_or`` gives the OR query feedback too."""
    from services.config.search import SearchSettings
    from services.search.query.language import parse_query
    from services.search.retrieval.retrieve import retrieve
    from tests.unit.search.retrieval.web_pages import index_of

    index = index_of(_pages(seed))
    changed = 0
    for q in QUERIES:
        query = parse_query(q)
        as_written = retrieve(index, query, 10, SearchSettings())
        no_feedback = retrieve(index, query, 10, SearchSettings(feedback_docs=0))
        assert as_written.mode == no_feedback.mode == "or"
        assert as_written.ranked.docs.tolist() == no_feedback.ranked.docs.tolist()
        assert as_written.ranked.final.tolist() == no_feedback.ranked.final.tolist()
        expanded = retrieve(index, query, 10, SearchSettings(feedback_explicit_or=True))
        assert expanded.mode == "or+feedback"
        changed += expanded.ranked.docs.tolist() != as_written.ranked.docs.tolist()
        # The same words without OR, AND answering too few (and_min_results past every match).
        words_only = parse_query(q.replace(" OR ", " "))
        words = retrieve(index, words_only, 10, SearchSettings(and_min_results=10**6))
        assert words.mode == "or+feedback"
    assert changed  # the setting is what made the difference
