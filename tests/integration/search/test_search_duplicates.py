""" "Other URLs with the same content": DuplicateUrl rows (written here the way the
crawler writes them) appear as ``also_at`` on API hits and under results on the
HTML page, at most five per hit, with one duplicates query per results page.
Runs on SQLite + files and on MariaDB + moto S3 (the query uses a window function)."""

from __future__ import annotations

import hashlib

import pytest
from sqlalchemy import event

from services.storage.sql.engines import make_engine, session_factory
from services.storage.sql.models import DuplicateUrl
from tests.integration.search.search_corpus import Doc, commit_documents, publish_index

CORPUS = [
    Doc("http://a.test/kites", "Kites", "Kites fly on steady wind. Box kites and delta kites."),
    Doc("http://a.test/wind", "Wind", "Wind is moving air; kites need wind."),
    Doc("http://a.test/tides", "Tides", "Tides follow the moon."),
]
# Seven mirrors of doc 0, inserted newest first so that order of insertion is not the answer.
MIRRORS = [f"http://mirror{i}.test/kites" for i in range(7)]
HOSTILE = "javascript:alert(1)//dup"


@pytest.fixture
def published(request, tmp_path):
    settings = request.getfixturevalue("settings")
    if getattr(request, "param", "local") == "aws":
        bucket = request.getfixturevalue("s3_bucket")
        settings = settings.with_overrides(
            database_url=request.getfixturevalue("mysql_url"),
            blob_url=f"s3://{bucket}/nimbus",
            aws_endpoint_url=request.getfixturevalue("moto_server"),
        )
    settings = settings.with_overrides(results_per_page=10)
    commit_documents(settings, CORPUS, 0, "crawl-0001")
    publish_index(settings, CORPUS, "v1")
    rows = [(0, url, 1_700_000_000.0 + i) for i, url in enumerate(MIRRORS)]
    rows.append((1, HOSTILE, 1_700_000_100.0))
    engine = make_engine(settings.database_url)
    with session_factory(engine).begin() as session:
        for doc_num, url, seen in reversed(rows):
            session.add(
                DuplicateUrl(
                    url_id=hashlib.sha1(url.encode()).hexdigest(),
                    url=url,
                    doc_num=doc_num,
                    doc_id=hashlib.sha1(CORPUS[doc_num].raw()).hexdigest(),
                    first_seen=seen,
                    last_seen=seen + 50,
                )
            )
    engine.dispose()
    return settings


@pytest.mark.parametrize(
    "published", ["local", pytest.param("aws", marks=pytest.mark.mariadb)], indirect=True
)
def test_api_lists_up_to_five_other_urls_first_seen_first(published, client):
    statements: list[str] = []
    engine = client.app.state.service.engine
    listen = lambda _c, _cur, sql, *_a: statements.append(sql)  # noqa: E731
    event.listen(engine, "before_cursor_execute", listen)
    try:
        body = client.get("/api/search", params={"q": "kites wind tides"}).json()
    finally:
        event.remove(engine, "before_cursor_execute", listen)
    also = {hit["url"]: hit["also_at"] for hit in body["hits"]}
    assert also == {
        "http://a.test/kites": MIRRORS[:5],  # the five seen first, in that order
        "http://a.test/wind": [HOSTILE],
        "http://a.test/tides": [],
    }
    assert sum("duplicate_urls" in sql for sql in statements) == 1  # one query for 3 hits


def test_html_shows_the_other_urls_under_the_result_safely(client):
    html = client.get("/", params={"q": "kites"}).text
    kites = html.index('href="http://a.test/kites"')
    listed = html.index("Same content at:")
    assert kites < listed < html.index('href="http://a.test/wind"')
    for url in MIRRORS[:5]:
        assert f'href="{url}"' in html
    assert MIRRORS[5] not in html and MIRRORS[6] not in html
    wind = client.get("/", params={"q": "wind"}).text
    assert 'href="javascript:' not in wind and 'href="#" rel="nofollow">javascript:alert(1)' in wind
    tides = client.get("/", params={"q": "tides"}).text
    assert "Same content at:" not in tides
