"""/admin/api: the operator's commands as JSON with the bearer token, acting on the database
as `nimbus crawl ...` does, and refusing what the CLI refuses with the CLI's message."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from services.admin import operations
from services.admin.app import create_app
from services.config import Settings
from services.crawler.cluster import heartbeat
from services.crawler.frontier import entries
from services.storage.sql.models import Document, FetchBatch, FrontierEntry, IndexBuild
from tests.hostile_urls import HOSTILE_URLS
from tests.integration.admin.pages import store_pages

TOKEN = "api-admin-token"
BEARER = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def client(settings: Settings):
    with TestClient(create_app(settings.with_overrides(admin_token=TOKEN), recheck_seconds=0)) as c:
        yield c


def test_reads_take_the_token_or_the_session_and_changes_only_the_token(client: TestClient, sessions) -> None:
    for headers in ({}, {"Authorization": "Bearer guess"}, {"Authorization": f"Basic {TOKEN}"}):
        refused = client.post("/admin/api/pause", headers=headers)
        assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer"
        assert "admin token required" in refused.json()["detail"]
        assert client.get("/admin/api/status", headers=headers).status_code == 401
    assert client.post("/admin/login", data={"token": TOKEN}, follow_redirects=False).status_code == 303
    assert client.get("/admin/api/status").status_code == 200  # the dashboard's session reads
    cookie_only = client.post("/admin/api/pause")  # what another site could make a browser send
    assert cookie_only.status_code == 403 and "Bearer" in cookie_only.json()["detail"]
    with sessions() as session:
        assert not heartbeat.control(session).paused
    assert client.post("/admin/api/pause", headers=BEARER).json() == {
        "command": "pause",
        "within_seconds": 5.0,
    }
    with sessions() as session:
        assert heartbeat.control(session).paused


def test_block_with_purge_marks_the_hosts_pages_removed_and_says_how_many(
    client: TestClient, sessions
) -> None:
    store_pages(
        sessions, "http://spam.test/", "http://www.spam.test/a", "http://notspam.test/", "http://ok.test/"
    )
    answer = client.post(
        "/admin/api/block", json={"hosts": ["spam.test", "none.test"], "purge": True}, headers=BEARER
    ).json()
    assert answer["purged"] == {"spam.test": 2, "none.test": 0}
    assert operations.from_json(operations.HostsChanged, answer).lines()[1:] == [
        "purged spam.test: 2 stored pages (its subdomains' too) leave the index at its next update "
        "(`nimbus index update`, or the indexer's within NIMBUS_UPDATE_EVERY s)",
        "nothing to purge for none.test: no stored page of it or its subdomains is live (none was "
        "crawled, or all were removed already)",
    ]
    with sessions() as session:
        removed = {d.url for d in session.scalars(select(Document)) if d.removed_at is not None}
        seqs = {d.commit_seq for d in session.scalars(select(Document))}
        purge = session.scalars(select(FetchBatch)).one()  # the purge's own ledger seq
    assert removed == {"http://spam.test/", "http://www.spam.test/a"}
    assert purge.state == "committed" and seqs == {1, purge.seq}
    assert (
        client.post("/admin/api/block", json={"hosts": ["ok.test"]}, headers=BEARER).json()["purged"] is None
    )
    refused = client.post("/admin/api/block", json={"hosts": [""], "purge": True}, headers=BEARER)
    assert refused.status_code == 400 and "not a host name" in refused.json()["detail"]


def test_each_command_changes_what_the_cli_changes(client: TestClient, sessions) -> None:
    seeded = client.post(
        "/admin/api/seed", json={"urls": ["http://a.test/", "http://A.test/#x"]}, headers=BEARER
    )
    assert seeded.json() == {"added": 1, "known": 1, "recrawled": None}
    with sessions.begin() as session:
        row = session.get(FrontierEntry, entries.url_id("http://a.test/"))
        row.state, row.available_at = "done", 1e12  # fetched; its recrawl a month away
    again = client.post("/admin/api/seed", json={"urls": ["http://a.test/"], "recrawl": True}, headers=BEARER)
    assert again.json() == {"added": 0, "known": 1, "recrawled": 1}
    for command in ("pause", "resume", "stop"):
        assert client.post(f"/admin/api/{command}", headers=BEARER).status_code == 200
    blocked = client.post(
        "/admin/api/block",
        json={"hosts": ["http://Spam.TEST/x", "b.test"], "reason": "link farm"},
        headers=BEARER,
    )
    assert blocked.json()["blocked"] == ["spam.test", "b.test"]
    assert client.post("/admin/api/unblock", json={"hosts": ["b.test"]}, headers=BEARER).json()[
        "unblocked"
    ] == ["b.test"]
    asked = client.post("/admin/api/index", headers=BEARER)
    assert asked.status_code == 202 and asked.json()["state"] == "requested"
    with sessions() as session:
        control = heartbeat.control(session)
        assert session.get(FrontierEntry, entries.url_id("http://a.test/")).available_at == 0.0
        assert not control.paused and control.stop_requested_at > 0
        assert control.blocked == frozenset({"spam.test"})
        build = session.get(IndexBuild, asked.json()["id"])
        assert (build.state, build.requested_by) == ("requested", "admin")
    builds = client.get("/admin/api/index", headers=BEARER).json()["builds"]
    assert [b["id"] for b in builds] == [asked.json()["id"]]
    status = operations.CrawlStatus.from_json(client.get("/admin/api/status", headers=BEARER).json())
    assert status.frontier == {"done": 1} and [b.host for b in status.blocked] == ["spam.test"]


@pytest.mark.parametrize(
    ("path", "body", "message"),
    [
        ("seed", {"urls": ["ftp://x/"]}, "bad seed: not an absolute http(s) URL: 'ftp://x/'"),
        ("seed", {"urls": []}, "give one or more absolute http(s) URLs"),
        ("seed", {"urls": ["http://a.test/"] * (operations.MAX_URLS + 1)}, "give at most 1000 at a time"),
        ("block", {"hosts": ["exa_mple.com"]}, "not a host name: 'exa_mple.com'"),
        ("block", {"hosts": ["a.test"], "reason": "x" * 501}, "keep it to 500"),
        ("block", {"hosts": ["a.test"], "reason": "one\x1b[2Jtwo"}, "control characters"),
        ("unblock", {"hosts": []}, "give one or more host names"),
    ],
)
def test_refused_input_is_a_400_with_the_clis_message(client: TestClient, path, body, message) -> None:
    refused = client.post(f"/admin/api/{path}", json=body, headers=BEARER)
    assert refused.status_code == 400 and message in refused.json()["detail"]


def test_a_body_too_large_is_refused_before_it_is_read(client: TestClient) -> None:
    huge = b'{"urls": ["' + b"x" * (5 << 20) + b'"]}'
    refused = client.post(
        "/admin/api/seed", content=huge, headers={**BEARER, "Content-Type": "application/json"}
    )
    assert refused.status_code == 413


def test_the_api_is_in_the_openapi_schema_with_its_bearer_scheme(client: TestClient, settings) -> None:
    schema = client.get("/openapi.json").json()
    admin = {path for path in schema["paths"] if path.startswith("/admin/")}
    assert admin == {
        f"/admin/api/{p}" for p in ("status", "seed", "pause", "resume", "stop", "block", "unblock", "index")
    }
    assert schema["components"]["securitySchemes"]["AdminToken"]["scheme"] == "bearer"
    assert schema["paths"]["/admin/api/seed"]["post"]["security"] == [{"AdminToken": []}]
    with TestClient(create_app(settings, recheck_seconds=0)) as off:  # no token: no admin, no schema
        assert off.post("/admin/api/pause", headers=BEARER).status_code == 404
        assert not [p for p in off.get("/openapi.json").json()["paths"] if p.startswith("/admin")]


def test_the_api_is_rate_limited_like_the_rest_of_the_site(settings: Settings) -> None:
    limited = settings.with_overrides(admin_token=TOKEN, rate_limit="2/minute")
    with TestClient(create_app(limited, recheck_seconds=0)) as c:
        answers = [c.post("/admin/api/pause", headers={"Authorization": "Bearer guess"}) for _ in range(3)]
    assert [a.status_code for a in answers] == [401, 401, 429]  # guessing the token is limited too
    assert "Too many requests" in answers[2].json()["detail"] and answers[2].headers["retry-after"]


@pytest.mark.parametrize(("url", "why"), HOSTILE_URLS, ids=[repr(u)[:40] for u, _ in HOSTILE_URLS])
def test_a_seed_no_crawl_can_use_is_a_400_naming_it(client: TestClient, url: str, why: str) -> None:
    refused = client.post("/admin/api/seed", json={"urls": ["http://fine.test/", url]}, headers=BEARER)
    assert refused.status_code == 400
    detail = refused.json()["detail"]
    assert detail.startswith("bad seed: ") and why in detail
