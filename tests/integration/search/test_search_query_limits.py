"""Long and repetitive queries over HTTP: cut or collapsed before anything reads them, and
said so, on the results page (a notice above the answer, the box holding what was searched)
and in the JSON API (query_cut, ignored_words, ignored_chars, repeated_words, notices)."""

from __future__ import annotations

import re

import pytest

from services.search.query.limits import MAX_QUERY_CHARS, MAX_QUERY_WORDS
from tests.integration.search.search_corpus import Doc, publish_corpus

DOCS = [
    Doc("http://q.test/0", "Ad blocking", "An ad blocker hides every ad on a page."),
    Doc("http://q.test/1", "Ad networks", "How an ad network places an ad."),
    Doc("http://q.test/2", "Wing lift", "Lift of a wing in supersonic flow."),
    Doc("http://q.test/3", "Wind tunnels", "A wind tunnel for wing models."),
]
FORTY = [f"wing{i}" if i else "wing" for i in range(40)]  # "wing", then words no page holds


@pytest.fixture
def published(settings):
    return publish_corpus(
        settings.with_overrides(results_per_page=10, and_min_results=1, feedback_docs=0), DOCS, "crawl-q"
    )


def _notice(html: str) -> str:
    found = re.search(r'<div class="query-cut" role="status">(.*?)</div>', html, re.S)
    assert found, "no notice of the cut on the page"
    return " ".join(re.sub(r"<[^>]+>", " ", found.group(1)).split())


def _box(html: str) -> str:
    found = re.search(r'<input id="q" name="q" type="search" value="([^"]*)"', html)
    assert found
    return found.group(1)


def test_a_forty_word_query_is_cut_to_thirty_two_and_the_api_lists_the_words_ignored(client):
    body = client.get("/api/search", params={"q": " ".join(FORTY)}).json()
    assert body["query"] == " ".join(FORTY[:MAX_QUERY_WORDS]) and body["query_cut"] is True
    assert body["ignored_words"] == FORTY[MAX_QUERY_WORDS:] and body["ignored_chars"] == 0
    assert body["repeated_words"] == []
    assert body["notices"] == [
        "“wing32” (and any subsequent words) was ignored because we limit queries to 32 words."
    ]
    page = client.get("/", params={"q": " ".join(FORTY)}).text
    assert _notice(page) == body["notices"][0]
    assert _box(page) == body["query"]  # the box holds what was searched


def test_ab_typed_four_hundred_times_is_searched_and_corrected_as_ab(client):
    q = " ".join(["ab"] * 400)
    typed = client.get("/api/search", params={"q": q, "nfpr": "true"}).json()
    assert typed["query"] == "ab" and typed["suggestion"] == "ad"  # never "ad ad … a"
    assert typed["repeated_words"] == [{"word": "ab", "times": 400}] and typed["ignored_words"] == []
    answer = client.get("/api/search", params={"q": q}).json()
    assert answer["query"] == "ad" and answer["corrected_from"] == "ab" and answer["total"] == 2
    assert answer["query_cut"] is True and answer["repeated_words"] == typed["repeated_words"]
    page = client.get("/", params={"q": q}).text
    assert _notice(page) == "“ab” was repeated 400 times in a row: it was searched once."
    assert "ad ad" not in page and "ab ab" not in page


def test_a_thousand_and_one_a_is_one_very_common_word_not_a_cut_query_of_them(client):
    body = client.get("/api/search", params={"q": "a " * 1001}).json()
    assert body["query"] == "a" and body["repeated_words"] == [{"word": "a", "times": 1001}]
    assert body["message"] == "“a” is a very common word, which is not indexed. Add a more specific word."
    page = client.get("/", params={"q": "a " * 1001}).text
    assert _notice(page) == "“a” was repeated 1,001 times in a row: it was searched once."
    assert "only very common words" not in page and "a very common word" in page


def test_a_query_within_the_limits_says_nothing_and_a_cached_answer_keeps_its_own_cut(client):
    plain = client.get("/api/search", params={"q": "wing lift"}).json()
    assert plain["query_cut"] is False and plain["notices"] == [] and plain["ignored_words"] == []
    assert 'class="query-cut"' not in client.get("/", params={"q": "wing lift"}).text
    # "wing" cached by the query as searched: the answer to "wing wing wing" still says its cut,
    # and the answer to "wing" (from the cache) none.
    assert client.get("/api/search", params={"q": "wing"}).json()["query_cut"] is False
    collapsed = client.get("/api/search", params={"q": "wing wing wing"}).json()
    assert collapsed["cached"] is True and collapsed["repeated_words"] == [{"word": "wing", "times": 3}]
    assert client.get("/api/search", params={"q": "wing"}).json()["query_cut"] is False


def test_characters_past_the_limit_are_ignored_and_counted(client):
    q = "wing " + "x" * 5000
    body = client.get("/api/search", params={"q": q}).json()
    assert body["query"] == "wing" and body["ignored_chars"] == 5000 and body["total"] == 2
    assert body["notices"] == [
        "We limit queries to 2,048 characters: the last 5,000 characters of yours were ignored."
    ]
    assert f'maxlength="{MAX_QUERY_CHARS}"' in client.get("/").text


@pytest.mark.parametrize(
    "q",
    [
        "x" * 60_000,
        '"' * 3000,
        "-" * 3000,
        "OR " * 1000,
        "site: " * 500,
        '"ab ab ab' + " ab" * 700,
        "\u0301" * 3000,
        "漢字" * 1500,
        " ".join(["-wing"] * 40 + ["NOT"]),
        "wing " * 31 + "OR",
    ],
)
def test_junk_is_answered_never_a_500(client, q):
    for path in ("/api/search", "/"):
        response = client.get(path, params={"q": q})
        assert response.status_code == 200, (path, response.text[:300])
    suggest = client.get("/api/suggest", params={"q": q[:MAX_QUERY_CHARS]})
    assert suggest.status_code == 200


def test_the_api_schema_documents_the_cut(client):
    schema = client.get("/openapi.json").json()
    fields = schema["components"]["schemas"]["SearchResponse"]["properties"]
    for name in ("query_cut", "ignored_words", "ignored_chars", "repeated_words", "notices"):
        assert fields[name].get("description"), name
    assert (
        "32 words" in fields["ignored_words"]["description"] or "32" in fields["ignored_words"]["description"]
    )
    repeated = schema["components"]["schemas"]["RepeatedWord"]["properties"]
    assert set(repeated) == {"word", "times"}
    q = next(p for p in schema["paths"]["/api/search"]["get"]["parameters"] if p["name"] == "q")
    assert "maxLength" not in q["schema"] and "2,048 characters" in q["description"]


def test_help_states_the_limits(client):
    text = " ".join(re.sub(r"<[^>]+>", " ", client.get("/help").text).split())
    assert "the first 2,048 characters of a query and its first 32 words are searched" in text
    assert "3 or more times in a row counts once" in text
