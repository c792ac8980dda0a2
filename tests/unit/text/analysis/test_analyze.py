"""The analyzer: tokens, stop words, stems; same terms for index and query."""

from __future__ import annotations

from collections import Counter

from services.text.analysis.analyze import analyze, stopwords, surface_tokens


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


TRICKY = [
    "Don't U.S. aircraft’s wings ’’ a.b.c Straße ﬁne " + "x" * 70,
    "",
    "the of",
    "...",
    "'",
    "1990–1995 — «quoted» “curly” x·y a\u00a0b c\u2003d e\u2028f ½ ² Ⅻ ﬀ",
    "end. .start 'tis o'clock a..b a.'b _under_score_ tab\there\nnew\x00nul\x1fus",
    "Ελληνικά κείμενα, русский текст; 中文字符。日本語のテキスト、한국어 텍스트!",
    "combining: cafe\u0301 e\u0301t\u00e9 \u0301lead; arabic: العربية؟ hebrew: עברית׃",
    "lone surrogate \ud800 here, emoji 👍🏽 and ZWJ 👨‍👩‍👧 and zero\u200bwidth",
]


def test_rough_tokens_hold_exactly_the_surface_tokens(sample_data):
    """The index job cuts text at ASCII separators with a byte table (``rough_tokens``) and
    splits each distinct rough token with the word regex (``rough_surfaces``); on real text and on
    separators, joiners and scripts of every kind that must give ``surface_tokens``,
    in order."""
    import json

    from services.text.analysis.analyze import rough_surfaces, rough_tokens

    path = sample_data / "ir/cranfield/docs.jsonl"
    texts = [json.loads(line)["text"] for line in path.open(encoding="utf-8")][:300]
    for text in [*texts, *TRICKY]:
        roughs = rough_tokens(text)
        assert all(isinstance(p, bytes) for p in roughs)
        assert [t for p in roughs for t in rough_surfaces(p)] == surface_tokens(text), text
    assert rough_tokens("1990–95, end.") == ["1990–95".encode(), b"end."]
    assert rough_surfaces("1990–95".encode()) == ["1990", "95"]
    assert rough_surfaces(b"u.s.") == ["u.s"] and rough_surfaces(b"...") == []


def test_dotted_names_are_findable_by_their_parts():
    from services.text.analysis.analyze import analyze

    assert analyze("www.example-site.net") == ["www", "exampl", "site", "net"]  # not one glued term
    assert analyze("node.js") == ["node", "js"]
    assert analyze("pi is 3.14, version 1.2.3") == ["pi", "3.14", "version", "1.2.3"]
    assert analyze("U.S.A. and e.g.") == ["usa", "eg"]  # initialisms joined
    assert analyze("the end.Next part") == ["end", "next", "part"]  # a missing space after a period
    # Query and document meet: the same analysis on both sides.
    assert set(analyze("example site")) <= set(analyze("Visit www.example-site.net today"))


def test_cjk_runs_become_overlapping_bigrams():
    """Chinese and Japanese write no spaces: taken whole, a clause would be one term (and past
    64 characters none), so a query word would never meet it. Bigrams, as Lucene's
    CJKBigramFilter."""
    japanese = "委員会は火曜日に集まり、東京大学の図書館で会議を開いた。"
    terms = analyze(japanese)
    assert terms[:4] == ["委員", "員会", "会は", "は火"]
    assert all(len(t) == 2 for t in terms)
    # A word of any length is its consecutive bigrams: the query meets the page.
    assert analyze("図書館") == ["図書", "書館"]
    assert set(analyze("図書館")) <= set(terms) and set(analyze("東京大学")) <= set(terms)
    assert analyze("図") == ["図"]  # a lone character is a unigram
    assert analyze("中文字符") == ["中文", "文字", "字符"]
    assert analyze("도서관에서") == ["도서", "서관", "관에", "에서"]  # Hangul: particles attach to words
    assert analyze("ｶﾀｶﾅ") == ["カタ", "タカ", "カナ"]  # half-width Katakana: NFKC first


def test_cjk_beside_other_scripts_and_digits():
    assert analyze("東京2020 Olympics") == ["東京", "2020", "olymp"]
    assert analyze("Hello 世界 connections") == ["hello", "世界", "connect"]
    assert analyze("東京's") == ["東京", "s"]
    assert analyze("русский текст") == ["русский", "текст"]  # other non-ASCII words unchanged
    assert analyze("x" + "漢" * 100) == ["x"] + ["漢漢"] * 99  # long runs are kept, as bigrams
