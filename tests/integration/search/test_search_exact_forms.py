"""The word as typed counts: of two pages equal but for the form of the query word, the one
holding the form the user typed ranks first (the index itself holds only stems)."""

from __future__ import annotations

import pytest

from tests.integration.search.search_corpus import Doc, publish_corpus

FRAME = "The {} was described in the annual report of the county, with figures for every parish."
# Pairs sharing a stem (Snowball English: experiment/experience -> experi, animal/animate ->
# anim, iron/ironic -> iron), each pair identical but for that word; whichever page comes
# first in document order would win the tie on document number alone.
DOCS = [
    Doc("http://x.test/experience", "County report", FRAME.format("experience")),
    Doc("http://x.test/experiment", "County report", FRAME.format("experiment")),
    Doc("http://x.test/animate", "County report", FRAME.format("animate")),
    Doc("http://x.test/animal", "County report", FRAME.format("animal")),
    Doc("http://x.test/iron", "County report", FRAME.format("iron")),
    Doc("http://x.test/ironic", "County report", FRAME.format("ironic")),
    Doc("http://x.test/other", "Parish notes", "Notes on the parish church and its bells."),
]


@pytest.fixture
def published(settings):
    return publish_corpus(settings.with_overrides(results_per_page=10, feedback_docs=0), DOCS, "crawl-forms")


def urls(client, q: str) -> list[str]:
    return [h["url"] for h in client.get("/api/search", params={"q": q}).json()["hits"]]


@pytest.mark.parametrize(
    ("query", "first", "second"),
    [
        ("experiment", "experiment", "experience"),
        ("experience", "experience", "experiment"),
        ("animal", "animal", "animate"),
        ("Animate", "animate", "animal"),  # case is not a form
        ("ironic", "ironic", "iron"),
        ("county experiment", "experiment", "experience"),
    ],
)
def test_the_page_holding_the_typed_form_ranks_first(client, query: str, first: str, second: str) -> None:
    found = urls(client, query)
    assert found[:2] == [f"http://x.test/{first}", f"http://x.test/{second}"]


def test_the_bonus_is_a_tie_break_not_a_new_match(client) -> None:
    """Both forms still match (stemming is kept), and a page without the word does not."""
    assert set(urls(client, "experiment")) == {"http://x.test/experience", "http://x.test/experiment"}
