"""The API's answers to bad input, the security headers and the offline API docs."""

from __future__ import annotations

import re

import pytest

from services.search.query.limits import MAX_QUERY_CHARS
from tests.integration.search.search_corpus import Doc, publish_corpus

DOCS = [Doc("http://h.test/0", "Wing", "Wing lift <script>alert(1)</script>.")]


@pytest.fixture
def published(settings):
    return publish_corpus(settings, DOCS, "crawl-h")


@pytest.mark.parametrize(
    "params",
    [
        {"q": "wing", "page": "zero"},
        {"q": "wing", "page": "0"},
        {"q": "wing", "page": "99999999999999999999999"},
        {"q": "wing", "size": "-1"},
        {"q": "wing", "size": "1e9"},
    ],
)
def test_bad_parameters_get_a_short_4xx_that_does_not_echo_them(client, params):
    response = client.get("/api/search", params=params)
    assert response.status_code == 422
    body = response.json()
    assert len(response.content) < 2_000, "the error must not repeat a huge input"
    assert "x" * 200 not in response.text
    assert isinstance(body["detail"], list) and body["detail"][0]["loc"][0] == "query"
    assert "input" not in body["detail"][0]


def test_a_huge_query_is_cut_not_refused_and_not_echoed_past_the_limit(client):
    # httpx sends at most 64 KiB of query string. The query limits (services/search/query/
    # limits.py) read its first MAX_QUERY_CHARS characters and say that the rest was ignored.
    response = client.get("/api/search", params={"q": "x" * 65_000})
    assert response.status_code == 200
    body = response.json()
    assert body["query"] == "x" * MAX_QUERY_CHARS and body["ignored_chars"] == 65_000 - MAX_QUERY_CHARS
    assert body["query_cut"] is True and body["total"] == 0
    assert len(response.content) < MAX_QUERY_CHARS + 2_000, "the answer must not repeat a huge input"


def test_unknown_paths_and_methods_are_4xx_not_500(client):
    assert client.get("/api/nothing-here").status_code == 404
    assert client.post("/api/search", json={"q": "wing"}).status_code == 405
    assert client.get("/cached/not-a-number").status_code == 422
    assert client.get("/cached/99999999999999999999").status_code in (404, 422)


def test_every_html_page_has_a_policy_without_inline_script(client):
    for path in ("/", "/?q=wing", "/cached/0/view", "/help"):
        response = client.get(path)
        assert response.status_code == 200, path
        policy = response.headers["content-security-policy"]
        script = re.search(r"script-src ([^;]*)", policy)
        assert script is not None and "'unsafe-inline'" not in script.group(1), path
        assert "frame-ancestors 'none'" in policy, path
        assert response.headers["referrer-policy"] and response.headers["x-content-type-options"] == "nosniff"
        assert "<script>" not in response.text.lower(), path  # no inline script on our pages
    framed = client.get("/cached/0/display").headers["content-security-policy"]
    assert framed.startswith("sandbox") and "frame-ancestors 'self'" in framed


def test_cors_is_off_by_default(client):
    response = client.get("/api/search", params={"q": "wing"}, headers={"Origin": "https://evil.example"})
    assert response.status_code == 200 and "access-control-allow-origin" not in response.headers


def test_api_docs_are_served_from_here_without_inline_script(client):
    for path in ("/docs", "/redoc"):
        html = client.get(path).text
        sources = re.findall(r'(?:src|href)="([^"]+)"', html)
        assert sources and all(s.startswith("/") for s in sources), sources  # no CDN
        for source in sources:
            assert client.get(source).status_code == 200, source
        assert not re.search(r"<script>(?!</script>)", html)  # every script is a file
    schema = client.get("/openapi.json").json()
    assert "/api/search" in schema["paths"]
    assert {p["name"] for p in schema["paths"]["/api/search"]["get"]["parameters"]} >= {"q", "page", "size"}


def test_a_client_over_its_rate_gets_429_with_retry_after_and_others_do_not(published):
    from fastapi.testclient import TestClient

    from services.search.http.app import create_app

    app = create_app(published.with_overrides(rate_limit="3/minute"), recheck_seconds=0)
    with TestClient(app) as one, TestClient(app, client=("10.0.0.2", 5000)) as other:
        assert [one.get("/api/search", params={"q": "wing"}).status_code for _ in range(3)] == [200] * 3
        refused = one.get("/api/search", params={"q": "wing"})
        assert refused.status_code == 429 and int(refused.headers["retry-after"]) >= 1
        assert "3 per 1 minute" in refused.json()["detail"]
        assert refused.headers["content-security-policy"]  # refusals carry the security headers
        assert one.get("/").status_code == 429  # pages too
        assert one.get("/healthz").status_code == 200  # load balancers are never limited
        assert other.get("/api/search", params={"q": "wing"}).status_code == 200


def test_a_malformed_rate_is_a_settings_error_naming_the_variable():
    from services.config import Settings, SettingsError

    with pytest.raises(SettingsError, match="NIMBUS_RATE_LIMIT"):
        Settings.from_env({"NIMBUS_RATE_LIMIT": "lots"})
    assert Settings.from_env({"NIMBUS_RATE_LIMIT": "off"}).search.rate_limit == "off"


@pytest.mark.parametrize("page", ["²", "٣", "0", "-1", "1" * 40, "abc", ""])
def test_the_page_takes_any_page_number_a_person_types(client, page):
    response = client.get("/", params={"q": "wing", "page": page})
    assert response.status_code == 200 and "h.test/0" in response.text


def test_people_get_error_pages_and_programs_get_json(client):
    browser = {"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"}
    for path in ("/page/99", "/cached/99/view", "/no/such/page"):
        page = client.get(path, headers=browser)
        assert page.status_code == 404 and page.headers["content-type"].startswith("text/html"), path
        assert 'role="search"' in page.text and 'href="/help"' in page.text and "Traceback" not in page.text
    for path in ("/api/page/99", "/no/such/page"):
        assert client.get(path).json()["detail"], path  # no Accept: text/html, so JSON
    assert client.get("/api/page/99", headers=browser).headers["content-type"] == "application/json"


def test_forwarded_addresses_are_believed_from_the_proxies_only_and_only_as_addresses(published):
    """Any X-Forwarded-For from a trusted proxy was a new client (uvicorn takes any string):
    `junk-1`, `junk-2`, ... bypassed the rate limit."""
    from fastapi.testclient import TestClient

    from services.search.http.app import create_app

    limited = published.with_overrides(rate_limit="3/minute", proxy_cidrs="10.40.0.0/20,10.40.16.0/20")
    app = create_app(limited, recheck_seconds=0)
    search = {"q": "wing"}
    with (
        TestClient(app, client=("10.40.3.7", 5000)) as alb,
        TestClient(app, client=("203.0.113.5", 1)) as direct,
    ):
        junk = [
            alb.get("/api/search", params=search, headers={"X-Forwarded-For": f"junk-{i}"}) for i in range(4)
        ]
        assert [r.status_code for r in junk] == [200, 200, 200, 429]  # all the proxy's own address
        assert "10.40.3.7" in junk[3].json()["detail"]
        one = {"X-Forwarded-For": "198.51.100.1"}
        assert [alb.get("/api/search", params=search, headers=one).status_code for _ in range(4)] == [
            200
        ] * 3 + [429]
        # The client's own claim on the left is not believed: the proxy's view on the right is.
        spoof = {"X-Forwarded-For": "192.0.2.77, 198.51.100.1"}
        assert alb.get("/api/search", params=search, headers=spoof).status_code == 429
        assert (
            alb.get("/api/search", params=search, headers={"X-Forwarded-For": "198.51.100.2"}).status_code
            == 200
        )
        # Not from a proxy: the header is the client's word, and not taken.
        claims = [
            direct.get("/api/search", params=search, headers={"X-Forwarded-For": f"192.0.2.{i}"})
            for i in range(4)
        ]
        assert [r.status_code for r in claims] == [200, 200, 200, 429]


def test_a_browser_over_its_rate_gets_a_page_and_the_api_json(published):
    """A browser got plain text for 429."""
    from fastapi.testclient import TestClient

    from services.search.http.app import create_app

    app = create_app(published.with_overrides(rate_limit="1/minute"), recheck_seconds=0)
    browser = {"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"}
    with TestClient(app) as c:
        assert c.get("/", params={"q": "wing"}, headers=browser).status_code == 200
        page = c.get("/", params={"q": "wing"}, headers=browser)
        assert page.status_code == 429 and page.headers["content-type"] == "text/html; charset=utf-8"
        assert "Too many requests" in page.text and 'role="search"' in page.text
        assert int(page.headers["retry-after"]) >= 1
        api = c.get("/api/search", params={"q": "wing"}, headers=browser)
        assert api.status_code == 429 and api.headers["content-type"] == "application/json"
        assert "Too many requests" in api.json()["detail"] and int(api.headers["retry-after"]) >= 1


def test_the_schema_documents_429_on_every_limited_route(client):
    """429 was missing from the OpenAPI schema of the API routes."""
    paths = client.get("/openapi.json").json()["paths"]
    for path, operations in paths.items():
        for method, operation in operations.items():
            limited = path not in ("/healthz",)
            assert ("429" in operation["responses"]) is limited, (method, path)
    said = paths["/api/search"]["get"]["responses"]["429"]
    assert "Retry-After" in said["description"]


@pytest.mark.parametrize("path", ["/api/search", "/", "/healthz", "/help", "/cached/0/view"])
def test_405_names_every_method_the_route_answers(client, path):
    """`Allow: GET` although HEAD answers 200."""
    assert client.head(path).status_code == 200
    for accept in ("application/json", "text/html"):
        refused = client.post(path, headers={"Accept": accept})
        assert refused.status_code == 405 and refused.headers["allow"] == "GET, HEAD", (path, accept)
