"""Chinese, Japanese and Korean pages are found by their words: the index built by the
MapReduce job and the query parser share the analyzer's CJK bigrams, and the snippet
marks the word that matched."""

from __future__ import annotations

import pytest

from tests.integration.search.search_corpus import Doc, publish_corpus

DOCS = [
    Doc(
        "http://ja.example/library",
        "東京大学の図書館",
        "委員会は火曜日に集まり、東京大学の図書館で会議を開いた。その後、参加者は駅へ向かった。",
    ),  # 0
    Doc("http://ja.example/station", "駅の案内", "東京駅の北口から図書を受け取る窓口までの道順。"),  # 1
    Doc("http://zh.example/news", "新闻", "北京大学图书馆今天开放了新的阅览室。"),  # 2
    Doc("http://ko.example/library", "도서관", "학생들은 도서관에서 책을 읽었다."),  # 3
    Doc("http://en.example/wing", "Wing lift", "Wing lift in supersonic flow, Tokyo 東京 edition."),  # 4
]


@pytest.fixture
def published(settings):
    return publish_corpus(
        settings.with_overrides(results_per_page=10, and_min_results=1, feedback_docs=0), DOCS, "cjk"
    )


def hits(client, q: str) -> list[dict]:
    return client.get("/api/search", params={"q": q}).json()["hits"]


def docs(client, q: str) -> list[int]:
    return sorted(h["doc_num"] for h in hits(client, q))


def test_a_word_inside_an_unspaced_clause_is_found(client):
    # Pages holding all of a word's bigrams come first; pages holding only some follow, as
    # for any query whose words are not all on a page (doc 1 has 図書 but not 書館).
    assert [h["doc_num"] for h in hits(client, "図書館")] == [0, 1]
    assert docs(client, "東京") == [0, 1, 4]
    assert docs(client, "会議") == [0]
    assert docs(client, "图书馆") == [2]  # simplified Chinese: its own characters
    assert docs(client, "도서관") == [3]  # Korean: the word without its particle 에서
    assert hits(client, "東京 wing")[0]["doc_num"] == 4  # mixed scripts in one query


def test_phrases_of_cjk_words_and_misses(client):
    assert docs(client, '"東京大学"') == [0]
    assert docs(client, "大阪") == []


def test_the_snippet_marks_the_matching_cjk_word(client):
    hit = hits(client, "図書館")[0]
    marked = [hit["snippet"][h["start"] : h["end"]] for h in hit["highlights"]]
    assert "図書館" in marked  # one mark for the word, not one per character
    hit = hits(client, "東京 wing")[0]
    marked = [hit["snippet"][h["start"] : h["end"]].lower() for h in hit["highlights"]]
    assert "東京" in marked and "wing" in marked


def test_no_spelling_correction_for_cjk_words(client):
    """Edit distance over CJK characters (each a syllable or a morpheme) is no spelling
    model: a word the index lacks is not "corrected" into another that shares a character."""
    assert client.get("/api/search", params={"q": "図書室"}).json()["suggestion"] == ""
    assert client.get("/api/search", params={"q": "東京駅 案内所"}).json()["suggestion"] == ""
