"""The query language: words, phrases, exclusions, OR."""

from __future__ import annotations

import random

import pytest

from services.search.query.language import _NOT_PLAIN, _operators_query, _words_query, parse_query


def test_plain_words_are_analyzed_and_counted():
    q = parse_query("Wing wings the LIFT")
    assert dict(q.terms) == {"wing": 2, "lift": 1}
    assert (q.phrases, q.excluded, q.any_word) == ([], [], False)


def test_phrases_keep_order_and_score_their_words():
    q = parse_query('"speed of sound" aircraft')
    assert q.phrases == [["speed", "sound"]]
    assert dict(q.terms) == {"speed": 1, "sound": 1, "aircraft": 1}


def test_exclusions_by_minus_and_not():
    assert parse_query("flow -turbulent").excluded == ["turbul"]
    assert parse_query("flow NOT turbulent").excluded == ["turbul"]
    assert dict(parse_query("flow NOT turbulent").terms) == {"flow": 1}
    assert parse_query('flow -"turbulent"').excluded == ["turbul"]


def test_explicit_or_and_lowercase_or_is_a_word():
    assert parse_query("wing OR lift").any_word
    assert not parse_query("wing or lift").any_word


def test_unclosed_quote_runs_to_the_end_and_one_word_phrase_is_a_word():
    q = parse_query('drag "boundary layer')
    assert q.phrases == [["boundari", "layer"]]
    assert parse_query('"wing"').phrases == []


def test_stop_words_only_is_empty_and_a_word_cannot_be_both_wanted_and_excluded():
    assert parse_query("the of and").empty
    assert parse_query("wing -wing").excluded == []


def test_queries_use_the_index_analyzer():
    """Plain words of a query become exactly the terms the index job makes of the same text
    (the job's block analysis equals ``analyze``: tests/unit/text/test_analyze.py)."""
    from collections import Counter

    from services.text.analysis.analyze import analyze

    text = "Aerodynamic heating of U.S. wings: don't the flows’ Straße"
    assert parse_query(text).terms == Counter(analyze(text))


def test_a_negated_phrase_is_excluded_as_a_phrase_and_exclusions_alone_say_so():
    q = parse_query('wing -"boundary layer"')
    assert dict(q.terms) == {"wing": 1} and q.excluded_phrases == [["boundari", "layer"]]
    assert parse_query("-wing").only_exclusions and parse_query("NOT wing").only_exclusions
    assert not parse_query("the").only_exclusions  # stop words only: another message


def test_operators_are_parsed_and_case_insensitive():
    q = parse_query("wing SITE:NASA.gov -site:esa.int filetype:PDF intitle:Lift")
    assert q.sites == ["nasa.gov"] and q.excluded_sites == ["esa.int"]
    assert q.filetypes == ["pdf"] and q.in_title == ["lift"]
    assert set(q.terms) == {"wing", "lift"}  # intitle: words are searched for too
    assert q.filtered and not q.only_exclusions


def test_operator_values_are_normalised_or_left_as_words():
    assert parse_query("site:https://www.a.com:8080/x/ y").sites == ["www.a.com:8080"]
    assert parse_query("site:127.0.0.1:44503 y").sites == ["127.0.0.1:44503"]
    assert parse_query("site:[::1]:8001 site:[::1] y").sites == ["[::1]", "[::1]:8001"]
    assert parse_query("site:a.com:http y").sites == ["a.com"]  # not a port: no port
    assert parse_query("filetype:htm y").filetypes == ["html"]
    assert parse_query("filetype:exe y").filetypes == ["exe"]  # never stored: matches nothing
    unknown = parse_query("foo:bar")
    assert not unknown.filtered and set(unknown.terms) == {"foo", "bar"}
    assert not parse_query("site:").filtered  # no value: the word "site"
    assert parse_query("NOT site:a.com wing").excluded_sites == ["a.com"]
    assert parse_query("-site:a.com").only_exclusions


def test_a_bar_is_or():
    assert parse_query("wind | solar").any_word
    assert parse_query("wind|solar").any_word and set(parse_query("wind|solar").terms) == {"wind", "solar"}
    assert not parse_query("wind solar").any_word


def test_a_judged_collections_prose_query_is_words_only() -> None:
    from services.search.query.language import plain_query
    from services.search.query.limits import MAX_QUERY_CHARS

    text = 'papers on "boundary layer" methods -dash site:nasa.gov OR NOT x-ray flutter|buffet'
    q = plain_query(text)
    assert (q.phrases, q.excluded, q.excluded_phrases, q.any_word) == ([], [], [], False)
    assert (q.sites, q.filetypes, q.in_title) == ([], [], [])
    assert {"boundari", "layer", "dash", "nasa", "ray", "flutter", "buffet"} <= set(q.terms)
    assert q.forms["dash"] == "dash"
    long = "flutter " * 300 + "buffet"  # 2,406 characters: a search box would cut it
    assert len(long) > MAX_QUERY_CHARS and plain_query(long).terms["buffet"] == 1


# Hostile pieces for the words-only parse: scripts, marks, compatibility characters that NFKC
# turns into several (or into a space and a mark), elisions, dotted names and numbers,
# apostrophes, unspaced scripts, spaces that are not ASCII, "or"/"Not" that are no operators.
_PIECES = [
    "Wings",
    "the",
    "ﬁnance",
    "①",
    "㍱",
    "᾿Ω",
    "\u0301x",
    "e\u0301",
    "Straße",
    "İstanbul",
    "l'avion",
    "d’Artagnan",
    "U.S.A.",
    "3.14",
    "v1.2.3",
    "東京タワー",
    "서울역",
    "ภาษาไทย",
    "Häuser",
    "ПРИВЕТ",
    "or",
    "Or",
    "nOT",
    "x" * 70,
    "don't",
    "naïve",
    "😀",
    "…",
    "ORbit",
    "NOTE",
    "١٢٣",
    "Ⅻ",
    "ｆｕｌｌ",
    "_",
    "a_b",
    "'",
    "’s",
    "OR",
    "OR",
    "ＯＲ",
]
_GAPS = [" ", "  ", "\t", "\u00a0", "\u3000", "\n", " \u2028 "]


@pytest.mark.parametrize("seed", range(40))
def test_a_words_only_query_parses_as_the_operators_parse_reads_it(seed: int) -> None:
    """``parse_query``'s one-pass reading of a query without operators is what the general
    parse makes of it word by word: terms and counts, forms as typed, other languages' forms."""
    rng = random.Random(seed)
    languages = rng.choice([["en"], ["fr", "en"], ["de", "en"], ["ru", "en"], ["th", "en"], ["en", "fr"]])
    words = [rng.choice(_PIECES) for _ in range(rng.randint(1, 8))]
    text = rng.choice(["", " "]) + "".join(w + rng.choice(_GAPS) for w in words).rstrip(" ")
    assert _NOT_PLAIN.search(text) is None
    fast, general = _words_query(text, languages), _operators_query(text, languages)
    assert fast == general
    assert parse_query(text, languages) == general


@pytest.mark.parametrize("seed", range(20))
def test_every_word_required_parses_as_the_operators_parse_reads_it(seed: int) -> None:
    """``+every +word`` takes the words' one-pass parse, every term required: what the general
    parse makes of it word by word, hostile words (stop words, "OR" and "+OR") included."""
    from services.search.query.language import _EVERY_WORD_REQUIRED, _required_words_query

    rng = random.Random(seed)
    languages = rng.choice([["en"], ["fr", "en"], ["de", "en"], ["ru", "en"], ["th", "en"], ["en", "fr"]])
    words = [rng.choice(["+", ""]) * (w != "OR") + w for w in rng.choices(_PIECES, k=rng.randint(1, 8))]
    words = [w if w.startswith("+") or w == "OR" else "+" + w for w in words]
    text = rng.choice(["", " "]) + "".join(w + rng.choice(_GAPS) for w in words).rstrip(" ")
    assert _EVERY_WORD_REQUIRED.fullmatch(text) is not None, text
    fast, general = _required_words_query(text, languages), _operators_query(text, languages)
    assert fast == general
    assert parse_query(text, languages) == general
    assert set(general.required) == set(general.terms)


def test_anything_an_operator_could_mean_takes_the_general_parse() -> None:
    for text in ['"a b"', "a -b", "NOT b", "a|b", "site:x.org a", "a\tNOT\tb", "state-of-the-art"]:
        assert _NOT_PLAIN.search(text) is not None, text
    for text in ["ORbit NOTE", "or not", "a b c", "a OR b"]:
        assert _NOT_PLAIN.search(text) is None, text
    assert parse_query("wing OR lift OR").any_word and not parse_query("wing ORlift").any_word
    assert dict(parse_query("OR wing OR OR lift").terms) == {"wing": 1, "lift": 1}


def test_a_plus_requires_a_word_and_every_plus_makes_a_strict_and() -> None:
    strict = parse_query("+Wings +lift")
    assert strict.required == ["wing", "lift"] and strict.all_required and not strict.filtered
    assert dict(strict.terms) == {"wing": 1, "lift": 1}  # required words are scored as words
    some = parse_query("+wing lift")
    assert some.required == ["wing"] and some.some_required and some.filtered
    assert parse_query("+wing OR +lift").all_required  # both required: OR cannot widen it
    # A phrase's words are required by a + before its quotes; the phrase stays a phrase.
    phrase = parse_query('+"boundary layer" drag')
    assert phrase.required == ["boundari", "layer"] and phrase.phrases == [["boundari", "layer"]]
    assert phrase.some_required


def test_a_plus_inside_a_word_on_a_stop_word_or_alone_requires_nothing() -> None:
    for text in ("c++ compiler", "the + wing", "+the wing", "wing +", "a+b wing"):
        q = parse_query(text)
        assert q.required == [] and not q.filtered, text
    assert parse_query("c++ compiler").terms == _words_query("c++ compiler", ["en"]).terms
    # Excluding wins over requiring; the word is only excluded.
    for text in ("wing NOT +lift", "wing +-lift"):
        q = parse_query(text)
        assert q.excluded == ["lift"] and q.required == [] and dict(q.terms) == {"wing": 1}, text
    assert _NOT_PLAIN.search("+wing") and not _NOT_PLAIN.search("c++ wing")
