"""Fetching against real loopback servers: caps, types, redirects, retries, timeouts, sitemaps."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import socket
import threading
import time
import zlib
from collections.abc import Iterator
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import aiohttp
import aiohttp.abc
import pytest
from sqlalchemy import select

from services.config import Settings
from services.crawler.crawl import run_crawl
from services.crawler.web.client_session import Timeouts, make_session
from services.crawler.web.fetch import fetch
from services.crawler.web.fetch_result import FetchResult
from services.crawler.web.parse import accept_content_type
from services.crawler.web.robots import fetch_robots, rules_from_fetch
from services.crawler.web.sitemaps import SitemapResult, discover_sitemap_urls
from services.storage.sql.engines import make_engine, session_factory
from services.storage.sql.models import Document, FrontierEntry
from tests.integration.crawler import badweb
from tests.integration.crawler.badweb import BadWeb

BIG = b"<html><body>" + b"x" * 50_000 + b"</body></html>"


class _Server:
    """Routes by path; counts requests in flight to check politeness."""

    def __init__(self, robots_status: int = 200) -> None:
        self.robots_status = robots_status
        self.paths: list[str] = []
        self.user_agents: list[str] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.lock = threading.Lock()
        self.release = threading.Event()  # /slow answers only when the test is done with it
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                with server.lock:
                    server.user_agents.append(self.headers.get("User-Agent", ""))
                    server.paths.append(self.path)
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                self.counted = True
                try:
                    server.route(self)
                finally:
                    server.answered(self)

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                return

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def answered(self, h: BaseHTTPRequestHandler) -> None:
        """The request no longer counts as in flight (once)."""
        with self.lock:
            if getattr(h, "counted", False):
                h.counted = False  # type: ignore[attr-defined]
                self.in_flight -= 1

    def route(self, h: BaseHTTPRequestHandler) -> None:
        path = h.path
        if path == "/slow":  # slower than any client timeout: held until the server stops
            self.release.wait(timeout=30)
        if path == "/loop":
            h.send_response(302)
            h.send_header("Location", "/loop")
            h.end_headers()
            return
        if path.startswith("/page"):  # a chain of pages, each served slowly
            n = int(path[5:] or 0)
            time.sleep(0.05)
            links = "".join(f'<a href="/page{n * 3 + i}">p</a>' for i in (1, 2, 3) if n * 3 + i < 12)
            extra = '<a href="/big-chunked">big</a><a href="/image.png">img</a>' if n == 0 else ""
            body = f"<html><body><p>page {n}</p>{links}{extra}</body></html>"  # distinct: no duplicates
            return _send(h, 200, "text/html", body.encode())
        if path == "/big-chunked":  # no Content-Length: the cap must bite while streaming
            h.send_response(200)
            h.send_header("Content-Type", "text/html")
            h.end_headers()
            h.wfile.write(BIG[:10_001])  # all a crawler capped at 10,000 bytes reads
            # The client may hang up from here on and ask its next URL; this thread may
            # take a while to notice (a loaded machine), which is not a second request.
            self.answered(h)
            with contextlib.suppress(OSError):
                h.wfile.write(BIG[10_001:])
            h.close_connection = True
            return
        if path == "/big":
            return _send(h, 200, "text/html", BIG)
        if path == "/image.png":
            return _send(h, 200, "image/png", b"\x89PNG" + b"\0" * 100)
        if path == "/robots.txt":
            return _send(h, self.robots_status, "text/plain", b"User-agent: *\nAllow: /\n")
        _send(h, 404, "text/html", b"gone")

    def __enter__(self) -> _Server:
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


def _send(h: BaseHTTPRequestHandler, status: int, ctype: str, body: bytes) -> None:
    h.send_response(status)
    h.send_header("Content-Type", ctype)
    h.send_header("Content-Length", str(len(body)))
    h.end_headers()
    h.wfile.write(body)


@pytest.fixture
def server() -> Iterator[_Server]:
    with _Server() as s:
        yield s


def _get(url: str, max_bytes: int = 1_000_000, timeout: float = 5.0) -> FetchResult:
    async def go() -> FetchResult:
        async with make_session("TestBot/1.0", timeout, 4) as session:
            return await fetch(session, url, max_bytes=max_bytes, accept=accept_content_type)

    return asyncio.run(go())


def test_body_cap_applies_with_and_without_content_length(server: _Server) -> None:
    for path in ("/big", "/big-chunked"):
        result = _get(server.base + path, max_bytes=10_000)
        assert result.error == "too_large" and result.status == 200, path
        assert len(result.body) <= 10_000
    assert _get(server.base + "/big", max_bytes=len(BIG)).body == BIG
    assert server.user_agents[0] == "TestBot/1.0"


def test_unwanted_types_and_error_statuses_are_not_read(server: _Server) -> None:
    image = _get(server.base + "/image.png")
    assert (image.error, image.body) == ("wrong_type", b"")
    missing = _get(server.base + "/nothing")
    assert (missing.status, missing.error, missing.body, missing.ok) == (404, None, b"", False)


def test_failures_become_error_kinds(server: _Server) -> None:
    slow = _get(server.base + "/slow", timeout=0.3)
    assert (slow.error, slow.retryable) == ("timeout", True)
    loop = _get(server.base + "/loop")  # to itself: asked once more, then a bad redirect
    assert (loop.status, loop.error, loop.redirect_to) == (302, "bad_redirect", None)
    assert server.paths.count("/loop") == 2
    with ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler) as closed:
        port = closed.server_address[1]
    refused = _get(f"http://127.0.0.1:{port}/")
    assert refused.error == "connect" and refused.status is None and "127.0.0.1" in refused.detail
    assert refused.retryable


def test_crawl_sends_one_request_per_host_at_a_time(server: _Server, settings: Settings) -> None:
    stats = run_crawl(
        settings.with_overrides(concurrency=8, max_body_bytes=10_000),
        [server.base + "/page0"],
        progress=False,
    )
    assert server.max_in_flight == 1
    assert stats.pages == 14  # page0..page11, the big page and the image
    assert stats.counters["too_large"] == 1 and stats.counters["wrong_type"] == 1
    engine = make_engine(settings.database_url)
    with session_factory(engine)() as session:
        urls = set(session.scalars(select(Document.url)))
    engine.dispose()
    assert urls == {f"{server.base}/page{i}" for i in range(12)}


def test_failing_robots_txt_means_no_page_is_requested(settings: Settings) -> None:
    with _Server(robots_status=503) as down:
        stats = run_crawl(settings, [down.base + "/page0"], progress=False)
    assert down.paths == ["/robots.txt"]
    assert stats.pages == 0 and stats.errors == 1
    assert stats.counters["robots_unavailable"] == 1
    engine = make_engine(settings.database_url)
    with session_factory(engine)() as session:
        entry = session.scalars(select(FrontierEntry)).one()
    engine.dispose()
    assert (entry.state, entry.last_error) == ("failed", "robots_unavailable")


# --- Against the hostile server: redirects, retry advice, HEAD, timeouts, broken bodies ---


def _fetch(
    url: str, *, max_bytes: int = 1_000_000, head_first: bool = False, timeouts: Timeouts | None = None
) -> FetchResult:
    async def go() -> FetchResult:
        async with make_session("TestBot/1.0", 5.0, 4) as session:
            return await fetch(
                session,
                url,
                max_bytes=max_bytes,
                accept=accept_content_type,
                head_first=head_first,
                timeouts=timeouts,
            )

    return asyncio.run(go())


def test_redirects_are_reported_normalized_not_followed() -> None:
    with BadWeb(
        {
            "/moved": badweb.redirect("../b/./c.html?utm_source=x&b=2&a=1#frag", status=301),
            "/nowhere": badweb.page(b"", status=302),
            "/broken": badweb.redirect("http://[::1/oops"),
            "/other": badweb.redirect("HTTP://Example.ORG:80/x"),
        }
    ) as web:
        moved = _fetch(web.url("/moved"))
        assert (moved.status, moved.error, moved.ok) == (301, None, False)
        assert moved.redirect_to == web.url("/b/c.html?b=2&a=1")  # order kept (RFC 3986), tracking gone
        assert _fetch(web.url("/other")).redirect_to == "http://example.org/x"
        for path in ("/nowhere", "/broken"):
            bad = _fetch(web.url(path))
            assert (bad.error, bad.redirect_to, bad.retryable) == ("bad_redirect", None, False), path
        assert web.paths() == ["/moved", "/other", "/nowhere", "/broken"]  # one request each


def _cookie_check(path: str) -> badweb.Handler:
    """A page that first sets a cookie and sends the client back to itself (old sites' "do you
    take cookies" check), then serves the page to a client that sends the cookie."""
    done, again = (
        badweb.html("Checked", "The page behind a cookie check."),
        badweb.page(
            b"", ctype="text/html", status=302, headers={"Location": path, "Set-Cookie": "ok=1; Path=/"}
        ),
    )

    async def handle(req: badweb.Request, w: asyncio.StreamWriter) -> None:
        await (done if "ok=1" in req.headers.get("cookie", "") else again)(req, w)

    return handle


def test_a_redirect_to_the_url_itself_is_asked_once_more_with_its_cookies() -> None:
    token = "0A1B2C3D4E5F60718293A4B5C6D7E8F9"
    with BadWeb(
        {
            "/check": _cookie_check("/check"),
            "/loop": badweb.redirect("/loop"),
            "/session": badweb.redirect(f"/session;jsessionid={token}"),  # the normal form drops it
        }
    ) as web:
        checked = _fetch(f"http://localhost:{web.port}/check")  # a host name: cookies are kept
        assert (checked.status, checked.error, checked.redirect_to) == (200, None, None)
        assert b"cookie check" in checked.body
        for path in ("/loop", "/session"):
            loop = _fetch(web.url(path))
            assert (loop.error, loop.redirect_to, loop.retryable) == ("bad_redirect", None, False), path
            assert "redirects to itself" in loop.detail
        assert web.paths() == ["/check", "/check", "/loop", "/loop", "/session", "/session"]


def test_responses_aiohttp_refuses_are_read_as_browsers_read_them() -> None:
    """Old servers' protocol nits that llhttp rejects and browsers accept: the page is read
    (through http.client) with its headers; a response no client can read stays an error."""
    body = b"<html><body>the old web, still there</body></html>"
    ok = f"Content-Type: text/html\r\nContent-Length: {len(body)}\r\n".encode()
    packed = gzip.compress(body)
    cases = {
        "/twice": ok + f"Content-Length: {len(body)}\r\n".encode(),  # Content-Length twice
        "/stray-line": b"Server: Apache/1.3\r\nthis line is not a header\r\n" + ok,
        "/space": b"Content-Type : text/html\r\n",  # the type after a space before the colon
        "/both": f"Content-Type: text/html\r\nContent-Length: {len(body)}\r\n"
        "Transfer-Encoding: chunked\r\n".encode(),  # chunked wins (RFC 9112 6.3)
    }
    routes = {
        path: badweb.raw(
            b"HTTP/1.1 200 OK\r\n"
            + headers
            + b"\r\n"
            + (f"{len(body):x}\r\n".encode() + body + b"\r\n0\r\n\r\n" if path == "/both" else body)
        )
        for path, headers in cases.items()
    }
    routes["/gzip"] = badweb.raw(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Encoding: gzip\r\n"
        + f"Content-Length: {len(packed)}\r\nContent-Length: {len(packed)}\r\n\r\n".encode()
        + packed
    )
    routes["/moved"] = badweb.raw(
        b"HTTP/1.1 301 Moved\r\nLocation: /caf\xe9.html\r\nLocation: /caf\xe9.html\r\nContent-Length: 0\r\n"
        b"Content-Length: 0\r\n\r\n"
    )
    routes["/http09"] = badweb.raw(body)  # no status line at all
    with BadWeb(routes) as web:
        for path in (*cases, "/gzip"):
            fetched = _fetch(web.url(path))
            assert (fetched.status, fetched.error, fetched.body) == (200, None, body), path
            assert fetched.content_type == "text/html", path
        assert _fetch(web.url("/moved")).redirect_to == web.url("/caf%E9.html")  # Latin-1 bytes kept
        old = _fetch(web.url("/http09"))
        assert (old.error, old.status) == ("http", None) and "read leniently" in old.detail
        big = _fetch(web.url("/twice"), max_bytes=10)
        assert (big.error, big.body) == ("too_large", body[:10])


class _Resolver(aiohttp.abc.AbstractResolver):
    """DNS as the test says: "dead.test" does not exist, "flaky.test" has no answer for now,
    everything else is the loopback address."""

    async def resolve(self, host: str, port: int = 0, family: int = socket.AF_INET) -> list:
        if host == "dead.test":
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        if host == "flaky.test":
            raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")
        return [
            {"hostname": host, "host": "127.0.0.1", "port": port, "family": family, "proto": 0, "flags": 0}
        ]

    async def close(self) -> None:
        return None


def test_a_name_that_does_not_exist_is_not_retried_one_without_an_answer_is() -> None:
    async def go(url: str) -> FetchResult:
        connector = aiohttp.TCPConnector(resolver=_Resolver())
        async with aiohttp.ClientSession(connector=connector) as session:
            return await fetch(session, url, max_bytes=10_000)

    with BadWeb({"/": badweb.html("Alive", "A page on a host that exists.")}) as web:
        alive = asyncio.run(go(f"http://alive.test:{web.port}/"))
    assert (alive.status, alive.error) == (200, None)
    dead = asyncio.run(go("http://dead.test/"))
    assert (dead.error, dead.retryable) == ("dns", False) and "dead.test" in dead.detail
    flaky = asyncio.run(go("http://flaky.test/"))
    assert (flaky.error, flaky.retryable) == ("connect", True)


def test_retry_advice_from_status_and_retry_after() -> None:
    future = formatdate(time.time() + 3600, usegmt=True)
    with BadWeb(
        {
            "/busy": badweb.page("slow down", status=429, headers={"Retry-After": "7"}),
            "/down": badweb.page("later", status=503, headers={"Retry-After": future}),
            "/past": badweb.page(
                "later", status=503, headers={"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}
            ),
            "/junk": badweb.page("later", status=503, headers={"Retry-After": "soon-ish"}),
            "/broken": badweb.page("oops", status=500),
        }
    ) as web:
        busy = _fetch(web.url("/busy"))
        assert (busy.status, busy.retryable, busy.retry_after) == (429, True, 7.0)
        down = _fetch(web.url("/down"))
        assert down.retryable and down.retry_after is not None and 3500 < down.retry_after <= 3600
        assert _fetch(web.url("/past")).retry_after == 0.0
        assert _fetch(web.url("/junk")).retry_after is None
        broken = _fetch(web.url("/broken"))
        assert (broken.retryable, broken.retry_after, broken.body) == (True, None, b"")
        missing = _fetch(web.url("/missing"))
        assert (missing.status, missing.retryable) == (404, False)


def test_head_first_skips_large_and_unwanted_bodies() -> None:
    page = b"<html><body>" + b"p" * 500 + b"</body></html>"
    with BadWeb(
        {
            "/large": badweb.page(b"L" * 5000),
            "/image": badweb.page(b"\x89PNG" + b"\0" * 100, ctype="image/png"),
            "/ok": badweb.page(page, ctype="text/html; charset=ISO-8859-1"),
            "/no-head": badweb.head_refused(badweb.page(page)),
            "/no-head-501": badweb.head_refused(badweb.page(page), status=501),
            "/moved": badweb.redirect("/ok"),
        }
    ) as web:
        large = _fetch(web.url("/large"), max_bytes=1000, head_first=True)
        assert (large.error, large.head_status, large.body) == ("too_large", 200, b"")
        assert _fetch(web.url("/image"), head_first=True).error == "wrong_type"
        ok = _fetch(web.url("/ok"), head_first=True)
        assert (ok.ok, ok.body, ok.charset) == (True, page, "ISO-8859-1")
        for path, status in (("/no-head", 405), ("/no-head-501", 501)):
            fallback = _fetch(web.url(path), head_first=True)
            assert (fallback.ok, fallback.head_status, fallback.body) == (True, status, page)
        assert _fetch(web.url("/moved"), head_first=True).redirect_to == web.url("/ok")
        assert web.paths("GET") == ["/ok", "/no-head", "/no-head-501"]  # the rest ended at HEAD
        assert web.paths("HEAD") == ["/large", "/image", "/ok", "/no-head", "/no-head-501", "/moved"]


def test_total_and_read_timeouts() -> None:
    with BadWeb({"/drip": badweb.slow_drip(interval=0.05), "/stall": badweb.slow_drip(interval=5.0)}) as web:
        drip = _fetch(web.url("/drip"), timeouts=Timeouts(connect=2.0, read=1.0, total=0.5))
        assert (drip.error, drip.retryable, drip.body) == ("timeout", True, b"")
        assert "total 0.5 s" in drip.detail
        stall = _fetch(web.url("/stall"), timeouts=Timeouts(connect=2.0, read=0.3, total=30.0))
        assert stall.error == "timeout"


def _drip_after_bad_headers(interval: float) -> badweb.Handler:
    """Headers aiohttp refuses (Content-Length twice), then a byte every ``interval`` s."""

    async def handle(req: badweb.Request, w: asyncio.StreamWriter) -> None:
        w.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 900\r\n")
        w.write(b"Content-Length: 900\r\n\r\n<html><body>")
        for _ in range(880):
            await w.drain()
            await asyncio.sleep(interval)
            w.write(b"x")

    return handle


def test_the_lenient_reader_keeps_the_time_limits() -> None:
    with BadWeb({"/drip": _drip_after_bad_headers(0.05), "/stall": _drip_after_bad_headers(5.0)}) as web:
        drip = _fetch(web.url("/drip"), timeouts=Timeouts(connect=2.0, read=1.0, total=0.5))
        assert (drip.error, drip.retryable, drip.body) == ("timeout", True, b"")
        stall = _fetch(web.url("/stall"), timeouts=Timeouts(connect=2.0, read=0.3, total=30.0))
        assert (stall.error, stall.body) == ("timeout", b"")  # the read timeout, on the socket


def test_bodies_cut_short_are_errors_not_pages() -> None:
    with BadWeb(
        {
            "/liar": badweb.close_mid_body(declared=5000, sent=1000),
            "/chunks": badweb.close_mid_body(declared=5000, sent=1000, chunked=True),
            "/garbage": badweb.raw(b"SPAM SPAM SPAM\r\n\r\n"),
        }
    ) as web:
        for path in ("/liar", "/chunks"):
            cut = _fetch(web.url(path))
            assert (cut.error, cut.retryable, cut.body) == ("closed", True, b""), path
        garbage = _fetch(web.url("/garbage"))
        assert garbage.error in ("http", "closed") and not garbage.ok


def _encoded(body: bytes, encoding: str, data: bytes) -> badweb.Handler:
    return badweb.raw(
        badweb.head(
            200, {"Content-Type": "text/html", "Content-Encoding": encoding, "Content-Length": str(len(data))}
        )
        + data
    )


def test_compressed_bodies_decoded_and_bombs_capped() -> None:
    body = b"<html><body>" + b"compressible text " * 2000 + b"</body></html>"
    deflater = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    raw_deflate = deflater.compress(body) + deflater.flush()
    with BadWeb(
        {
            "/gzip": _encoded(body, "gzip", gzip.compress(body)),
            "/deflate": _encoded(body, "deflate", zlib.compress(body)),
            "/raw-deflate": _encoded(body, "deflate", raw_deflate),
            "/corrupt": _encoded(body, "gzip", gzip.compress(body)[:20] + b"\xff" * 200),
            "/truncated": _encoded(body, "gzip", gzip.compress(body)[:-30]),
            "/bomb": badweb.gzip_bomb(50_000_000),
        }
    ) as web:
        for path in ("/gzip", "/deflate", "/raw-deflate"):
            assert _fetch(web.url(path)).body == body, path
        assert _fetch(web.url("/corrupt")).error == "decode"
        assert _fetch(web.url("/truncated")).error == "closed"
        bomb = _fetch(web.url("/bomb"), max_bytes=1_000_000)
        assert bomb.error == "too_large" and len(bomb.body) == 1_000_000
        assert bomb.body.startswith(b"<html><body>000")


def test_bodies_labelled_compressed_but_sent_plain_are_read_as_sent() -> None:
    """Misconfigured servers: gzip or deflate claimed for a plain page (a PHP script that
    compresses only sometimes), or a charset where the encoding belongs. The page is there
    to be read; a body that really is unknown compression is still refused."""
    body = b"\n<!DOCTYPE html><html><body>plain text after all</body></html>"
    with BadWeb(
        {
            "/gzip-plain": _encoded(body, "gzip", body),
            "/deflate-plain": _encoded(body, "deflate", body),
            "/charset": _encoded(body, "UTF-8", body),
            "/none": _encoded(body, "none", body),
            "/brotli": _encoded(body, "br", b"\x8b\x03\x80" + body),
            "/binary-gzip": _encoded(body, "gzip", b"\x00\x01" + body),
        }
    ) as web:
        for path in ("/gzip-plain", "/deflate-plain", "/charset", "/none"):
            fetched = _fetch(web.url(path))
            assert (fetched.error, fetched.body) == (None, body), path
        for path in ("/brotli", "/binary-gzip"):
            assert _fetch(web.url(path)).error == "decode", path


def test_robots_redirects_are_followed_and_sitemaps_listed() -> None:
    robots = (
        b"User-agent: *\nDisallow: /private\nSitemap: /maps/a.xml\nSitemap: http://elsewhere.test/b.xml\n"
    )
    with BadWeb(
        {
            "/robots.txt": badweb.redirect("/r1", status=301),
            "/r1": badweb.redirect("/real-robots.txt"),
            "/real-robots.txt": badweb.page(robots, ctype="text/plain"),
        }
    ) as web:

        async def go() -> FetchResult:
            async with make_session("TestBot/1.0", 5.0, 4) as session:
                return await fetch_robots(session, web.base)

        rules = rules_from_fetch(asyncio.run(go()), now=0.0)
    assert not rules.allowed(web.url("/private/x"), "TestBot") and rules.allowed(web.url("/a"), "TestBot")
    assert rules.sitemaps == ["/maps/a.xml", "http://elsewhere.test/b.xml"]
    assert not rules.garbage


def _gz(text: str) -> bytes:
    return gzip.compress(text.encode())


def _urlset(*paths: str) -> str:
    locs = "".join(f"<url><loc>{p}</loc></url>" for p in paths)
    return f'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{locs}</urlset>'


def test_sitemap_discovery_walks_indexes_gzip_and_garbage() -> None:
    index = (
        '<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        "<sitemap><loc>/s1.xml.gz</loc></sitemap><sitemap><loc>/s2.xml</loc></sitemap>"
        "<sitemap><loc>/index.xml</loc></sitemap><sitemap><loc>/gone.xml</loc></sitemap>"
        "<sitemap><loc>http://elsewhere.test/s.xml</loc></sitemap></sitemapindex>"
    )
    with BadWeb(
        {
            "/index.xml": badweb.page(index, ctype="application/xml"),
            "/s1.xml.gz": badweb.page(
                _gz(_urlset("/a", "/b?utm_source=x", "http://elsewhere.test/c")), ctype="application/gzip"
            ),
            "/s2.xml": badweb.page(_urlset("/c", "/a")[:-30], ctype="application/xml"),  # cut short
        }
    ) as web:
        web.routes["/sitemap.xml"] = badweb.page(f"{web.url('/d')}\n{web.url('/e')}\n", ctype="text/plain")

        def discover(**caps: int) -> SitemapResult:
            async def go() -> SitemapResult:
                async with make_session("TestBot/1.0", 5.0, 4) as session:
                    return await discover_sitemap_urls(
                        session, web.base, ["/index.xml"], max_bytes=100_000, **caps
                    )

            return asyncio.run(go())

        found = discover()  # breadth first: robots.txt's sitemaps and /sitemap.xml, then the index's
        assert found.urls == [web.url(p) for p in ("/d", "/e", "/a", "/b", "/c")]
        # index, s1, s2, gone (404: named, so an error), sitemap.xml; the cycle is not refetched
        assert (found.sitemaps_fetched, found.errors) == (5, 2)
        assert web.paths().count("/index.xml") == 1
        assert discover(max_sitemaps=2).urls == [web.url("/d"), web.url("/e")]
        assert discover(max_sitemaps=3).urls == [web.url(p) for p in ("/d", "/e", "/a", "/b")]
        assert discover(max_urls=1).urls == [web.url("/d")]


def test_garbled_head_answer_falls_back_to_get() -> None:
    page = badweb.page(b"<html><body>fine over GET</body></html>")

    async def botched_head(req: badweb.Request, w: asyncio.StreamWriter) -> None:
        if req.method == "HEAD":
            w.write(b"HTTP/1.1 200 OK\r\nContent-Length: nonsense\r\n\r\n")
        else:
            await page(req, w)

    with BadWeb({"/botched": botched_head}) as web:
        result = _fetch(web.url("/botched"), head_first=True)
        assert (result.ok, result.body) == (True, b"<html><body>fine over GET</body></html>")
        assert web.paths("HEAD") == ["/botched"] and web.paths("GET") == ["/botched"]
