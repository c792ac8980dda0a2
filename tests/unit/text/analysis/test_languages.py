"""Per-language analysis: an inflected form meets its other forms in each language."""

from __future__ import annotations

import pytest

from services.text.analysis.analyze import analyze, analyzer_version, fold_accents, stopwords, terms_of
from services.text.analysis.languages import (
    DEFAULT_LANGUAGE,
    LANGUAGES,
    PLAIN,
    analysis_key,
    dominant_language,
    query_languages,
    script_of,
)

# (language, a page's words, the query's inflected form): the two share their term.
INFLECTED = [
    ("de", "Die Häuser der Altstadt", "Haus"),
    ("de", "Wir fahren über die Brücken", "Brücke"),
    ("de", "Die Straße", "strasse"),  # ß is ss
    ("de", "Die Häuser", "Haeuser"),  # ae, oe, ue as typed on a keyboard without umlauts
    ("fr", "Les élections municipales", "election"),  # accents folded
    ("fr", "L'avion décolle", "avions"),  # elision
    ("es", "Las canciones de los niños", "canción"),
    ("es", "Las canciones", "cancion"),
    ("ru", "Книги о ёлках", "книга"),
    ("ru", "Книги о ёлках", "елка"),  # ё is е
    ("it", "Le università italiane", "Dell'università"),
    ("pt", "As cidades históricas", "cidade"),
    ("nl", "De boeken van de kinderen", "boek"),
]


@pytest.mark.parametrize(("lang", "page", "query"), INFLECTED)
def test_an_inflected_form_meets_the_page(lang: str, page: str, query: str) -> None:
    assert set(analyze(query, lang)) <= set(analyze(page, lang))


def test_stop_words_are_the_languages_own() -> None:
    assert analyze("die und der Häuser", "de") == ["haus"]
    assert analyze("les maisons", "fr") == ["maison"]
    assert analyze("и в книги", "ru") == ["книг"]
    assert "die" in stopwords("de") and "die" not in stopwords("en")
    assert analyze("die", "en") == ["die"]


def test_english_is_unchanged_and_the_default() -> None:
    text = "The running dogs don't fly over U.S.A. wings at 3.14 Mach"
    assert analyze(text) == analyze(text, "en") == analyze(text, "") == analyze(text, "en-GB")
    assert analyze(text) == ["run", "dog", "fli", "usa", "wing", "3.14", "mach"]


def test_languages_without_a_stemmer_keep_their_words() -> None:
    assert analysis_key("ja") == analysis_key("vi") == PLAIN
    assert analyze("Các ngôn ngữ", "vi") == ["các", "ngôn", "ngữ"]
    assert analyze("東京タワー", "ja") == ["東京", "京タ", "タワ", "ワー"]  # CJK bigrams as before


def test_swedish_keeps_its_letters() -> None:
    assert analyze("ängen", "sv") != analyze("angen", "sv")


def test_thai_is_cut_into_words_by_icu() -> None:
    words = analyze("ภาษาไทยเป็นภาษาที่สวยงาม", "th")
    assert words == ["ภาษา", "ไทย", "เป็น", "ภาษา", "ที่", "สวยงาม"]
    assert set(analyze("ภาษาไทย", "th")) <= set(words)  # a query finds the page's words
    # Script, not language, decides the cut: an English page quoting Thai cuts it the same way.
    assert analyze("ภาษาไทย", "en") == analyze("ภาษาไทย", "th")


def test_marks_stay_in_their_word() -> None:
    assert analyze("हिन्दी भाषा", "hi") == ["हिन्द", "भाष"]


def test_analysis_keys() -> None:
    assert analysis_key("") == DEFAULT_LANGUAGE
    assert analysis_key("DE-at") == "de"
    assert analysis_key("nb") == "no"
    assert all(analysis_key(code) == code for code in LANGUAGES)


def test_fold_accents() -> None:
    assert fold_accents("élect") == "elect"
    assert fold_accents("niñ") == "nin"
    assert fold_accents("plain") == "plain"


def test_terms_of_marks_dropped_words() -> None:
    assert terms_of(["die", "häuser"], "de") == ["", "haus"]


def test_the_version_names_the_analysis() -> None:
    version = analyzer_version()
    assert version.startswith("2-") and len(version) == 14
    assert analyzer_version() == version  # stable within a process


def test_the_version_is_the_same_in_every_process() -> None:
    """Indexer and search service are other processes, with other string hash seeds: no
    set's iteration order may enter the digest."""
    import os
    import subprocess
    import sys

    code = "from services.text.analysis.analyze import analyzer_version; print(analyzer_version())"
    seen = {
        subprocess.run(
            [sys.executable, "-c", code],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        for seed in ("1", "2", "3")
    }
    assert seen == {analyzer_version()}


def test_query_languages() -> None:
    index = {"en": 90, "de": 8, "fr": 2}
    assert dominant_language(index) == "en"
    assert dominant_language({}) == DEFAULT_LANGUAGE
    assert query_languages("de", index) == ["de", "en"]
    assert query_languages("en", index) == ["en"]
    assert query_languages("", index) == ["en", "de"]  # unsure: every language of >= 5 %
    assert query_languages("", {}) == [DEFAULT_LANGUAGE]
    assert query_languages("", {**index, "ru": 10}, "CYRILLIC") == ["ru", "en"]  # its script first
    assert query_languages("", {**index, "ru": 10}, "LATIN") == ["en", "de"]
    assert script_of("  книга") == "CYRILLIC" and script_of("Haus") == "LATIN" and script_of("42") == ""
    assert query_languages("ja", {**index, PLAIN: 1}) == [PLAIN, "en"]
    assert query_languages("ja", index) == ["en", "de"]  # no Japanese page: as if unsure
    assert query_languages("de", {}) == ["de", DEFAULT_LANGUAGE]
