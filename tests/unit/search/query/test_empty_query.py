"""Why a query finds nothing when none of its words is indexed: the words named, a very
common word told apart from a string too long to index (services/search/query/empty_query.py)."""

from __future__ import annotations

from services.search.query.empty_query import NO_WORDS_MESSAGE, nothing_to_search_message


def test_one_very_common_word_is_named_not_called_only_very_common_words():
    said = nothing_to_search_message("a")
    assert said == "“a” is a very common word, which is not indexed. Add a more specific word."
    assert "only very common words" not in said


def test_several_very_common_words_are_named():
    said = nothing_to_search_message("to be or not to be")
    assert said.startswith("Your query holds only very common words (“to”, “be”, “or”, “not”)")


def test_a_string_too_long_to_index_is_not_called_a_common_word():
    said = nothing_to_search_message("x" * 2048)
    assert "very common" not in said and "longer than 64 characters" in said
    assert "“" + "x" * 24 + "…”" in said and len(said) < 200
    both = nothing_to_search_message("the " + "y" * 70)
    assert "longer than 64 characters" in both and "“the” is a very common word" in both


def test_punctuation_only_has_no_words():
    assert nothing_to_search_message("?! -- ...") == NO_WORDS_MESSAGE
