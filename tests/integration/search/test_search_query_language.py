"""The query language through the JSON API: AND with OR fallback, OR, -word/NOT, phrases."""

from __future__ import annotations

import pytest

from tests.integration.search.search_corpus import Doc, commit_documents, publish_corpus, publish_index

DOCS = [
    Doc("http://q.test/0", "Boundary layer", "The boundary layer of a wing in supersonic flow."),
    Doc("http://q.test/1", "Layers", "A layer near the boundary; boundary conditions of flow."),
    Doc("http://q.test/2", "Shock", "Shock waves in supersonic flow over a wedge."),
    Doc("http://q.test/3", "Heat", "Heat transfer in the boundary layer at hypersonic speed."),
    Doc("http://q.test/4", "Nozzle", "Nozzle flow and shock position."),
]


@pytest.fixture
def published(settings):
    return publish_corpus(
        settings.with_overrides(results_per_page=10, and_min_results=2, feedback_docs=0), DOCS, "crawl-q"
    )


def hits(client, q: str) -> list[int]:
    return [h["doc_num"] for h in client.get("/api/search", params={"q": q}).json()["hits"]]


def docs(client, q: str) -> list[int]:
    return sorted(hits(client, q))


def test_words_are_anded_when_enough_documents_hold_them_all(client):
    assert docs(client, "boundary layer") == [0, 1, 3]  # all hold both words
    # Documents holding every word come first; partial matches follow them on the page.
    ranked = hits(client, "supersonic flow")
    assert sorted(ranked[:2]) == [0, 2] and sorted(ranked[2:]) == [1, 4]


def test_and_falls_back_to_or_when_too_few_documents_hold_every_word(client):
    # No document holds both "heat" and "shock": fewer than and_min_results (2).
    assert docs(client, "heat shock") == [2, 3, 4]


def test_explicit_or_and_exclusions(client):
    assert docs(client, "wedge OR nozzle") == [2, 4]
    assert docs(client, "boundary layer -heat") == [0, 1]
    assert docs(client, "boundary layer NOT heat") == [0, 1]


def test_phrases_need_the_words_adjacent_and_in_order(client):
    assert docs(client, '"boundary layer"') == [0, 3]  # doc 1 has "layer near the boundary"
    # No document holds "layer boundary": the phrase is a soft constraint, its words answer.
    assert docs(client, '"layer boundary"') == [0, 1, 3]
    # Only doc 0 holds the phrase and "wing": too few for AND, so every phrase match
    # is a result, the one with "wing" first.
    assert hits(client, '"supersonic flow" wing') == [0, 2]


def test_every_word_required_is_a_strict_and_without_partial_matches(client):
    # No document holds both: the plain words fall back to OR, the required ones answer none.
    assert docs(client, "heat shock") == [2, 3, 4] and docs(client, "+heat +shock") == []
    body = client.get("/api/search", params={"q": "+heat +shock"}).json()
    assert body["total"] == 0 and body["mode"] == "and"
    # Two documents hold both: partial matches follow them as typed, never when required.
    assert sorted(hits(client, "supersonic flow")) == [0, 1, 2, 4]
    assert docs(client, "+supersonic +flow") == [0, 2]
    assert client.get("/api/search", params={"q": "+supersonic +flow"}).json()["total"] == 2
    assert docs(client, "+supersonic OR +flow") == [0, 2]
    assert docs(client, "+supersonic +zzzqqq") == []  # a required word no page holds


def test_a_required_word_beside_optional_ones_is_in_every_result(client):
    # No document holds "shock" and "heat": the OR that follows stays among the pages holding
    # the required word.
    assert docs(client, "shock heat") == [2, 3, 4] and docs(client, "+shock heat") == [2, 4]
    assert docs(client, "+heat boundary") == [3] and docs(client, "heat boundary") == [0, 1, 3]
    # "boundary" in docs 0, 1, 3; only doc 3 holds "heat" too (fewer than and_min_results).
    ranked = hits(client, "+boundary heat")
    assert ranked[0] == 3 and sorted(ranked) == [0, 1, 3]
    assert client.get("/api/search", params={"q": "+boundary heat"}).json()["total"] == 3
    assert docs(client, "+wedge OR nozzle") == [2]
    assert docs(client, "+zzzqqq flow") == []  # a required word no page holds: nothing
    # A required phrase's words: doc 1 holds both words apart and is a result of the words.
    assert docs(client, '+"boundary conditions" flow') == [1]


def test_the_api_and_the_page_say_when_no_document_holds_every_word(client):
    body = client.get("/api/search", params={"q": "heat shock"}).json()
    assert body["mode"] == "or"
    page = client.get("/", params={"q": "heat shock"}).text
    assert "No page holds all of your words" in page
    # Only doc 3 holds "heat" and "boundary", too few for an AND result: the page must not
    # say that none does.
    page = client.get("/", params={"q": "heat boundary"}).text
    assert "Only 1 page holds all of your words" in page and "No page holds all" not in page
    assert client.get("/api/search", params={"q": "boundary layer"}).json()["mode"] in {"and", "and+or"}
    assert "No page holds all" not in client.get("/", params={"q": "boundary layer"}).text
    assert "No page holds all" not in client.get("/", params={"q": "wedge OR nozzle"}).text
    # One word after the stop list, an exclusion or a repeat: there was no AND to fail.
    for one_word in ("shock the", "shock -heat", "shock shock"):
        assert client.get("/api/search", params={"q": one_word}).json()["mode"] in {"or", "or+feedback"}
        assert "No page holds all" not in client.get("/", params={"q": one_word}).text, one_word


def test_a_negated_phrase_removes_only_documents_holding_the_phrase(client):
    # Docs 0 and 3 hold the phrase "boundary layer"; doc 1 holds both words apart.
    assert docs(client, 'boundary -"boundary layer"') == [1]


def test_a_query_that_only_excludes_says_what_is_missing(client):
    body = client.get("/api/search", params={"q": "-wing"}).json()
    assert body["total"] == 0 and "only leaves words out" in body["message"]


def test_the_home_page_and_empty_results_show_the_query_syntax(client):
    # Examples taken from this index (its host, its title words), each one tried first.
    home = client.get("/").text
    assert 'class="example" href="/?q=site%3Aq.test' in home and "intitle:" in home
    assert 'class="example"' in client.get("/", params={"q": "zzzqqq"}).text


def test_a_phrase_too_few_documents_hold_ranks_them_first_then_its_words(client):
    # Only doc 1 holds "boundary conditions" (fewer than and_min_results, 2).
    body = client.get("/api/search", params={"q": '"boundary conditions"'}).json()
    assert body["mode"] == "phrase+words"
    ranked = [h["doc_num"] for h in body["hits"]]
    assert ranked[0] == 1 and sorted(ranked) == [0, 1, 3]
    page = client.get("/", params={"q": '"boundary conditions"'}).text
    assert "pages holding the words follow them" in page
    # Enough holders: the phrase stays a hard constraint.
    assert client.get("/api/search", params={"q": '"boundary layer"'}).json()["mode"] == "phrase"


@pytest.fixture
def dotted(settings):
    docs = [
        Doc("http://d.test/0", "Runtime", "Install node.js from www.example-site.net first."),
        Doc("http://d.test/1", "Circle", "The ratio is 3.14 for a circle, as taught in the U.S.A."),
        Doc("http://d.test/2", "Other", "Nothing about runtimes or circles here at all."),
    ]
    settings = settings.with_overrides(feedback_docs=0)
    commit_documents(settings, docs, 0, "crawl-d")
    publish_index(settings, docs, "v1")
    return settings


def test_words_inside_dotted_names_are_found(dotted):
    from fastapi.testclient import TestClient

    from services.search.http.app import create_app

    with TestClient(create_app(dotted, recheck_seconds=0)) as client:
        for q, expected in (("node.js", 0), ("node", 0), ("example site", 0), ("3.14", 1), ("USA", 1)):
            assert hits(client, q)[:1] == [expected], q


def test_a_repeated_query_is_answered_from_the_cache_until_the_index_changes(published, client):
    first = client.get("/api/search", params={"q": "boundary layer"}).json()
    again = client.get("/api/search", params={"q": "boundary layer"}).json()
    assert not first["cached"] and again["cached"]
    assert [h["doc_num"] for h in again["hits"]] == [h["doc_num"] for h in first["hits"]]
    assert not client.get("/api/search", params={"q": "boundary layer", "page": 2}).json()["cached"]
    publish_index(published, DOCS, "v2")  # a new index version: answers are computed again
    assert not client.get("/api/search", params={"q": "boundary layer"}).json()["cached"]
