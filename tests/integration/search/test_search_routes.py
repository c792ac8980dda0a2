"""Routes through their dependencies, and the project's errors as HTTP statuses."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from services.errors import NimbusError
from services.search.errors import NotFoundError, SearchIndexError
from services.search.http.app import create_app
from services.search.http.http_errors import FAILED, UNAVAILABLE
from services.search.service import SearchService
from services.storage.errors import StorageError
from tests.integration.search.search_corpus import Doc, publish_corpus

PAGE = (
    "<html><head><meta charset=windows-1252><title>Caf\xe9 wings</title>"
    "<script>alert(1)</script></head><body onload=x()><img src=wing.png><p>Wing caf\xe9</p></body></html>"
).encode("windows-1252")
DOCS = [
    Doc("http://a.test/dir/cafe.html", "Café wings", "Wing café", body=PAGE),
    Doc("http://a.test/notes.txt", "Notes", "Plain wing notes.", content_type="text/plain"),
]


@pytest.fixture
def published(settings):
    return publish_corpus(settings, DOCS, "c1")


def test_cached_view_frames_a_display_copy_under_a_banner(client):
    view = client.get("/cached/0/view")
    assert view.status_code == 200 and view.headers["content-type"].startswith("text/html")
    assert "http://a.test/dir/cafe.html" in view.text and "crawled on" in view.text
    assert '<iframe class="cached-frame" src="/cached/0/display" sandbox' in view.text
    shown = client.get("/cached/0/display")
    assert shown.headers["content-type"] == "text/html; charset=utf-8"
    assert shown.headers["content-security-policy"].split(";")[0] == "sandbox"
    html = shown.content.decode("utf-8")
    assert '<base href="http://a.test/dir/cafe.html"/>' in html and "Wing café" in html
    assert "<script" not in html and "onload" not in html
    assert client.get("/cached/0").content == PAGE  # the stored bytes stay as fetched
    text = client.get("/cached/1/display")
    assert (text.headers["content-type"], text.content) == ("text/plain", DOCS[1].raw())


def test_results_link_the_cached_copy_and_page_info(client):
    html = client.get("/", params={"q": "wing"}).text
    assert 'href="/cached/0/view?q=wing"' in html and 'href="/page/0?q=wing"' in html


class _Failing(SearchService):
    """The real service over the real index, failing in one chosen way on search."""

    error: BaseException = NimbusError("boom")

    def search(self, q, page=1, size=None, *, as_typed=False):  # type: ignore[override]
        raise self.error


@pytest.mark.parametrize(
    ("error", "status", "detail"),
    [
        (NotFoundError("no document number 7"), 404, "no document number 7"),
        (SearchIndexError("segment unreadable"), 503, UNAVAILABLE),
        (StorageError("bucket gone"), 503, UNAVAILABLE),
        (NimbusError("unexpected state"), 500, FAILED),
    ],
)
def test_each_error_class_has_its_status_and_no_traceback(published, error, status, detail):
    service = _Failing(published, recheck_seconds=0)
    service.error = error
    with TestClient(create_app(published, service=service), raise_server_exceptions=False) as client:
        for path in ("/api/search?q=wing", "/?q=wing"):
            resp = client.get(path)
            assert resp.status_code == status, path
            assert resp.json() == {"detail": detail}
            assert "Traceback" not in resp.text
    service.close()


def test_unknown_documents_are_404_on_every_cached_route(client):
    for path in ("/cached/99", "/cached/99/display", "/cached/99/view"):
        resp = client.get(path)
        assert resp.status_code == 404 and "no document number 99" in resp.json()["detail"]


def test_head_is_answered_like_get_on_every_route(client):
    for path in ("/", "/?q=wing", "/api/search?q=wing", "/healthz", "/cached/0", "/static/style.css"):
        got, head = client.get(path), client.head(path)
        assert head.status_code == got.status_code == 200, path
        assert head.content == b"" and head.headers["content-type"] == got.headers["content-type"], path
    assert client.head("/cached/99").status_code == 404


def test_favicon_is_served(client):
    icon = client.get("/favicon.ico")
    assert icon.status_code == 200 and icon.headers["content-type"] == "image/x-icon"
    assert icon.content[:4] == b"\x00\x00\x01\x00"  # an ICO header
    assert '<link rel="icon" href="/favicon.ico">' in client.get("/").text


def test_document_numbers_beyond_any_column_are_404_not_500(client):
    for n in (2**31, 2**63, 2**64 + 5):
        resp = client.get(f"/cached/{n}")
        assert resp.status_code == 404, n


def test_a_query_of_only_symbols_says_so(client):
    for q in ('"', "-", "*", "🙂", "?!", '" "'):
        body = client.get("/api/search", params={"q": q}).json()
        assert body["total"] == 0 and "only punctuation or symbols" in body["message"], q
    assert "common words" in client.get("/api/search", params={"q": "the of"}).json()["message"]
