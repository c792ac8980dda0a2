"""Crawl scheduling against loopback servers: priorities, partitions, caps, retries,
redirect chains, languages, duplicate content and recrawls."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import select

from services.admin import operations
from services.config import Settings
from services.crawler.crawl import run_crawl
from services.crawler.frontier import entries, leases
from services.crawler.frontier.entries import NewUrl, partition_of
from services.crawler.web.robots import ROBOTS_TTL
from services.indexing.build import build_index
from services.indexing.incremental import update_index
from services.search.service import SearchService
from services.storage.blobs.blobstore import open_blobstore
from services.storage.formats.records import decode_record
from services.storage.sql.counters import read_counters
from services.storage.sql.engines import make_engine, session_factory
from services.storage.sql.models import Document, DuplicateUrl, FrontierEntry
from services.storage.sql.schema import init_db
from services.text.urls import url_id
from tests.integration.crawler.loopback_http import QuietHandler
from tests.integration.crawler.loopback_http import serve as serve_http

REPO = Path(__file__).resolve().parents[3]
Page = tuple[int, dict[str, str], bytes]  # status, headers, body
Route = Callable[[str, int], Page]  # (path, how many times it was asked before) -> page


class ShiftedClock:
    """Wall time plus an offset the test advances: the crawler's stored times (leases, recrawl
    due dates) move on without the test sleeping through them."""

    def __init__(self) -> None:
        self.offset = 0.0

    def advance(self, seconds: float) -> None:
        self.offset += seconds

    def __call__(self) -> float:
        return time.time() + self.offset


def html(title: str, body: str, lang: str = "en") -> Page:
    page = f"<!doctype html><html lang={lang}><head><title>{title}</title></head><body>{body}</body></html>"
    return 200, {"Content-Type": "text/html; charset=utf-8"}, page.encode()


ENGLISH = "<p>The quick brown fox jumps over the lazy dog near the quiet river bank today.</p>"


class Server:
    """A loopback server that logs (path, user agent) of every GET and answers through ``route``."""

    def __init__(self, route: Route) -> None:
        self.route = route
        self.robots = b"User-agent: *\nAllow: /\n"
        self.log: list[tuple[str, str]] = []
        self.lock = threading.Lock()
        server = self

        class Handler(QuietHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                with server.lock:
                    seen = sum(1 for p, _ in server.log if p == self.path)
                    server.log.append((self.path, self.headers.get("User-Agent", "")))
                if self.path == "/robots.txt":
                    status, headers, body = 200, {"Content-Type": "text/plain"}, server.robots
                else:
                    status, headers, body = server.route(self.path, seen)
                self.send_response(status)
                for key, value in {"Content-Length": str(len(body)), **headers}.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(body)

        self.httpd, self.base = serve_http(Handler)

    def pages(self) -> list[str]:
        with self.lock:
            return [p for p, _ in self.log if p not in ("/robots.txt", "/sitemap.xml")]

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def serve() -> Iterator[Callable[[Route], Server]]:
    servers: list[Server] = []

    def start(route: Route) -> Server:
        servers.append(Server(route))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def not_found(_path: str, _seen: int) -> Page:
    return 404, {"Content-Type": "text/html"}, b"gone"


def _db(settings: Settings):
    engine = make_engine(settings.database_url)
    init_db(engine)
    return session_factory(engine)


def _docs(settings: Settings) -> dict[str, Document]:
    with _db(settings)() as session:
        return {d.url: d for d in session.scalars(select(Document))}


def test_hub_children_and_well_linked_urls_are_leased_first(settings: Settings) -> None:
    sessions = _db(settings)
    hub = [NewUrl(f"http://h.test/{i}", 2, entries.hub_priority(20), "hub") for i in range(3)]
    leaf = [NewUrl(f"http://l.test/{i}", 1, entries.hub_priority(2), "leaf") for i in range(3)]
    with sessions.begin() as session:
        entries.add_urls(session, leaf + hub, 1.0)
        # Three more pages link to l.test/2: in-links lift it above the hub's children.
        entries.add_urls(session, [NewUrl("http://l.test/2", 1, 0.0, f"p{i}") for i in range(4)], 1.0)
    with sessions.begin() as session:
        lease = leases.lease_batch(session, limit=10, now=2.0, lease_seconds=60, max_depth=5)
    order = [e.url for e in lease.entries]
    assert order[0] == "http://l.test/2"  # 1.58 + 4 in-links
    assert set(order[1:4]) == {f"http://h.test/{i}" for i in range(3)}  # log2(21) = 4.39
    assert set(order[4:]) == {"http://l.test/0", "http://l.test/1"}  # log2(3) = 1.58
    with sessions() as session:
        assert session.get(FrontierEntry, url_id("http://l.test/2")).inlinks == 4


def test_crawl_fetches_the_hub_pages_children_before_the_leaf_pages(settings: Settings, serve) -> None:
    def route(path: str, _seen: int) -> Page:
        if path == "/":
            return html("Seed", ENGLISH + '<a href="/leaf">leaf</a> <a href="/hub">hub</a>')
        if path == "/hub":
            return html("Hub", ENGLISH + "".join(f'<a href="/h{i}">h</a>' for i in range(12)))
        if path == "/leaf":
            return html("Leaf", ENGLISH + '<a href="/l0">l</a>')
        return html(path, ENGLISH)

    site = serve(route)
    one_by_one = settings.with_overrides(batch_size=1, concurrency=1, sitemaps=False)
    # First the seed and its two links, so that both pages' links wait in the frontier together.
    run_crawl(one_by_one, [site.base + "/"], max_pages=3, progress=False)
    assert sorted(site.pages()[1:]) == ["/hub", "/leaf"]
    run_crawl(one_by_one, [site.base + "/"], progress=False)
    rest = site.pages()[3:]
    assert len(rest) == 13 and all(p.startswith("/h") for p in rest[:12]) and rest[12] == "/l0"


def test_two_crawler_processes_take_disjoint_hosts(settings: Settings, serve, tmp_path: Path) -> None:
    sites = [
        serve(
            lambda p, _s, n=n: html(
                f"{n}{p}", ENGLISH + "".join(f'<a href="/{n}-{i}">x</a>' for i in range(6))
            )
        )
        for n in range(4)
    ]
    parts = {s.base: partition_of(s.base, settings.crawl.partitions) for s in sites}
    if len(set(parts.values())) < 2:
        pytest.skip("all four ports hashed into one partition; rerun picks other ports")
    first = sorted(set(parts.values()))[0]
    mine = [str(first)]
    rest = ",".join(str(p) for p in range(settings.crawl.partitions) if p != first)
    env = {
        **os.environ,
        "NIMBUS_DATABASE_URL": settings.database_url,
        "NIMBUS_BLOB_URL": settings.blob_url,
        "NIMBUS_VAR_DIR": str(tmp_path / "var"),
        "NIMBUS_CRAWL_DELAY": "0",
        "NIMBUS_ALLOWED_HOSTS": "127.0.0.1",
        "NIMBUS_SITEMAPS": "0",
        "NIMBUS_SOFT404_PROBE": "0",  # the test counts every request
    }
    seeds = [s.base + "/" for s in sites]
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "services.cli", "crawl", *seeds, "--quiet"],
            env={**env, "NIMBUS_PARTITION_IDS": ids, "NIMBUS_USER_AGENT": f"Bot{n}"},
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        for n, ids in enumerate([mine[0], rest])
    ]
    for proc in procs:
        out, _ = proc.communicate(timeout=120)
        assert proc.returncode == 0, out.decode()
    for site in sites:
        agents = {agent for path, agent in site.log if path != "/robots.txt"}
        assert agents == {"Bot0" if parts[site.base] == first else "Bot1"}, (site.base, agents)
    assert len(_docs(settings)) == 4 * 7


def test_per_host_page_cap_ends_a_calendar_trap(settings: Settings, serve) -> None:
    def calendar(path: str, _seen: int) -> Page:
        day = int(path.rsplit("/", 1)[-1] or 0) if path.startswith("/day/") else 0
        return html(f"Day {day}", ENGLISH + f'<a href="/day/{day + 1}">next day</a>')

    site = serve(calendar)
    stats = run_crawl(
        settings.with_overrides(max_pages_per_host=5, sitemaps=False),
        [site.base + "/day/0"],
        max_depth=1000,
        progress=False,
    )
    assert site.pages() == [f"/day/{i}" for i in range(5)]
    assert stats.pages == 5 and stats.counters["host_page_cap_links"] == 1  # /day/5 never queued
    # The cap holds across runs: the host's page count is kept in the database.
    again = run_crawl(
        settings.with_overrides(max_pages_per_host=5, sitemaps=False),
        [site.base + "/day/100"],
        max_depth=1000,
        progress=False,
    )
    assert again.pages == 0 and again.counters["host_page_cap"] == 1
    assert len(site.pages()) == 5


def test_retries_honour_backoff_then_succeed_or_give_up(settings: Settings, serve) -> None:
    def flaky(path: str, seen: int) -> Page:
        if path == "/":
            return html("Home", ENGLISH + '<a href="/flaky">f</a> <a href="/down">d</a>')
        if path == "/flaky" and seen >= 2:
            return html("Flaky", ENGLISH)
        return 503, {"Content-Type": "text/html", "Retry-After": "0"}, b"busy"

    site = serve(flaky)
    fast = settings.with_overrides(retry_backoff=0.05, max_attempts=3, sitemaps=False, max_crawl_delay=0.2)
    stats = run_crawl(fast, [site.base + "/"], progress=False)
    assert site.pages().count("/flaky") == 3 and site.pages().count("/down") == 3
    assert stats.counters["retry"] == 4 and stats.counters["gave_up"] == 1
    assert set(_docs(settings)) == {site.base + "/", site.base + "/flaky"}
    with _db(settings)() as session:
        down = session.get(FrontierEntry, url_id(site.base + "/down"))
    assert (down.state, down.attempts, down.last_status) == ("failed", 3, 503)


def test_redirects_become_entries_and_long_chains_stop(settings: Settings, serve) -> None:
    def chain(path: str, _seen: int) -> Page:
        if path == "/":
            return html("Home", ENGLISH + '<a href="/r/0">chain</a> <a href="/loop/a">loop</a>')
        if path.startswith("/r/"):
            n = int(path[3:])
            return 302, {"Location": f"/r/{n + 1}", "Content-Type": "text/html"}, b""
        if path == "/loop/a":
            return 301, {"Location": "/loop/b", "Content-Type": "text/html"}, b""
        if path == "/loop/b":
            return 301, {"Location": "/loop/a", "Content-Type": "text/html"}, b""
        return not_found(path, _seen)

    site = serve(chain)
    stats = run_crawl(
        settings.with_overrides(max_redirects=3, sitemaps=False), [site.base + "/"], progress=False
    )
    pages = site.pages()
    assert [p for p in pages if p.startswith("/r/")] == ["/r/0", "/r/1", "/r/2", "/r/3"]
    assert sorted(p for p in pages if p.startswith("/loop/")) == ["/loop/a", "/loop/b"]  # once each
    assert stats.counters["redirect_limit"] == 1
    with _db(settings)() as session:
        hop = session.get(FrontierEntry, url_id(site.base + "/r/2"))
    assert (hop.hops, hop.discovered_from, hop.depth) == (2, url_id(site.base + "/r/1"), 1)


def test_other_languages_are_followed_not_stored(settings: Settings, serve) -> None:
    german = (
        "<p>Der schnelle braune Fuchs springt über den faulen Hund und läuft dann weiter "
        "in den dunklen Wald hinein, wo niemand ihn mehr sehen kann.</p>"
    )

    def route(path: str, _seen: int) -> Page:
        if path == "/":
            return html("Startseite", german + '<a href="/en">english</a>', lang="de")
        return html("English", ENGLISH)

    site = serve(route)
    stats = run_crawl(settings.with_overrides(sitemaps=False), [site.base + "/"], progress=False)
    assert site.pages() == ["/", "/en"]
    assert set(_docs(settings)) == {site.base + "/en"}
    assert stats.counters["language_skipped"] == 1
    site.log.clear()
    everything = settings.with_overrides(languages="", database_url=settings.database_url + "-all")
    run_crawl(everything, [site.base + "/"], progress=False)
    assert {d.lang for d in _docs(everything).values()} == {"de", "en"}


def test_duplicate_content_is_stored_once_with_its_other_urls(settings: Settings, serve) -> None:
    same = html("Same", ENGLISH)

    def route(path: str, _seen: int) -> Page:
        if path == "/":
            return html("Home", ENGLISH + '<a href="/a">a</a> <a href="/b">b</a> <a href="/c">c</a>')
        return same

    site = serve(route)
    stats = run_crawl(
        settings.with_overrides(sitemaps=False, batch_size=2), [site.base + "/"], progress=False
    )
    docs = _docs(settings)
    copies = [u for u in docs if u != site.base + "/"]
    assert len(copies) == 1 and stats.counters["duplicate_content"] == 2
    with _db(settings)() as session:
        dups = list(session.scalars(select(DuplicateUrl)))
    assert {d.url for d in dups} | set(copies) == {site.base + p for p in ("/a", "/b", "/c")}
    assert {d.doc_num for d in dups} == {docs[copies[0]].doc_num}


def test_recrawl_keeps_the_doc_number_and_adapts_the_interval(settings: Settings, serve) -> None:
    version = {"n": 1}

    def route(path: str, _seen: int) -> Page:
        if path == "/changing":
            return html("Changing", ENGLISH + f"<p>version {version['n']}</p>")
        return html("Steady", ENGLISH + '<a href="/changing">c</a>')

    site = serve(route)
    # Intervals of seconds, not days, on a clock the test moves: wide enough that a page
    # recrawled in the second run does not come due again before that run ends.
    quick = settings.with_overrides(sitemaps=False, recrawl_min_interval=2.0, recrawl_max_interval=8.0)
    clock = ShiftedClock()
    run_crawl(quick, [site.base + "/"], progress=False, clock=clock)
    first = _docs(quick)
    with _db(quick)() as session:
        interval = session.get(FrontierEntry, url_id(site.base + "/")).recrawl_interval
    assert interval == pytest.approx(4.0)  # sqrt(min * max) for a first visit
    version["n"] = 2
    stats = run_crawl(quick, [site.base + "/"], progress=False, clock=clock)
    assert stats.pages == 0  # nothing is due yet: the interval has not passed
    clock.advance(4.1)
    stats = run_crawl(quick, [site.base + "/"], progress=False, clock=clock)
    assert stats.pages == 2 and stats.counters["recrawl_unchanged"] == 1
    assert stats.counters["recrawl_changed"] == 1
    docs = _docs(quick)
    steady, changing = docs[site.base + "/"], docs[site.base + "/changing"]
    assert (steady.doc_num, steady.unchanged, steady.versions) == (first[site.base + "/"].doc_num, 1, 1)
    assert (changing.doc_num, changing.versions) == (first[site.base + "/changing"].doc_num, 2)
    blobs = open_blobstore(quick.blob_url)
    record = decode_record(
        blobs.get(
            changing.record_block, changing.record_offset, changing.record_offset + changing.record_length
        )
    )
    assert "version 2" in record.text and record.doc_num == changing.doc_num
    with _db(quick)() as session:
        rows = {r.url: r for r in session.scalars(select(FrontierEntry))}
        assert read_counters(session)["documents"] == 2  # recrawls add no documents
    assert rows[site.base + "/"].recrawl_interval == pytest.approx(8.0)  # unchanged: doubled
    assert rows[site.base + "/changing"].recrawl_interval == pytest.approx(2.0)  # changed: halved


def test_a_page_a_recrawl_finds_gone_or_noindex_leaves_the_index_until_it_returns(
    settings: Settings, serve
) -> None:
    """A stored page whose recrawl answers 404 or 410, is now noindex, or that robots.txt now
    disallows (Nutch's ROBOTS_DENIED is gone too) is marked removed and left out by the next
    update and build (its row and doc_num stay); fetched as a page again, it is back. A server
    error is not gone: that page stays."""
    state = {"gone": False}

    def route(path: str, _seen: int) -> Page:
        if path == "/":
            pages = ("lost", "retired", "hidden", "flaky", "private")
            links = "".join(f'<a href="/{p}">{p}</a> ' for p in pages)
            return html("Home", ENGLISH + links)
        if state["gone"] and path == "/lost":
            return 404, {"Content-Type": "text/html"}, b"not here"
        if state["gone"] and path == "/retired":
            return 410, {"Content-Type": "text/html"}, b"gone for good"
        if state["gone"] and path == "/flaky":
            return 503, {"Content-Type": "text/html"}, b"try later"
        robots = '<meta name="robots" content="noindex">' if state["gone"] and path == "/hidden" else ""
        word = {
            "/lost": "marigold",
            "/retired": "tamarind",
            "/hidden": "juniper",
            "/flaky": "saffron",
            "/private": "cardamom",
        }[path]
        return html(path.strip("/"), f"{robots}{ENGLISH}<p>{word} {word}</p>")

    site = serve(route)
    quick = settings.with_overrides(
        sitemaps=False, recrawl_min_interval=2.0, recrawl_max_interval=8.0, retry_backoff=0.0, max_attempts=1
    )
    clock = ShiftedClock()

    def found(word: str) -> list[str]:
        return [hit.url for hit in SearchService(quick, recheck_seconds=0.0).search(word).hits]

    run_crawl(quick, [site.base + "/"], progress=False, clock=clock)
    build_index(quick, progress=False)
    words = {
        "marigold": "/lost",
        "tamarind": "/retired",
        "juniper": "/hidden",
        "saffron": "/flaky",
        "cardamom": "/private",
    }
    assert {w: found(w) for w in words} == {w: [site.base + p] for w, p in words.items()}

    state["gone"] = True
    site.robots = b"User-agent: *\nDisallow: /private\n"
    clock.advance(ROBOTS_TTL + 4.1)  # the crawler keeps a robots.txt a day (RFC 9309)
    stats = run_crawl(quick, [site.base + "/"], progress=False, clock=clock)
    assert stats.counters["documents_removed"] == 4 and stats.counters["robots_denied"] == 1
    docs = _docs(quick)
    assert {url for url, d in docs.items() if d.removed_at is not None} == {
        site.base + p for p in ("/lost", "/retired", "/hidden", "/private")
    }
    update_index(quick, progress=False)
    assert {w: found(w) for w in words} == {
        "marigold": [],
        "tamarind": [],
        "juniper": [],
        "saffron": [site.base + "/flaky"],  # a 503 says nothing about the page
        "cardamom": [],
    }
    build_index(quick, progress=False)  # a full build leaves them out too
    assert found("marigold") == [] and found("juniper") == []

    state["gone"] = False
    site.robots = b"User-agent: *\nAllow: /\n"
    clock.advance(ROBOTS_TTL + 8.1)
    stats = run_crawl(quick, [site.base + "/"], progress=False, clock=clock)
    assert stats.counters["documents_restored"] >= 1
    update_index(quick, progress=False)
    assert found("marigold") == [site.base + "/lost"]
    assert _docs(quick)[site.base + "/lost"].doc_num == docs[site.base + "/lost"].doc_num


def test_a_purged_hosts_pages_leave_the_index_and_come_back_only_with_a_good_recrawl(
    settings: Settings, serve
) -> None:
    """``nimbus crawl block --purge``: the blocked host's stored pages are marked removed (rows,
    doc numbers and history kept) and the next update leaves them out, with no crawl commit
    in between; unblocking does not bring them back, a recrawl that fetches a page does."""
    words = {"/lost": "marigold", "/kept": "juniper"}

    def route(path: str, _seen: int) -> Page:
        if path == "/":
            return html("Home", ENGLISH + '<a href="/lost">lost</a> <a href="/kept">kept</a>')
        return html(path.strip("/"), f"{ENGLISH}<p>{words[path]} {words[path]}</p>")

    site = serve(route)
    quick = settings.with_overrides(sitemaps=False, recrawl_min_interval=2.0, recrawl_max_interval=8.0)
    clock = ShiftedClock()

    def found(word: str) -> list[str]:
        return [hit.url for hit in SearchService(quick, recheck_seconds=0.0).search(word).hits]

    run_crawl(quick, [site.base + "/"], progress=False, clock=clock)
    build_index(quick, progress=False)
    assert found("marigold") == [site.base + "/lost"]
    first = _docs(quick)

    with _db(quick).begin() as session:
        done = operations.block(session, operations.host_names([site.base]), "", clock(), purge=True)
    assert done.purged == {"127.0.0.1": 3}
    docs = _docs(quick)
    assert all(d.removed_at is not None for d in docs.values())
    assert {u: (d.doc_num, d.versions) for u, d in docs.items()} == {
        u: (d.doc_num, d.versions) for u, d in first.items()
    }
    update = update_index(quick, progress=False)
    assert update.version_id is not None
    assert found("marigold") == [] and found("juniper") == [] and found("fox") == []

    with _db(quick).begin() as session:
        operations.unblock(session, ["127.0.0.1"])
    assert update_index(quick, progress=False).version_id is None  # unblocking changes no page
    assert found("marigold") == []

    clock.advance(8.1)  # the pages are due again: fetched good, they are back
    stats = run_crawl(quick, [site.base + "/"], progress=False, clock=clock)
    assert stats.counters["documents_restored"] == 3
    update_index(quick, progress=False)
    assert found("marigold") == [site.base + "/lost"] and found("juniper") == [site.base + "/kept"]
    assert _docs(quick)[site.base + "/lost"].doc_num == first[site.base + "/lost"].doc_num
    with _db(quick)() as session:
        assert read_counters(session)["documents_purged"] == 3
