"""robots.txt policy: RFC 9309's status table, Protego rules, capped Crawl-delay."""

from __future__ import annotations

from services.crawler.web.fetch_result import FetchResult
from services.crawler.web.robots import ROBOTS_TTL, UNAVAILABLE_TTL, effective_delay, rules_from_fetch

UA = "NimbusBot/0.1 (+https://example.invalid)"
ROBOTS = b"""User-agent: *
Disallow: /private/
Crawl-delay: 2

User-agent: NimbusBot
Disallow: /no-nimbus/
Crawl-delay: 120
"""


def _robots(status: int | None, body: bytes = b"", error: str | None = None) -> FetchResult:
    return FetchResult(
        url="http://h.test/robots.txt",
        final_url="http://h.test/robots.txt",
        status=status,
        body=body,
        error=error,
    )


def test_rules_for_our_user_agent_group_win() -> None:
    rules = rules_from_fetch(_robots(200, ROBOTS), now=100.0)
    assert not rules.allowed("http://h.test/no-nimbus/page", UA)
    assert rules.allowed("http://h.test/private/page", UA)  # only the generic group forbids it
    assert not rules.allowed("http://h.test/private/page", "OtherBot/1.0")
    assert rules.crawl_delay(UA) == 120.0
    assert rules.fetched_at == 100.0 and rules.ttl == ROBOTS_TTL


def test_missing_robots_allows_everything() -> None:
    for status in (401, 403, 404, 410):
        rules = rules_from_fetch(_robots(status), now=0.0)
        assert rules.allowed("http://h.test/anything", UA) and not rules.unavailable


def test_server_error_or_no_answer_disallows_and_is_retried_sooner() -> None:
    for fetched in (_robots(503), _robots(429), _robots(None, error="connect")):
        rules = rules_from_fetch(fetched, now=0.0)
        assert rules.unavailable
        assert not rules.allowed("http://h.test/", UA)
        assert rules.ttl == UNAVAILABLE_TTL < ROBOTS_TTL


def test_oversized_robots_is_parsed_up_to_the_cap() -> None:
    rules = rules_from_fetch(_robots(200, b"User-agent: *\nDisallow: /a\n", error="too_large"), 0.0)
    assert not rules.allowed("http://h.test/a", UA)


def test_crawl_delay_is_the_larger_of_ours_and_the_sites_capped() -> None:
    rules = rules_from_fetch(_robots(200, ROBOTS), now=0.0)
    assert effective_delay(rules, UA, base=1.0, cap=30.0) == (30.0, True)
    assert effective_delay(rules, "OtherBot", base=1.0, cap=30.0) == (2.0, False)
    assert effective_delay(rules, "OtherBot", base=5.0, cap=30.0) == (5.0, False)
    no_robots = rules_from_fetch(_robots(404), now=0.0)
    assert effective_delay(no_robots, UA, base=1.0, cap=30.0) == (1.0, False)


def test_a_request_rate_is_a_delay_too() -> None:
    """``Request-rate: 1/10s`` (one request per ten seconds), the older extension some sites
    write instead of Crawl-delay; with both, the slower wins."""
    rate_only = rules_from_fetch(_robots(200, b"User-agent: *\nRequest-rate: 1/10s\n"), now=0.0)
    assert effective_delay(rate_only, UA, base=1.0, cap=30.0) == (10.0, False)
    per_minute = rules_from_fetch(_robots(200, b"User-agent: *\nRequest-rate: 3/1m\n"), now=0.0)
    assert per_minute.crawl_delay(UA) == 20.0
    both = rules_from_fetch(_robots(200, b"User-agent: *\nCrawl-delay: 2\nRequest-rate: 1/5s\n"), now=0.0)
    assert both.crawl_delay(UA) == 5.0
    assert rules_from_fetch(_robots(200, ROBOTS), now=0.0).crawl_delay("OtherBot") == 2.0


def test_sitemap_lines_are_exposed() -> None:
    rules = rules_from_fetch(_robots(200, ROBOTS + b"Sitemap: http://h.test/s.xml\nsitemap: /rel.xml\n"), 0.0)
    assert rules.sitemaps == ["http://h.test/s.xml", "/rel.xml"]
    assert rules_from_fetch(_robots(404), 0.0).sitemaps == []


def test_garbage_robots_txt_allows_everything_and_says_so() -> None:
    for junk in (
        b"\x00\xff\xfe\x80 binary noise \x01" * 40,
        b"<html><body><h1>Welcome!</h1></body></html>",
        "\ufeffno directives at all".encode(),
    ):
        rules = rules_from_fetch(_robots(200, junk), 0.0)
        assert rules.garbage and not rules.unavailable
        assert rules.allowed("http://h.test/anything", UA) and rules.crawl_delay(UA) is None
    assert not rules_from_fetch(_robots(200, ROBOTS), 0.0).garbage
    assert not rules_from_fetch(_robots(200, b""), 0.0).garbage  # empty: a plain "allow all"
    # Directives without their colons are not garbage: Protego reads them as intended.
    lax = rules_from_fetch(_robots(200, b"User-agent *\nDisallow /\n"), 0.0)
    assert not lax.allowed("http://h.test/x", UA) and not lax.garbage


def test_robots_cut_off_mid_body_counts_as_unreachable() -> None:
    for error in ("closed", "timeout", "http", "decode"):
        rules = rules_from_fetch(_robots(200, b"User-agent: *\nDisallow: /a", error=error), 0.0)
        assert rules.unavailable and not rules.allowed("http://h.test/b", UA), error


def test_two_processes_storing_one_hosts_robots_do_not_fail(tmp_path) -> None:
    """The loser of the insert race updates the winner's row (seen with two crawler processes)."""
    from sqlalchemy.orm import Session

    from services.crawler.web.robots import RobotsCache
    from services.storage.sql.engines import make_engine, session_factory
    from services.storage.sql.models import Host
    from services.storage.sql.schema import init_db

    engine = make_engine(f"sqlite:///{tmp_path}/race.db")
    init_db(engine)
    sessions = session_factory(engine)
    cache = RobotsCache(sessions, "NimbusBot")
    host = "http://a.test"
    rules = rules_from_fetch(
        FetchResult(
            url=f"{host}/robots.txt",
            final_url=f"{host}/robots.txt",
            status=200,
            body=b"User-agent: *\nDisallow: /x\n",
        ),
        1000.0,
    )
    real_get, calls = Session.get, []

    def racing_get(self, entity, ident, **kwargs):
        if entity is Host and not calls:  # first look: the other process inserts meanwhile
            calls.append(ident)
            with sessions.begin() as other:
                other.add(Host(host=host, next_fetch_at=0.0, pages=0))
            return None
        return real_get(self, entity, ident, **kwargs)

    Session.get = racing_get
    try:
        cache._store(host, rules)
    finally:
        Session.get = real_get
    with sessions() as session:
        row = session.get(Host, host)
        assert row.robots_status == 200 and "Disallow: /x" in row.robots_txt
    assert calls == [host]
