"""Fetching against a real loopback server: caps, types, failures, one request per host."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from sqlalchemy import select

from services.config import Settings
from services.crawler.crawl import run_crawl
from services.crawler.fetch import FetchResult, fetch, make_session
from services.crawler.parse import accept_content_type
from services.storage.db import make_engine, session_factory
from services.storage.models import Document, FrontierEntry

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
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                with server.lock:
                    server.user_agents.append(self.headers.get("User-Agent", ""))
                    server.paths.append(self.path)
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                try:
                    server.route(self)
                finally:
                    with server.lock:
                        server.in_flight -= 1

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                return

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def route(self, h: BaseHTTPRequestHandler) -> None:
        path = h.path
        if path == "/slow":
            time.sleep(1.0)
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
            return _send(h, 200, "text/html", f"<html><body>{links}{extra}</body></html>".encode())
        if path == "/big-chunked":  # no Content-Length: the cap must bite while streaming
            h.send_response(200)
            h.send_header("Content-Type", "text/html")
            h.end_headers()
            h.wfile.write(BIG)
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
    assert _get(server.base + "/slow", timeout=0.3).error == "timeout"
    assert _get(server.base + "/loop").error == "redirects"
    with ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler) as closed:
        port = closed.server_address[1]
    refused = _get(f"http://127.0.0.1:{port}/")
    assert refused.error == "connect" and refused.status is None and "127.0.0.1" in refused.detail


def test_crawl_sends_one_request_per_host_at_a_time(server: _Server, settings: Settings) -> None:
    stats = run_crawl(settings.with_overrides(concurrency=8, max_body_bytes=10_000),
                      [server.base + "/page0"], progress=False)
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
