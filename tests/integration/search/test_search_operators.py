"""site:, -site:, filetype:, intitle: and | through the JSON API and the page, with words,
phrases, exclusions and paging; and the API's ``size``."""

from __future__ import annotations

import pytest

from tests.integration.search.search_corpus import Doc, publish_corpus

DOCS = [
    Doc("http://nasa.gov/wing", "Wing design", "Wing lift in supersonic flow."),  # 0
    Doc("http://www.nasa.gov/lift", "Lift", "Lift of a wing at low speed."),  # 1
    Doc("http://fakenasa.gov/wing", "Wing", "A wing, copied: lift and flow."),  # 2
    Doc(
        "http://esa.int/report.pdf", "Wing report", "Wing lift measured.", content_type="application/pdf"
    ),  # 3
    Doc("http://esa.int/shock", "Shock waves", "Shock and wing lift."),  # 4
    Doc("http://esa.int/nozzle", "Nozzle", "Nozzle flow, no lifting surfaces."),  # 5
]


@pytest.fixture
def published(settings):
    return publish_corpus(
        settings.with_overrides(results_per_page=10, and_min_results=1, feedback_docs=0), DOCS, "crawl-ops"
    )


def docs(client, q: str, **params) -> list[int]:
    body = client.get("/api/search", params={"q": q, **params}).json()
    return sorted(h["doc_num"] for h in body["hits"])


def test_site_holds_the_host_and_its_subdomains_only(client):
    assert docs(client, "wing site:nasa.gov") == [0, 1]  # not fakenasa.gov
    assert docs(client, "wing site:NASA.gov site:esa.int") == [0, 1, 3, 4]  # several widen
    assert docs(client, "wing site:https://www.nasa.gov/anything") == [1]
    assert docs(client, "wing -site:nasa.gov") == [2, 3, 4]
    assert docs(client, "wing NOT site:esa.int") == [0, 1, 2]


def test_filetype_and_intitle(client):
    assert docs(client, "lift filetype:pdf") == [3]
    assert docs(client, "lift filetype:html") == [0, 1, 2, 4, 5]  # "lifting" is lift
    assert docs(client, "lift filetype:exe") == []  # a type never stored matches nothing
    # intitle: the word must be in the title, and it is searched for too
    assert docs(client, "intitle:wing") == [0, 2, 3]
    assert docs(client, "intitle:wing lift site:esa.int") == [3]


def test_operators_combine_with_phrases_or_and_exclusions(client):
    assert docs(client, '"wing lift" site:esa.int') == [3, 4]
    # A phrase no page holds falls back to its words: still only on the site asked for.
    assert docs(client, '"lift wing" site:esa.int') == [3, 4, 5]  # 5: "lifting"; no nasa.gov page
    assert docs(client, "shock | nozzle site:esa.int") == [4, 5]
    assert docs(client, "shock OR nozzle -site:esa.int") == []
    assert docs(client, "wing site:esa.int -shock") == [3]


def test_operators_alone_list_the_matching_pages(client):
    body = client.get("/api/search", params={"q": "site:esa.int"}).json()
    assert sorted(h["doc_num"] for h in body["hits"]) == [3, 4, 5]
    assert body["total"] == 3 and body["mode"] == "browse"
    assert docs(client, "filetype:pdf") == [3]
    # Only leaving things out is still not a query.
    body = client.get("/api/search", params={"q": "-site:esa.int"}).json()
    assert body["hits"] == [] and "only leaves" in body["message"]


def test_operators_page_and_count_the_matching_documents_only(client):
    first = client.get("/api/search", params={"q": "wing site:nasa.gov site:esa.int", "size": 2}).json()
    second = client.get(
        "/api/search", params={"q": "wing site:nasa.gov site:esa.int", "size": 2, "page": 2}
    ).json()
    assert first["total"] == 4 and first["per_page"] == 2 and first["pages"] == 2
    seen = [h["doc_num"] for h in first["hits"]] + [h["doc_num"] for h in second["hits"]]
    assert sorted(seen) == [0, 1, 3, 4]


def test_size_is_honoured_capped_and_checked(client):
    assert len(client.get("/api/search", params={"q": "wing", "size": 1}).json()["hits"]) == 1
    capped = client.get("/api/search", params={"q": "wing", "size": 100000}).json()
    assert capped["per_page"] == 100
    for bad in ("0", "-3", "many"):
        response = client.get("/api/search", params={"q": "wing", "size": bad})
        assert response.status_code == 422, bad


def test_the_page_applies_operators_too(client):
    page = client.get("/", params={"q": "wing site:esa.int"}).text
    assert "http://esa.int/shock" in page and "http://nasa.gov/wing" not in page


def test_a_query_that_finds_nothing_offers_shorter_ones_that_do(client):
    body = client.get("/api/search", params={"q": "nozzle site:nasa.gov"}).json()
    assert body["total"] == 0 and body["fewer"] == ["site:nasa.gov", "nozzle"]
    assert all(client.get("/api/search", params={"q": f}).json()["total"] > 0 for f in body["fewer"])
    body = client.get("/api/search", params={"q": '"shock waves" site:nasa.gov'}).json()
    assert body["total"] == 0 and '"shock waves"' in body["fewer"]  # a phrase stays whole
    page = client.get("/", params={"q": "nozzle site:nasa.gov"}).text
    assert "Fewer words find pages" in page and 'href="/?q=nozzle"' in page
    assert client.get("/api/search", params={"q": "wing"}).json()["fewer"] == []
    # A long query is not cut up part by part (one retrieval each): nothing offered.
    long = "nozzle site:nasa.gov " + " ".join(f"qz{i}" for i in range(8))
    assert client.get("/api/search", params={"q": long}).json()["fewer"] == []


def test_the_ranking_evaluations_and_benchmarks_read_applies_the_operators(published):
    """``SearchService.ranked`` (``nimbus eval``, the benchmarks) filters as the API does."""
    from services.search.service import SearchService

    service = SearchService(published)
    try:
        for q in ("wing site:nasa.gov", "wing filetype:pdf", "+shock wing", "+wing +nozzle"):
            ranked = sorted(doc for doc, _score in service.ranked(q, 10))
            assert ranked == sorted(h.doc_num for h in service.search(q).hits), q
        assert sorted(doc for doc, _ in service.ranked("wing site:nasa.gov", 10)) == [0, 1]
        assert [doc for doc, _ in service.ranked("+shock wing", 10)] == [4]
    finally:
        service.close()
