"""Robots "noarchive": the page is found, its cached copy is not shown anywhere."""

from __future__ import annotations

import pytest

from tests.integration.search.search_corpus import Doc, publish_corpus

DOCS = [
    Doc("http://h.test/open", "Open minutes", "Minutes of the river society, open to all."),
    Doc("http://h.test/closed", "Closed minutes", "Minutes of the river society, no copies.", noarchive=True),
]


@pytest.fixture
def published(settings):
    return publish_corpus(settings, DOCS, "crawl-noarchive")


def test_a_noarchive_page_is_found_without_a_cached_copy(client):
    hits = {h["url"]: h for h in client.get("/api/search", params={"q": "minutes river"}).json()["hits"]}
    assert set(hits) == {"http://h.test/open", "http://h.test/closed"}  # both found
    open_num, closed_num = hits["http://h.test/open"]["doc_num"], hits["http://h.test/closed"]["doc_num"]
    assert hits["http://h.test/open"]["cached_url"] == f"/cached/{open_num}"
    assert hits["http://h.test/closed"]["cached_url"] == ""
    for path in ("", "/display", "/view", "/text"):
        assert client.get(f"/cached/{open_num}{path}").status_code == 200, path
        refused = client.get(f"/cached/{closed_num}{path}")
        assert refused.status_code == 404 and "noarchive" in refused.text, path
    assert client.get(f"/api/page/{closed_num}").json()["cached_url"] == ""
    assert client.get(f"/api/page/{open_num}").json()["cached_url"] == f"/cached/{open_num}"
    page = client.get("/", params={"q": "closed minutes"}).text
    assert f"/cached/{closed_num}/view" not in page and f"/page/{closed_num}" in page
    assert f"/cached/{closed_num}" not in client.get(f"/page/{closed_num}").text
    assert f'href="/cached/{open_num}/view"' in client.get(f"/page/{open_num}").text  # not a bare "/view"
