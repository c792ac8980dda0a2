"""``/metrics``: Prometheus's text format, counting only this app's own requests."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families
from search_corpus import Doc, commit_documents, publish_index

DOCS = [
    Doc("http://m.test/a", "Wing lift", "The wing of an aircraft produces lift."),
    Doc("http://m.test/b", "Drag", "Drag slows the aircraft down."),
]


@pytest.fixture
def published(settings):
    commit_documents(settings, DOCS, 0, "crawl-m")
    publish_index(settings, DOCS, "v1")
    return settings


def samples(client) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    response = client.get("/metrics")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
    out = {}
    for family in text_string_to_metric_families(response.text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def test_requests_queries_and_the_index_are_counted(client) -> None:
    before = samples(client)
    assert before[("nimbus_index_documents", ())] == 2
    version = before[("nimbus_index_version", ())]
    assert version >= 1
    client.get("/api/search", params={"q": "wing"})
    client.get("/api/search", params={"q": "wing OR drag"})
    client.get("/", params={"q": "drag"})
    client.get("/cached/99")  # no such document: a 4xx under its route template
    after = samples(client)
    queries = sum(v for (name, _), v in after.items() if name == "nimbus_search_queries_total")
    assert queries == 3
    api = ("nimbus_http_request_seconds_count", (("route", "/api/search"), ("status", "2xx")))
    assert after[api] == 2
    cached = [
        v
        for (name, labels), v in after.items()
        if name == "nimbus_http_request_seconds_count"
        and ("status", "4xx") in labels
        and dict(labels)["route"].startswith("/cached/")
    ]
    assert cached == [1]  # one label set for every /cached/N: labels stay bounded
    assert after[("nimbus_search_query_seconds_count", ())] == 3
    assert not any(dict(labels).get("route") == "/metrics" for _, labels in after)  # scrapes not timed
