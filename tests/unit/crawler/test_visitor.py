"""One URL's visit (visit.Visitor) through a VisitContext around a scripted web and a clock.

Every request of a visit goes through ``VisitContext.fetch``: here a ``ScriptedWeb`` that
answers from a table (robots.txt included) and records what was asked, so a test sees both
what the visitor decided and which requests it made. The database is SQLite in the test's
directory (robots.txt cache, per-host page counts); nothing leaves the machine, and no test
waits (the politeness delay is 0 and each test visits a host once after an error).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest

from services.config import Settings
from services.crawler.commit.results import UrlResult
from services.crawler.context import DatabaseThread, PageBudget, VisitContext
from services.crawler.frontier.entries import NewUrl, UrlState
from services.crawler.frontier.host_queues import HostScheduler
from services.crawler.frontier.leases import LeasedUrl
from services.crawler.outcome import backoff
from services.crawler.visit import Visitor
from services.crawler.web.fetch_errors import FetchError
from services.crawler.web.fetch_result import FetchResult
from services.text.urls import url_id

HOST = "http://a.test"
NOW = 1_800_000_000.0
JITTER = 0.5
ALLOW_ALL = "User-agent: *\nDisallow:\n"


class ScriptedWeb:
    """``web.fetch.fetch`` as a table: URL -> the answer (a fresh copy per request); anything
    else answers 404. ``asked`` lists every URL requested, in order."""

    def __init__(self) -> None:
        self.answers: dict[str, FetchResult] = {}
        self.asked: list[str] = []

    def robots(self, text: str, host: str = HOST) -> None:
        url = f"{host}/robots.txt"
        self.answers[url] = FetchResult(url, url, 200, "text/plain", text.encode())

    def page(self, path: str, html: str, **fields: Any) -> None:
        url = HOST + path
        body = f"<!doctype html><html><head><title>{path}</title></head><body>{html}</body></html>"
        self.answers[url] = FetchResult(url, url, 200, "text/html; charset=utf-8", body.encode(), **fields)

    def answer(self, path: str, **fields: Any) -> None:
        url = HOST + path
        self.answers[url] = FetchResult(url, url, **fields)

    async def __call__(self, session: object, url: str, *, max_bytes: int, **_: object) -> FetchResult:
        self.asked.append(url)
        answer = self.answers.get(url)
        return FetchResult(url, url, 404) if answer is None else dataclasses.replace(answer)


class Clock:
    """Wall time that moves only when a test says so."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class FixedRandom:
    def random(self) -> float:
        return JITTER


@dataclasses.dataclass
class Visit:
    """A visitor, its context and its scripted web, for one test."""

    visitor: Visitor
    ctx: VisitContext
    web: ScriptedWeb

    def run(self, path: str, *, depth: int = 0, hops: int = 0, attempts: int = 0) -> UrlResult:
        url = HOST + path
        entry = LeasedUrl(url_id(url), url, HOST, depth, priority=2.0, attempts=attempts, hops=hops)
        result = UrlResult(entry.url_id, entry.url, entry.depth, state=UrlState.DONE)
        asyncio.run(self.visitor.visit(HOST, entry, result))
        return result

    @property
    def queue(self) -> Any:
        return self.ctx.hosts.queue(HOST)


@pytest.fixture
def visiting(settings: Settings, sessions: Any) -> Iterator[Any]:
    """``visiting(**settings)``: a Visit on the test's settings (all hosts in scope, every
    language kept, no sitemaps, no HEAD) with those changed."""
    threads: list[DatabaseThread] = []

    def make(**changes: Any) -> Visit:
        base = {"allowed_hosts": "", "languages": "", "sitemaps": False, "head_first": False}
        web = ScriptedWeb()
        db = DatabaseThread(sessions)
        threads.append(db)
        ctx = VisitContext(
            settings=settings.with_overrides(**(base | changes)),
            http=None,  # never used: every request goes through ``fetch``
            hosts=HostScheduler(1, 30.0),
            slots=asyncio.Semaphore(4),
            budget=PageBudget(100),
            max_depth=3,
            db=db,
            clock=Clock(NOW),
            fetch=web,
        )
        visitor = Visitor(ctx)
        visitor.rng = FixedRandom()
        return Visit(visitor, ctx, web)

    yield make
    for db in threads:
        db.shutdown()


def test_a_url_robots_txt_disallows_is_never_requested(visiting) -> None:
    v = visiting()
    v.web.robots("User-agent: *\nDisallow: /private/\n")
    v.web.page("/private/x", "<p>secret</p>")
    result = v.run("/private/x")
    assert (result.state, result.error, result.doc) == (UrlState.DONE, "robots_denied", None)
    assert result.counters == {"robots_fetched": 1, "robots_denied": 1}
    assert v.web.asked == [HOST + "/robots.txt"]
    assert v.ctx.budget.spent == 0


def test_an_unreachable_robots_txt_fails_the_url_and_is_asked_again_later(visiting) -> None:
    v = visiting()
    v.web.answer("/robots.txt", status=503)
    result = v.run("/page")
    assert (result.state, result.error) == (UrlState.FAILED, "robots_unavailable")
    assert v.web.asked == [HOST + "/robots.txt"]
    v.ctx.clock.now += 601  # UNAVAILABLE_TTL: 10 minutes
    v.web.robots(ALLOW_ALL)
    v.web.page("/page", "<p>here now</p>")
    assert v.run("/page").doc is not None
    assert v.web.asked == [HOST + "/robots.txt", HOST + "/robots.txt", HOST + "/page"]


def test_a_page_is_parsed_and_its_links_queued(visiting) -> None:
    v = visiting(allowed_hosts="a.test")
    v.web.robots(ALLOW_ALL)
    v.web.page(
        "/", '<p>Welcome.</p><a href="/b">b</a> <a href="c">c</a> <a href="http://elsewhere.test/">x</a>'
    )
    result = v.run("/")
    assert result.state == UrlState.DONE and result.error is None
    assert result.doc is not None and result.doc.url == HOST + "/" and result.doc.fetched_at == NOW
    assert result.doc.parsed.title == "/" and "Welcome." in result.doc.parsed.text
    assert [link.url for link in result.links] == [HOST + "/b", HOST + "/c"]
    assert result.counters["out_of_scope"] == 1 and result.counters["pages"] == 1
    assert result.counters["status_200"] == 1
    assert v.web.asked == [HOST + "/robots.txt", HOST + "/"]
    assert v.ctx.budget.spent == 1 and v.queue.pages == 1


def test_links_below_the_depth_limit_are_counted_not_queued(visiting) -> None:
    v = visiting()
    v.web.robots(ALLOW_ALL)
    v.web.page("/deep", '<a href="/b">b</a> <a href="/c">c</a>')
    result = v.run("/deep", depth=v.ctx.max_depth)
    assert result.doc is not None and result.links == []
    assert result.counters["depth_limit"] == 2


@pytest.mark.parametrize(
    ("answer", "via", "counter"),
    [
        ({"status": 301, "redirect_to": HOST + "/new"}, "redirect", "redirect"),
        ({"status": 200, "refresh": "0; url=/new"}, "meta refresh", "meta_refresh"),  # Refresh header
    ],
    ids=["3xx", "refresh-header"],
)
def test_a_redirect_becomes_the_next_hop_until_the_hop_limit(visiting, answer, via, counter) -> None:
    v = visiting()
    limit = v.ctx.settings.crawl.max_redirects
    v.web.robots(ALLOW_ALL)
    if answer["status"] == 200:
        v.web.page("/old", "<p>moved</p>", **{k: a for k, a in answer.items() if k != "status"})
    else:
        v.web.answer("/old", **answer)
    result = v.run("/old", depth=1, hops=limit - 1)
    assert (result.state, result.error, result.doc) == (UrlState.DONE, f"{via} to {HOST}/new", None)
    assert result.found == [NewUrl(HOST + "/new", 1, 2.0, url_id(HOST + "/old"), hops=limit)]
    assert result.counters[counter] == 1 and "redirect_limit" not in result.counters

    last = v.run("/old", depth=1, hops=limit)
    assert last.error == f"redirect chain longer than {limit} hops"
    assert last.found == [] and last.counters["redirect_limit"] == 1 and last.doc is None


def test_a_meta_refresh_in_the_page_is_a_hop_too(visiting) -> None:
    v = visiting()
    v.web.robots(ALLOW_ALL)
    v.web.page("/old", '<meta http-equiv="refresh" content="0; url=/new"><p>moved</p>')
    result = v.run("/old")
    assert result.error == f"meta refresh to {HOST}/new" and result.doc is None
    assert [(n.url, n.hops) for n in result.found] == [(HOST + "/new", 1)]


@pytest.mark.parametrize(
    ("answer", "error", "wait"),
    [
        ({"status": 503}, "http 503", None),
        ({"status": 429, "retry_after": 120.0}, "http 429", 120.0),
        ({"error": FetchError.TIMEOUT, "detail": "slow"}, "timeout: slow", None),
        ({"status": 200, "error": FetchError.CLOSED, "detail": "cut"}, "closed: cut", None),
    ],
    ids=["503", "429-retry-after", "timeout", "cut-body"],
)
def test_a_retryable_failure_comes_back_after_a_backoff_and_slows_the_host(
    visiting, answer, error, wait
) -> None:
    v = visiting()
    v.web.robots(ALLOW_ALL)
    v.web.answer("/flaky", **answer)
    result = v.run("/flaky", attempts=1)
    expected_wait = backoff(v.ctx.settings, 1, wait, JITTER)
    assert expected_wait == (wait if wait else 2.0 * 2 * 1.125)  # retry_backoff 2 s, second attempt
    assert (result.state, result.error, result.retry_at) == (UrlState.NEW, error, NOW + expected_wait)
    assert result.counters["retry"] == 1 and result.doc is None
    assert v.queue.penalty > 0  # the host's requests are spaced out more


def test_a_retryable_failure_is_given_up_after_max_attempts(visiting) -> None:
    v = visiting(max_attempts=3)
    v.web.robots(ALLOW_ALL)
    v.web.answer("/down", status=500)
    result = v.run("/down", attempts=2)
    assert (result.state, result.error, result.retry_at) == (
        UrlState.FAILED,
        "gave up after 3 attempts: http 500",
        None,
    )
    assert result.counters["gave_up"] == 1 and "retry" not in result.counters


@pytest.mark.parametrize("kind", [FetchError.DNS, FetchError.TLS, FetchError.HTTP])
def test_a_failure_that_will_not_recover_fails_the_url_at_once(visiting, kind) -> None:
    v = visiting()
    v.web.robots(ALLOW_ALL)
    v.web.answer("/gone", error=kind, detail="no")
    result = v.run("/gone")
    assert (result.state, result.error, result.retry_at) == (UrlState.FAILED, f"{kind}: no", None)
    assert result.counters == {
        "robots_fetched": 1,
        "pages": 1,
        "fetch_error": 1,
        f"fetch_error_{kind.value}": 1,
    }
    assert all(type(name) is str for name in result.counters)  # counters are named by the kind's value
    assert v.queue.penalty == 0


def test_a_host_at_its_page_cap_is_not_asked_and_links_to_it_are_dropped(visiting) -> None:
    v = visiting(max_pages_per_host=1)
    v.web.robots(ALLOW_ALL)
    v.web.page("/", '<a href="/b">b</a> <a href="http://other.test/">o</a>')
    first = v.run("/")
    assert first.doc is not None and v.queue.pages == 1
    assert [link.url for link in first.links] == ["http://other.test/"]
    assert first.counters["host_page_cap_links"] == 1  # /b: its host is at the cap now
    asked = list(v.web.asked)
    second = v.run("/b")
    assert (second.state, second.error, second.doc) == (UrlState.DONE, "host_page_cap", None)
    assert second.counters == {"host_page_cap": 1}
    assert v.web.asked == asked  # not even robots.txt again


@pytest.mark.parametrize(
    ("head", "robots_tag", "stored", "linked"),
    [
        ('<meta name="robots" content="noindex">', (), False, True),
        ('<meta name="robots" content="nofollow">', (), True, False),
        ("", ("noindex",), False, True),
        ("", ("nofollow",), True, False),
        ("", ("otherbot: noindex, nofollow",), True, True),  # addressed to another crawler
    ],
    ids=["meta-noindex", "meta-nofollow", "header-noindex", "header-nofollow", "header-other-bot"],
)
def test_noindex_leaves_the_page_unstored_and_nofollow_its_links_unfollowed(
    visiting, head, robots_tag, stored, linked
) -> None:
    v = visiting()
    v.web.robots(ALLOW_ALL)
    v.web.page("/p", f'{head}<p>Some text.</p><a href="/q">q</a>', robots_tag=robots_tag)
    result = v.run("/p")
    assert (result.doc is not None) == stored
    assert [link.url for link in result.links] == ([HOST + "/q"] if linked else [])
    assert result.counters["noindex"] == (0 if stored else 1)
    assert result.state == UrlState.DONE


def test_an_exhausted_page_budget_releases_the_url_unfetched(visiting) -> None:
    v = visiting()
    v.ctx.budget.spent = v.ctx.budget.limit
    result = v.run("/")
    assert (result.state, result.error, result.retry_at) == (UrlState.NEW, None, None)
    assert v.web.asked == []
