"""The ranking formula on numbers small enough to check by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from services.search.rank import (
    TermPostings,
    merge_pagerank,
    pagerank_prior,
    score,
    text_scores,
    top_k,
)

# Four documents of lengths 2, 1, 4, 1: average length 2.
LENGTHS = np.array([2, 1, 4, 1], dtype=np.uint32)
AVG = 2.0


def term_a(qtf: int = 1) -> TermPostings:
    # df = 2 of N = 4 -> idf = ln(1 + 4/2) = ln 3; tf 1 in doc 0, tf 3 in doc 2.
    return TermPostings(qtf, math.log(3), np.array([0, 2], np.uint32), np.array([1, 3], np.uint32))


def term_b() -> TermPostings:
    # df = 1 -> idf = ln 5; tf 1 in doc 2.
    return TermPostings(1, math.log(5), np.array([2], np.uint32), np.array([1], np.uint32))


def test_single_term_scores_match_the_hand_computation():
    docs, scores = text_scores([term_a()], LENGTHS, AVG)
    assert docs.tolist() == [0, 2]
    # doc 0 (len 2 = avg): ln3 * 1 * 2.2 / (1 + 1.2 * 1)              = ln3 * 1 = 1.0986122887
    # doc 2 (len 4 = 2 avg): ln3 * 3 * 2.2 / (3 + 1.2 * (0.25 + 1.5)) = ln3 * 6.6 / 5.1 = 1.4217335500
    assert scores.tolist() == pytest.approx([1.0986122887, 1.4217335500], rel=1e-9)


def test_term_frequency_saturates_and_long_documents_are_damped():
    one = TermPostings(1, 1.0, np.array([0]), np.array([1]))
    many = TermPostings(1, 1.0, np.array([0]), np.array([1000]))
    assert text_scores([many], LENGTHS, AVG)[1][0] < 2.2  # bounded by k1 + 1
    assert text_scores([many], LENGTHS, AVG)[1][0] > text_scores([one], LENGTHS, AVG)[1][0]
    short = TermPostings(1, 1.0, np.array([1]), np.array([1]))  # len 1
    long = TermPostings(1, 1.0, np.array([2]), np.array([1]))  # len 4
    assert text_scores([short], LENGTHS, AVG)[1][0] > text_scores([long], LENGTHS, AVG)[1][0]


def test_scores_of_several_terms_add_up():
    docs, scores = text_scores([term_a(), term_b()], LENGTHS, AVG)
    assert docs.tolist() == [0, 2]
    # doc 2 gains ln5 * 1 * 2.2 / (1 + 1.2 * 1.75) = ln5 * 2.2 / 3.1 = 1.1421817443
    assert scores.tolist() == pytest.approx([1.0986122887, 2.5639152943], rel=1e-9)


def test_repeated_query_words_count():
    once = text_scores([term_a(1), term_b()], LENGTHS, AVG)[1]
    twice = text_scores([term_a(2), term_b()], LENGTHS, AVG)[1]
    assert twice.tolist() == pytest.approx([2 * 1.0986122887, 2 * 1.4217335500 + 1.1421817443])
    # The repeated word shifts weight toward it: doc 0 (only "a") gains relative to doc 2.
    assert twice[0] / twice[1] > once[0] / once[1]


def test_no_terms_and_zero_average_do_not_divide_by_zero():
    docs, scores = text_scores([], LENGTHS, AVG)
    assert docs.shape == (0,) and scores.shape == (0,)
    empty = np.zeros(2, np.uint32)
    _, scores = text_scores([TermPostings(1, 1.0, np.array([0]), np.array([1]))], empty, 0.0)
    assert np.isfinite(scores).all() and scores[0] > 0


def test_pagerank_prior_is_bounded_and_half_for_an_average_page():
    prior = pagerank_prior(np.array([0.25, 0.0, 1.0, 0.5]), 4)  # N*pr = 1, 0, 4, 2
    assert prior.tolist() == pytest.approx([0.5, 0.0, 0.8, 2 / 3])
    assert pagerank_prior(np.array([1.0]), 10**6)[0] < 1.0


def test_pagerank_merge_adds_the_weighted_prior():
    text = np.array([0.5, 0.5])
    pr = np.array([0.5, 0.125])  # N = 4: N*pr = 2 and 0.5 -> prior 2/3 and 1/3
    assert merge_pagerank(text, pr, 4, 0.0).tolist() == [0.5, 0.5]
    assert merge_pagerank(text, pr, 4, 1.0).tolist() == pytest.approx([0.5 + 2 / 3, 0.5 + 1 / 3])
    assert merge_pagerank(text, pr, 4, 3.0).tolist() == pytest.approx([2.5, 1.5])


def test_pagerank_weight_changes_the_order():
    pagerank = np.array([0.4, 0.1, 0.1, 0.4])  # N*pr: doc 0 -> 1.6 (prior 1.6/2.6), doc 2 -> 0.4
    text_only = score([term_a()], LENGTHS, AVG, pagerank, weight=0.0)
    assert text_only.docs[top_k(text_only.docs, text_only.final, 2)].tolist() == [2, 0]
    merged = score([term_a()], LENGTHS, AVG, pagerank, weight=3.0)
    # doc 0: 1.0986122887 + 3 * 1.6/2.6; doc 2: 1.4217335500 + 3 * 0.4/1.4
    assert merged.final.tolist() == pytest.approx([2.9447661348, 2.2788764072])
    assert merged.docs[top_k(merged.docs, merged.final, 2)].tolist() == [0, 2]
    assert merged.text.tolist() == pytest.approx(text_only.text.tolist())
    assert merged.pagerank.tolist() == [0.4, 0.1]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_top_k_equals_a_full_sort_with_doc_number_tie_break(seed):
    rng = np.random.default_rng(seed)
    docs = np.sort(rng.choice(10_000, size=500, replace=False)).astype(np.int64)
    scores = np.round(rng.random(500), 1)  # few distinct values: many ties at every cut
    expected = sorted(range(500), key=lambda i: (-scores[i], docs[i]))
    for k in (0, 1, 7, 50, 499, 500, 800):
        assert top_k(docs, scores, k).tolist() == expected[:k]
