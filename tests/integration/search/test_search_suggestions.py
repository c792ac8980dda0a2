"""Did you mean, and completions, from the index's vocabulary (the titles' words)."""

from __future__ import annotations

import pytest

from tests.integration.search.search_corpus import Doc, publish_corpus

DOCS = [
    Doc("http://s.test/0", "Supersonic wing design", "Supersonic flow over a wing."),
    Doc("http://s.test/1", "Supersonic nozzles", "Nozzle flow at supersonic speed."),
    Doc("http://s.test/2", "Supersonic shock waves", "Shock waves in supersonic flow."),
    Doc("http://s.test/3", "Superheated steam", "Steam tables."),
    Doc("http://s.test/4", "Wing lift", "Lift of a wing."),
    Doc("http://s.test/5", "Wind tunnels", "A wind tunnel for wing models."),
    Doc("http://s.test/6", "Shock waves", "Shock waves measured."),  # "shock waves": in two titles
]


@pytest.fixture
def published(settings):
    return publish_corpus(
        settings.with_overrides(results_per_page=10, and_min_results=1, feedback_docs=0), DOCS, "crawl-s"
    )


def search(client, q: str) -> dict:
    """The query as typed (nfpr): what "did you mean" offers, without it replacing the query."""
    return client.get("/api/search", params={"q": q, "nfpr": "true"}).json()


def test_a_misspelled_word_gets_a_correction_that_finds_more(client):
    body = search(client, "supersnoic flow")
    assert body["suggestion"] == "supersonic flow"
    page = client.get("/", params={"q": "supersnoic flow", "nfpr": "1"}).text
    assert "Did you mean" in page and 'href="/?q=supersonic%20flow"' in page


def test_a_query_answering_nothing_in_full_shows_its_correction_instead(client):
    body = client.get("/api/search", params={"q": "supersnoic flow"}).json()
    assert body["query"] == "supersonic flow" and body["corrected_from"] == "supersnoic flow"
    assert body["total"] == 3 and body["suggestion"] == "" and body["hits"]
    page = client.get("/", params={"q": "supersnoic flow"}).text
    assert "Showing results for" in page and 'href="/?q=supersnoic%20flow&amp;nfpr=1"' in page
    # A correction that finds clearly more but not ten times as much is only offered.
    assert not client.get("/api/search", params={"q": "supersonic"}).json()["corrected_from"]


def test_operators_phrases_and_exclusions_are_kept_as_typed(client):
    assert search(client, '"supersnoic flow" site:s.test')["suggestion"] == '"supersonic flow" site:s.test'
    assert search(client, "wnig -supersnoic")["suggestion"] == "wing -supersonic"
    assert search(client, "+supersnoic +flow")["suggestion"] == "+supersonic +flow"
    assert search(client, '+"supersnoic flow"')["suggestion"] == '+"supersonic flow"'


def test_no_suggestion_when_the_query_is_fine_or_nothing_better_is_found(client):
    assert search(client, "supersonic flow")["suggestion"] == ""
    assert search(client, "qqqqzzzz")["suggestion"] == ""  # nothing within two edits
    assert "Did you mean" not in client.get("/", params={"q": "wing"}).text


def test_completions_of_the_last_word_most_frequent_first(client):
    got = client.get("/api/suggest", params={"q": "sup"}).json()["suggestions"]
    assert got[0] == "supersonic" and "superheated" in got
    assert client.get("/api/suggest", params={"q": "shock wa"}).json()["suggestions"] == ["shock waves"]
    assert client.get("/api/suggest", params={"q": "w", "limit": 2}).json()["suggestions"] == [
        "wing",
        "waves",
    ]
    assert client.get("/api/suggest", params={"q": "wing "}).json()["suggestions"] == []  # next word: none
    assert client.get("/api/suggest", params={"q": "zzz"}).json()["suggestions"] == []
    # A paragraph is not being typed: no completions (its cut end is no word), and no error.
    for long in ("x" * 201, "a " * 1001, "wing " * 409):
        answer = client.get("/api/suggest", params={"q": long})
        assert answer.status_code == 200 and answer.json()["suggestions"] == []
    # More than the search box holds is refused, briefly.
    refused = client.get("/api/suggest", params={"q": "w" * 65_000})
    assert refused.status_code == 422 and len(refused.content) < 2_000


def test_frequent_title_phrases_complete_before_single_words(client):
    assert client.get("/api/suggest", params={"q": "sho"}).json()["suggestions"][:2] == [
        "shock waves",
        "shock",
    ]
    assert client.get("/api/suggest", params={"q": "measured shock w"}).json()["suggestions"][0] == (
        "measured shock waves"
    )
    # A pair in one title only is no phrase: typing "sup" offers words, not "supersonic wing".
    assert all(" " not in s for s in client.get("/api/suggest", params={"q": "sup"}).json()["suggestions"])


def test_words_of_the_bodies_count_too_when_two_documents_hold_them(client):
    # "flow" is in no title, in three bodies (the index job's vocabulary); "tables" in one.
    assert search(client, "supersonic flwo")["suggestion"] == "supersonic flow"
    assert "flow" in client.get("/api/suggest", params={"q": "fl"}).json()["suggestions"]
    assert "tables" not in client.get("/api/suggest", params={"q": "tab"}).json()["suggestions"]


def test_the_vocabulary_is_ready_before_the_first_request(published):
    from fastapi.testclient import TestClient

    from services.search.http.app import create_app

    app = create_app(published, recheck_seconds=0)
    service = app.state.service
    index = service.index()
    assert not service.vocabularies.ready_for(index) and not service.facts.ready_for(index)
    with TestClient(app):  # start-up only: no request made
        assert service.vocabularies.ready_for(index) and service.facts.ready_for(index)
