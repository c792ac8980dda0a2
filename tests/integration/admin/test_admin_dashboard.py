"""/admin: token, session cookie, CSRF, and what it shows and does through the database."""

from __future__ import annotations

import re
import time

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from services.admin.app import create_app
from services.config import Settings
from services.crawler.cluster import heartbeat
from services.crawler.frontier import entries
from services.storage.sql.models import Document, FrontierEntry
from tests.hostile_urls import HOSTILE_URLS
from tests.integration.admin.pages import store_pages

TOKEN = "s3cret-admin-token"


@pytest.fixture
def admin_settings(settings: Settings) -> Settings:
    return settings.with_overrides(admin_token=TOKEN)


@pytest.fixture
def client(admin_settings: Settings, sessions):
    now = time.time()
    with sessions.begin() as session:  # two crawler processes: one beating, one killed long ago
        heartbeat.beat(
            session, heartbeat.Beat("w1/all/11", "crawler", now - 60, now, "running", {"pages": 120})
        )
        heartbeat.beat(
            session, heartbeat.Beat("w2/all/12", "crawler", now - 900, now - 600, "running", {"pages": 30})
        )
        entries.add_urls(
            session, [entries.NewUrl("http://a.test/x", 1), entries.NewUrl("http://a.test/y", 1)]
        )
    with TestClient(create_app(admin_settings, recheck_seconds=0)) as c:
        yield c


def _sign_in(client: TestClient) -> str:
    response = client.post("/admin/login", data={"token": TOKEN}, follow_redirects=False)
    assert response.status_code == 303
    page = client.get("/admin")
    assert page.status_code == 200
    found = re.search(r'name="csrf" value="([0-9a-f]+)"', page.text)
    assert found
    return found.group(1)


def test_without_a_token_setting_there_is_no_dashboard(settings: Settings) -> None:
    with TestClient(create_app(settings, recheck_seconds=0)) as c:
        assert c.get("/admin").status_code == 404
        assert c.get("/admin/api/status", headers={"Authorization": "Bearer "}).status_code == 404


def test_pages_ask_for_the_token_and_the_api_answers_401(client: TestClient) -> None:
    page = client.get("/admin")
    assert page.status_code == 401 and 'name="token"' in page.text
    wrong = client.post("/admin/login", data={"token": "guess"}, follow_redirects=False)
    assert wrong.status_code == 401 and "not the admin token" in wrong.text
    assert client.get("/admin/api/status").status_code == 401
    assert client.get("/admin/api/status", headers={"Authorization": "Bearer guess"}).status_code == 401
    ok = client.get("/admin/api/status", headers={"Authorization": f"Bearer {TOKEN}"})
    assert ok.status_code == 200
    body = ok.json()
    states = {n["node_id"]: n["state"] for n in body["nodes"]}
    assert states == {"w1/all/11": "running", "w2/all/12": "dead"}  # no beat for 10 minutes
    assert body["frontier"] == {"new": 2} and body["pages"] == 150


def test_the_dashboard_shows_nodes_and_its_forms_act_only_with_the_session_and_csrf(client, sessions):
    csrf = _sign_in(client)
    page = client.get("/admin").text
    assert "w1/all/11" in page and 'class="dead"' in page and "1 running of 2 nodes" in page
    # A form posted without the CSRF token (as another site could make a browser do) is refused,
    # and so is one with a token but no session.
    assert client.post("/admin/command", data={"action": "pause"}).status_code == 403
    anonymous = TestClient(client.app)
    assert anonymous.post("/admin/command", data={"action": "pause", "csrf": csrf}).status_code == 403
    assert anonymous.post("/admin/seed", data={"urls": "http://b.test/", "csrf": csrf}).status_code == 403
    with sessions() as session:
        assert not heartbeat.control(session).paused
    done = client.post("/admin/command", data={"action": "pause", "csrf": csrf}, follow_redirects=False)
    assert done.status_code == 303
    added = client.post("/admin/seed", data={"urls": "http://b.test/\nhttp://c.test/", "csrf": csrf})
    assert added.status_code == 200  # followed the redirect back to the dashboard
    with sessions() as session:
        assert heartbeat.control(session).paused
        assert session.get(FrontierEntry, entries.url_id("http://b.test/")) is not None
    assert "<strong>paused</strong>" in client.get("/admin").text
    assert client.post("/admin/seed", data={"urls": "ftp://x/", "csrf": csrf}).status_code == 400
    with sessions.begin() as session:  # b.test fetched since: done, its recrawl a month away
        session.get(FrontierEntry, entries.url_id("http://b.test/")).state = "done"
        session.get(FrontierEntry, entries.url_id("http://b.test/")).available_at = 1e12
    again = {"urls": "http://b.test/", "recrawl": "1", "csrf": csrf}
    assert client.post("/admin/seed", data=again).status_code == 200
    with sessions() as session:
        assert session.get(FrontierEntry, entries.url_id("http://b.test/")).available_at == 0.0


def test_a_forged_or_expired_session_cookie_is_not_a_session(client: TestClient) -> None:
    client.cookies.set("nimbus_admin", "9999999999.abcd.deadbeef", path="/admin")
    assert client.get("/admin").status_code == 401


def test_the_chart_sums_the_ledger_per_minute(client: TestClient, sessions) -> None:
    from services.storage.sql.models import FetchBatch

    now = time.time()
    minute = int(now) // 60 * 60
    with sessions.begin() as session:  # three flushes: two in this minute, one five minutes ago
        for at, pages, errors in ((minute + 1, 30, 2), (minute + 2, 12, 0), (minute - 300, 7, 7)):
            session.add(
                FetchBatch(state="committed", committed_at=at, num_urls=pages, pages=pages, errors=errors)
            )
        session.add(FetchBatch(state="leased", created_at=now, num_urls=32))  # not committed: not counted
    body = client.get("/admin/api/status", headers={"Authorization": f"Bearer {TOKEN}"}).json()
    minutes = {int(m["start"]): (m["pages"], m["errors"]) for m in body["minutes"]}
    assert len(minutes) == 60
    assert minutes[minute] == (42, 2) and minutes[minute - 300] == (7, 7)
    assert sum(p for p, _ in minutes.values()) == 49
    _sign_in(client)
    assert '<svg id="progress"' in client.get("/admin").text


def test_the_slowest_hosts_are_those_with_the_longest_delay_then_the_most_errors(client, sessions) -> None:
    from services.storage.sql.models import Host

    with sessions.begin() as session:
        session.add(Host(host="http://a.test", crawl_delay=30.0, errors=1, pages=4))
        session.add(Host(host="http://b.test", crawl_delay=None, errors=7, pages=9))
        session.add(Host(host="http://c.test", crawl_delay=None, errors=0, pages=50))  # not slow
    body = client.get("/admin/api/status", headers={"Authorization": f"Bearer {TOKEN}"}).json()
    slow = [(h["host"], h["delay"], h["errors"], h["waiting"]) for h in body["slowest_hosts"]]
    assert slow == [("http://a.test", 30.0, 1, 2), ("http://b.test", 0.0, 7, 0)]
    _sign_in(client)
    page = client.get("/admin").text
    assert 'id="slow-hosts"' in page and "http://a.test" in page.split('id="slow-hosts"')[1]


def test_hosts_are_blocked_and_unblocked_from_the_dashboard_with_the_session_and_csrf(client, sessions):
    csrf = _sign_in(client)
    anonymous = TestClient(client.app)
    assert anonymous.post("/admin/block", data={"hosts": "spam.test", "csrf": csrf}).status_code == 403
    assert client.post("/admin/block", data={"hosts": "spam.test"}).status_code == 403  # no CSRF token
    blocked = client.post(
        "/admin/block",
        data={"hosts": "http://Spam.TEST/page\nother.test", "reason": "webmaster asked", "csrf": csrf},
        follow_redirects=False,
    )
    assert blocked.status_code == 303
    with sessions() as session:
        assert heartbeat.control(session).blocked == frozenset({"spam.test", "other.test"})
    page = client.get("/admin").text
    assert "spam.test" in page and "webmaster asked" in page
    api = client.get("/admin/api/status", headers={"Authorization": f"Bearer {TOKEN}"}).json()
    assert [b["host"] for b in api["blocked_hosts"]] == ["other.test", "spam.test"]
    assert client.post("/admin/block", data={"hosts": "exa_mple.com", "csrf": csrf}).status_code == 400
    unblock = {"hosts": "other.test", "action": "unblock", "csrf": csrf}
    assert client.post("/admin/block", data=unblock, follow_redirects=False).status_code == 303
    with sessions() as session:
        assert heartbeat.control(session).blocked == frozenset({"spam.test"})
    assert 'name="purge"' in page  # the block form's "also take their stored pages out"
    store_pages(sessions, "http://purged.test/", "http://kept.test/")
    purge = {"hosts": "purged.test", "purge": "1", "csrf": csrf}
    assert client.post("/admin/block", data=purge, follow_redirects=False).status_code == 303
    with sessions() as session:
        assert heartbeat.control(session).blocked == frozenset({"spam.test", "purged.test"})
        removed = session.scalars(select(Document.url).where(Document.removed_at.is_not(None))).all()
    assert removed == ["http://purged.test/"]


HTML = "text/html; charset=utf-8"
# The form's URLs are separated by whitespace: those without any are one URL there.
ONE_WORD = [(url, why) for url, why in HOSTILE_URLS if url.split() == [url]]


@pytest.mark.parametrize(("url", "why"), ONE_WORD, ids=[repr(u)[:40] for u, _ in ONE_WORD])
def test_a_seed_no_crawl_can_use_is_a_400_page_naming_it(client: TestClient, url: str, why: str) -> None:
    """http://[::1/ was a 500 (ValueError out of urlsplit); every hostile URL is a 400 page with
    the CLI's message, the input escaped (the answer repeats it)."""
    csrf = _sign_in(client)
    refused = client.post("/admin/seed", data={"urls": f"http://fine.test/ {url}", "csrf": csrf})
    assert refused.status_code == 400
    assert refused.headers["content-type"] == HTML
    assert "bad seed" in refused.text and why in refused.text and "<b>" not in refused.text


def test_refusals_are_escaped_pages_not_bare_text(client: TestClient) -> None:
    csrf = _sign_in(client)
    refused = client.post("/admin/block", data={"hosts": "<script>x</script>", "csrf": csrf})
    assert refused.status_code == 400 and refused.headers["content-type"] == HTML
    assert "<script>x" not in refused.text and "&lt;script&gt;x" in refused.text
    assert 'href="/admin"' in refused.text  # the way back
    forbidden = client.post("/admin/command", data={"action": "pause"})  # no CSRF token
    assert forbidden.status_code == 403 and forbidden.headers["content-type"] == HTML


def test_signing_out_needs_the_csrf_token(client: TestClient) -> None:
    """Another site could end the operator's session with a bare POST /admin/logout."""
    csrf = _sign_in(client)
    forged = client.post("/admin/logout", follow_redirects=False)
    assert forged.status_code == 403
    assert client.get("/admin").status_code == 200  # still signed in
    done = client.post("/admin/logout", data={"csrf": csrf}, follow_redirects=False)
    assert done.status_code == 303
    assert client.get("/admin").status_code == 401


def test_a_seed_form_over_the_limit_is_a_413_saying_how_to_seed_more(client: TestClient) -> None:
    """It was a 403 "sign in" (the too-large form was read as empty, without its CSRF token)."""
    csrf = _sign_in(client)
    urls = "\n".join(f"http://a.test/{i:06d}" for i in range(4000))  # ~84 KB
    refused = client.post("/admin/seed", data={"urls": urls, "csrf": csrf})
    assert refused.status_code == 413 and refused.headers["content-type"] == HTML
    assert "64 KB" in refused.text and "nimbus crawl seed --file" in refused.text


def test_a_block_reason_is_limited_at_input_and_long_words_wrap(client: TestClient, sessions) -> None:
    """A 60,000-character reason made the dashboard 378,000 px wide."""
    csrf = _sign_in(client)
    huge = client.post("/admin/block", data={"hosts": "a.test", "reason": "x" * 60_000, "csrf": csrf})
    assert huge.status_code == 400 and "keep it to 500" in huge.text
    with sessions() as session:
        assert not heartbeat.control(session).blocked
    word = "y" * 500  # the longest reason taken, one word: the table must wrap it
    ok = client.post(
        "/admin/block", data={"hosts": "a.test", "reason": word, "csrf": csrf}, follow_redirects=False
    )
    assert ok.status_code == 303 and word in client.get("/admin").text
    css = client.get("/static/style.css").text
    assert re.search(r"\.admin td[^{]*\{[^}]*overflow-wrap:\s*anywhere", css)


def test_the_session_cookie_is_secure_behind_the_proxys_https_only(admin_settings: Settings) -> None:
    """X-Forwarded-Proto is believed from the configured proxies (NIMBUS_PROXY_CIDRS) alone."""
    app = create_app(admin_settings.with_overrides(proxy_cidrs="10.40.0.0/20"), recheck_seconds=0)
    https = {"X-Forwarded-Proto": "https"}
    for peer, secure in (("10.40.3.7", True), ("203.0.113.5", False)):
        with TestClient(app, client=(peer, 4000)) as c:
            signed = c.post("/admin/login", data={"token": TOKEN}, headers=https, follow_redirects=False)
            assert signed.status_code == 303
            assert ("secure" in signed.headers["set-cookie"].lower()) is secure, peer


def test_bad_proxy_cidrs_are_a_settings_error_naming_the_variable() -> None:
    from services.config import SettingsError

    with pytest.raises(SettingsError, match="NIMBUS_PROXY_CIDRS.*10.40.0.0/20,10.40.16.0/20"):
        Settings.from_env({"NIMBUS_PROXY_CIDRS": "10.40.0.0/20,alb"})
    assert Settings.from_env({"NIMBUS_PROXY_CIDRS": "10.40.0.0/20"}).search.proxy_cidrs == "10.40.0.0/20"


def test_a_nodes_http_errors_are_shown_by_class_beside_its_failed_fetches(admin_settings, sessions):
    """1,926 answers of 404 are not "errors 0": the row counts them by class beside the
    fetches that failed; an empty frontier and busiest-hosts table say "None yet"."""
    now = time.time()
    counters = {"pages": 2050, "errors": 0, "errors_http_404": 1926, "errors_http_403": 4}
    counters |= {"errors_http_503": 2, "errors_timeout": 1}
    with sessions.begin() as session:
        heartbeat.beat(session, heartbeat.Beat("demo/all/1", "crawler", now - 20, now, "stopped", counters))
    with TestClient(create_app(admin_settings, recheck_seconds=0)) as client:
        _sign_in(client)
        page = client.get("/admin").text
    row = re.search(r'<tr class="stopped">(.*?)</tr>', page, re.S).group(1)
    cells = [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
    header = re.search(r'<table id="nodes".*?<thead>(.*?)</thead>', page, re.S).group(1)
    names = [re.sub(r"<[^>]+>", "", h).strip() for h in re.findall(r"<th>(.*?)</th>", header, re.S)]
    shown = dict(zip(names, cells, strict=True))
    assert (shown["HTTP 4xx"], shown["HTTP 5xx"], shown["failed fetches"]) == ("1930", "2", "0")
    assert "http_404 1926" in shown["errors by kind"]
    hosts = re.search(r'<table id="hosts".*?</table>', page, re.S).group(0)
    assert "None yet" in hosts and "None yet: the frontier is empty" in page
