"""End to end: crawl a loopback web -> index -> PageRank -> search, cached copies exact."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from services.search.http.app import create_app
from services.storage.sql.engines import make_engine, session_factory
from services.storage.sql.models import Document, PageRankScore


@pytest.fixture(scope="module")
def client(pipeline):
    with TestClient(create_app(pipeline.settings)) as c:
        yield c


def _top_paths(client, query: str, n: int = 3) -> list[str]:
    response = client.get("/api/search", params={"q": query})
    assert response.status_code == 200, response.text
    return [urlsplit(hit["url"]).path for hit in response.json()["hits"][:n]]


def test_crawl_reached_both_hosts_and_respected_robots(pipeline):
    sessions = session_factory(make_engine(pipeline.settings.database_url))
    with sessions() as s:
        urls = s.scalars(select(Document.url)).all()
        ranks = s.scalar(select(func.count()).select_from(PageRankScore))
    assert pipeline.documents == len(urls) > 100
    assert pipeline.pages < 5000  # the frontier ran dry before the page limit
    assert any(u.startswith(pipeline.iana.origin) for u in urls)
    assert any(u.endswith("/papers/tracemonkey.pdf") for u in urls)
    # robots.txt of the IANA site disallows /_css/ and /_js/: never requested.
    assert not [p for _, p in pipeline.iana.requests if p.startswith(("/_css/", "/_js/"))]
    assert ranks == len(urls)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("anarchism", "/wiki/Anarchism"),
        ("autism spectrum children", "/wiki/Autism"),
        ("albedo reflectivity of a surface", "/wiki/Albedo"),
        ("time zone database", "/time-zones"),
        ("beautiful is better than ugly", "/papers/pypdf-example.pdf"),
        ("trace-based just-in-time compilation", "/papers/tracemonkey.pdf"),
    ],
)
def test_expected_top_result(client, query, expected):
    assert _top_paths(client, query, 1) == [expected]


def test_hits_carry_title_url_snippet_and_scores(client):
    data = client.get("/api/search", params={"q": "anarchism"}).json()
    hit = data["hits"][0]
    assert "Anarchism" in hit["title"]
    assert "anarch" in str(hit["snippet"]).lower()
    assert hit["score"] > 0 and 0 < hit["pagerank"] < 1
    assert data["total"] >= len(data["hits"]) > 1


def test_cached_copy_is_byte_identical_and_sandboxed(client, pipeline):
    for query, server, path in [
        ("anarchism", pipeline.wiki, "/wiki/Anarchism"),
        ("time zone database", pipeline.iana, "/time-zones"),
        ("beautiful is better than ugly", pipeline.wiki, "/papers/pypdf-example.pdf"),
    ]:
        hit = client.get("/api/search", params={"q": query}).json()["hits"][0]
        assert urlsplit(hit["url"]).path == path
        cached = client.get(hit["cached_url"])
        assert cached.status_code == 200
        assert cached.content == server.body(path)
        assert "sandbox" in cached.headers["content-security-policy"]


def test_search_page_renders_results(client):
    page = client.get("/", params={"q": "anarchism"})
    assert page.status_code == 200
    assert "/wiki/Anarchism" in page.text and "cached" in page.text.lower()
