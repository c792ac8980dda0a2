"""The query limits (services/search/query/limits.py): characters, words typed again and
again, and words, each told to the searcher."""

from __future__ import annotations

import time

import pytest

from services.search.query.limits import (
    MAX_QUERY_CHARS,
    MAX_QUERY_WORDS,
    QueryCut,
    Repeat,
    bound_query,
)


def test_an_ordinary_query_is_searched_as_sent():
    for q in ("wing lift", 'site:nasa.gov "boundary layer" -wind', "bora bora", "a  b\tc", ""):
        bounded = bound_query(q)
        assert bounded.text == " ".join(q.split())
        assert not bounded.cut and bounded.cut == QueryCut() and bounded.cut.notices() == []


def test_a_word_typed_again_and_again_is_searched_once_and_said():
    bounded = bound_query(" ".join(["ab"] * 400))
    assert bounded.text == "ab"
    assert bounded.cut.repeats == (Repeat("ab", 400),) and bounded.cut.ignored_words == ()
    assert bounded.cut.notices() == ["“ab” was repeated 400 times in a row: it was searched once."]


def test_one_thousand_and_one_a_is_one_a_not_a_cut_at_a_character_count():
    bounded = bound_query("a " * 1001)
    assert bounded.text == "a" and bounded.cut.repeats == (Repeat("a", 1001),)
    assert bounded.cut.ignored_chars == 0 and bounded.cut.notices() == [
        "“a” was repeated 1,001 times in a row: it was searched once."
    ]


def test_runs_collapse_case_aside_and_keep_the_first_form_and_everything_around():
    bounded = bound_query('Wing wing WING lift "p q" "P Q" "p q" -x -x -x site:a.b site:a.b site:a.b end')
    assert bounded.text == 'Wing lift "p q" -x site:a.b end'
    assert [r.word for r in bounded.cut.repeats] == ["Wing", '"p q"', "-x", "site:a.b"]
    assert bounded.cut.notices() == [
        "Words repeated in a row were searched once each: “Wing” (3 times), "
        '"p q" (3 times), “-x” (3 times), “site:a.b” (3 times).'
    ]


def test_twice_in_a_row_and_repeats_apart_are_kept():
    # Doubled words are names and grammar; repeats apart weigh in the ranking (qw_t).
    for q in ("bora bora", "duran duran hungry", "wing lift wing lift wing lift", "a b a b a b"):
        assert bound_query(q).text == q and not bound_query(q).cut


def test_a_quoted_phrase_is_one_part_its_inner_repeats_are_kept():
    q = '"ab ab ab ab" flutter'
    assert bound_query(q).text == q


def test_words_past_the_limit_are_ignored_and_listed_in_order():
    words = [f"w{i}" for i in range(40)]
    bounded = bound_query(" ".join(words))
    assert bounded.text == " ".join(words[:MAX_QUERY_WORDS])
    assert bounded.cut.ignored_words == tuple(words[MAX_QUERY_WORDS:])
    assert bounded.cut.notices() == [
        "“w32” (and any subsequent words) was ignored because we limit queries to 32 words."
    ]
    assert not bound_query(" ".join(words[:MAX_QUERY_WORDS])).cut  # 32 words: searched as sent


def test_a_run_counts_as_one_word_toward_the_limit():
    q = " ".join(["x"] * 50 + [f"w{i}" for i in range(31)])
    bounded = bound_query(q)
    assert bounded.text == "x " + " ".join(f"w{i}" for i in range(31))
    assert bounded.cut.ignored_words == () and bounded.cut.repeats == (Repeat("x", 50),)


def test_a_phrase_cut_by_the_word_limit_keeps_its_first_words():
    words = [f"w{i}" for i in range(30)]
    bounded = bound_query(" ".join(words) + ' "alpha beta gamma delta"')
    assert bounded.text.endswith(' "alpha beta')
    assert bounded.cut.ignored_words == ("gamma", 'delta"')


@pytest.mark.parametrize("operator", ["OR", "|", "NOT"])
def test_an_operator_left_with_nothing_to_act_on_goes_with_the_ignored_words(operator):
    words = [f"w{i}" for i in range(31)] + [operator, "wind", "solar"]
    bounded = bound_query(" ".join(words))
    assert bounded.text == " ".join(words[:31])
    assert bounded.cut.ignored_words == (operator, "wind", "solar")


def test_characters_past_the_limit_are_never_read_and_the_cut_falls_between_words():
    words = [f"word{i:04d}" for i in range(400)]  # 8 characters and a space each
    q = " ".join(words)
    bounded = bound_query(q)
    within = " ".join(words[:227])  # 2,042 characters: the 228th word would end past 2,048
    assert bounded.cut.ignored_chars == len(q) - len(within) - 1  # the space between is no character
    assert bounded.cut.notices()[0] == (
        "We limit queries to 2,048 characters: the last 1,556 characters of yours were ignored."
    )
    # Then the word limit on what was read: both said, in that order.
    assert bounded.text == " ".join(words[:MAX_QUERY_WORDS])
    assert bounded.cut.ignored_words == tuple(words[MAX_QUERY_WORDS:227]) and len(bounded.cut.notices()) == 2


def test_one_huge_word_is_cut_at_the_limit_and_costs_nothing():
    started = time.perf_counter()
    bounded = bound_query("x" * 10_000_000)
    assert time.perf_counter() - started < 1.0
    assert bounded.text == "x" * MAX_QUERY_CHARS and bounded.cut.ignored_chars == 10_000_000 - MAX_QUERY_CHARS


def test_the_cut_before_the_repeats_before_the_words():
    q = "ab " * 1000 + "never read"  # 3,010 characters: the cut leaves 683 ab, searched once
    bounded = bound_query(q)
    assert bounded.text == "ab" and bounded.cut.repeats == (Repeat("ab", 683),)
    assert bounded.cut.ignored_chars == len(q) - 683 * 3  # 317 more "ab" and "never read"
    assert bounded.cut.ignored_words == ()


def test_a_notice_quotes_a_long_word_shortened_and_names_at_most_five_repeats():
    cut = QueryCut(ignored_words=("y" * 300, "z"))
    assert cut.notices() == [
        f"“{'y' * 40}…” (and any subsequent words) was ignored because we limit queries to 32 words."
    ]
    many = bound_query(" ".join(f"{w} {w} {w}" for w in "abcdefg")).cut
    assert len(many.repeats) == 7 and many.notices()[0].endswith("“e” (3 times) and 2 more.")


@pytest.mark.parametrize("seed", range(5))
def test_repeats_found_as_runs_of_equal_words_case_aside(seed: int) -> None:
    """Texts of few distinct words (case varied, some in quotes): the runs a query collapses
    are exactly the runs of MIN_REPEAT or more equal parts, whichever way it reads them."""
    import itertools
    import random

    from services.search.query.limits import MIN_REPEAT, QUERY_PART

    rng = random.Random(seed)
    for _ in range(300):
        words = [
            rng.choice(["wind", "Wind", "WIND", "solar", "ß", "SS", "-x", '"a b"', '+"a b"'])
            for _ in range(8)
        ]
        text = " ".join(words[: rng.randint(1, 8)])
        parts = [m.group(0) for m in QUERY_PART.finditer(text)]
        runs = [
            (group[0], len(group))
            for group in (list(g) for _, g in itertools.groupby(parts, key=str.casefold))
            if len(group) >= MIN_REPEAT
        ]
        got = bound_query(text).cut.repeats
        assert [(r.word, r.times) for r in got] == runs, text


def test_a_required_or_excluded_phrase_is_one_part() -> None:
    from services.search.query.limits import QUERY_PART

    parts = [m.group(0) for m in QUERY_PART.finditer('+"boundary layer" -"heat flux" +wing')]
    assert parts == ['+"boundary layer"', '-"heat flux"', "+wing"]
