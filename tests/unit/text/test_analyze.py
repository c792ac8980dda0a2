"""The analyzer: tokens, stop words, stems; same terms for index and query."""

from __future__ import annotations

from collections import Counter

from services.text.analyze import analyze, stopwords, surface_tokens


def test_tokenize_folds_case_and_unicode():
    assert surface_tokens("Hello, WORLD! Straße ﬁne") == ["hello", "world", "strasse", "fine"]


def test_stop_words_removed_and_words_stemmed():
    assert analyze("The connections of the connected networks") == ["connect", "connect", "network"]


def test_repeats_are_kept_for_query_term_frequency():
    assert Counter(analyze("flow flow flows boundary"))["flow"] == 3


def test_apostrophes_and_abbreviations():
    assert analyze("U.S. aircraft's wings") == ["us", "aircraft", "wing"]


def test_overlong_tokens_dropped():
    assert analyze("a" * 65 + " wing") == ["wing"]


def test_stop_list_loaded_from_package_data():
    words = stopwords()
    assert {"the", "and", "of", "which"} <= words
    assert "aircraft" not in words


def test_block_analysis_by_distinct_token_equals_analyze(shared_data):
    """The index job drops stop words as it tokenizes (``content_tokens``) and stems each
    distinct token of a block once (``terms_of``); that must give ``analyze``'s terms, in
    order, on real text."""
    import json

    from services.text.analyze import content_tokens, terms_of

    path = shared_data / "ir/cranfield/docs.jsonl"
    texts = [json.loads(line)["text"] for line in path.open(encoding="utf-8")][:300]
    texts += ["Don't U.S. aircraft’s wings ’’ a.b.c Straße ﬁne " + "x" * 70, "", "the of"]
    for text in texts:
        surfaces = content_tokens(text)
        terms = dict(zip(set(surfaces), terms_of(list(set(surfaces))), strict=True))
        assert [terms[s] for s in surfaces if terms[s]] == analyze(text)
    assert content_tokens("The wing of the plane") == ["wing", "plane"]
