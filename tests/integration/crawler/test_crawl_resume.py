"""kill -9 in the middle of `nimbus crawl`, then start it again.

Committed work is never fetched again and no document is lost or doubled.
What the killed process had fetched but not committed (at most
``flush_interval`` seconds of work, plus requests in flight) is fetched again:
the first test makes that window empty on purpose, the second kills blind.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import func, select

from services.config import Settings
from services.crawler.commit.spool import read_segment
from services.storage.sql.engines import make_engine, session_factory
from services.storage.sql.models import Document, FrontierEntry
from services.storage.sql.schema import init_db
from tests.integration.crawler.loopback_http import QuietHandler
from tests.integration.crawler.loopback_http import serve as serve_http
from tests.polling import wait_for

REPO = Path(__file__).resolve().parents[3]
PAGES = 40
TEXT = "<p>The quick brown fox jumps over the lazy dog near the quiet river bank today.</p>"


class SlowSite:
    """Pages /p/0../p/39 (each links to the next five), 20 ms each; ``/hang`` waits for ``release``."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        self.answered: list[str] = []
        self.release = threading.Event()
        self.lock = threading.Lock()
        site = self

        class Handler(QuietHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                with site.lock:
                    site.requests.append(self.path)
                if self.path == "/hang":
                    site.release.wait(timeout=60)
                    body = f"<html lang=en><title>hang</title>{TEXT}</html>".encode()
                elif self.path == "/robots.txt":
                    body = b"User-agent: *\nAllow: /\n"
                elif self.path.startswith("/p/"):
                    n = int(self.path[3:])
                    time.sleep(0.02)
                    links = "".join(f'<a href="/p/{m}">{m}</a>' for m in range(n + 1, min(n + 6, PAGES)))
                    extra = '<a href="/hang">hang</a>' if n == 10 else ""
                    body = f"<html lang=en><title>page {n}</title>{TEXT}{links}{extra}</html>".encode()
                else:
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "text/html; charset=utf-8")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except OSError:  # the crawler was killed while we waited
                    return
                with site.lock:
                    site.answered.append(self.path)

        self.httpd, self.base = serve_http(Handler)

    def pages(self) -> set[str]:
        return {f"{self.base}/p/{n}" for n in range(PAGES)} | {f"{self.base}/hang"}


@pytest.fixture
def site() -> Iterator[SlowSite]:
    s = SlowSite()
    yield s
    s.release.set()
    s.httpd.shutdown()
    s.httpd.server_close()


def _start(settings: Settings, site: SlowSite, tmp_path: Path, **env: str) -> subprocess.Popen:
    full = {
        **os.environ,
        "NIMBUS_DATABASE_URL": settings.database_url,
        "NIMBUS_BLOB_URL": settings.blob_url,
        "NIMBUS_VAR_DIR": str(tmp_path / "var"),
        "NIMBUS_CRAWL_DELAY": "0",
        "NIMBUS_SITEMAPS": "0",
        "NIMBUS_ALLOWED_HOSTS": "127.0.0.1",
        "NIMBUS_FLUSH_INTERVAL": "0.2",
        **env,
    }
    return subprocess.Popen(
        [sys.executable, "-m", "services.cli", "crawl", site.base + "/p/0", "--max-depth", "100", "--quiet"],
        env=full,
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )


def _committed(settings: Settings) -> set[str]:
    engine = make_engine(settings.database_url)
    init_db(engine)
    try:
        with session_factory(engine)() as session:
            return set(session.scalars(select(FrontierEntry.url).where(FrontierEntry.state == "done")))
    finally:
        engine.dispose()


def _spooled(tmp_path: Path) -> set[str]:
    """URLs on the crawler's spool now (read beside the running process, as recovery reads it)."""
    urls: set[str] = set()
    for segment in (tmp_path / "var" / "spool").rglob("segment-*.spool"):
        urls.update(result.url for result in read_segment(segment))
    return urls


def _finish(settings: Settings, site: SlowSite, tmp_path: Path, **env: str) -> list[Document]:
    site.release.set()
    again = _start(settings, site, tmp_path, **env)
    out, _ = again.communicate(timeout=120)
    assert again.returncode == 0, out.decode()
    assert b"crawled" in out
    engine = make_engine(settings.database_url)
    with session_factory(engine)() as session:
        docs = list(session.scalars(select(Document).order_by(Document.doc_num)))
        assert session.scalar(select(func.count()).select_from(FrontierEntry)) == PAGES + 1
    engine.dispose()
    # Each page once, under its own number. Not necessarily dense: a kill between a
    # flush's reservation of doc numbers and its commit leaves a gap (an empty document).
    assert len({d.doc_num for d in docs}) == len(docs) == len({d.url for d in docs})
    assert {d.url for d in docs} == site.pages()  # every served page is a document
    return docs


def test_kill_while_a_request_hangs_refetches_only_that_request(
    settings: Settings, site: SlowSite, tmp_path: Path
) -> None:
    one = {"NIMBUS_BATCH_SIZE": "1"}  # one URL per batch: every answered page commits on its own
    crawler = _start(settings, site, tmp_path, **one)
    try:
        wait_for(lambda: "/hang" in site.requests)
        # Everything answered before the hang gets committed within a flush interval.
        wait_for(lambda: {site.base + p for p in site.answered if p != "/robots.txt"} <= _committed(settings))
    finally:
        crawler.send_signal(signal.SIGKILL)
        crawler.wait(timeout=30)
    answered_before = list(site.answered)
    _finish(settings, site, tmp_path, **one)
    requested = Counter(site.requests)
    assert requested["/hang"] == 2 and site.answered.count("/hang") == 1  # the first never got an answer
    assert all(count == 1 for path, count in requested.items() if path != "/hang"), requested
    assert len(answered_before) >= 2


def test_blind_kill_never_refetches_committed_pages(
    settings: Settings, site: SlowSite, tmp_path: Path
) -> None:
    site.release.set()
    crawler = _start(settings, site, tmp_path)
    try:
        wait_for(lambda: len(_committed(settings)) >= 8)
    finally:
        crawler.send_signal(signal.SIGKILL)
        crawler.wait(timeout=30)
    committed = {u.removeprefix(site.base) for u in _committed(settings)}
    before = len(site.requests)
    assert committed and before < PAGES + 2  # killed midway
    _finish(settings, site, tmp_path)
    again = Counter(site.requests[before:])
    assert not committed & set(again), committed & set(again)
    assert Counter(site.requests)["/robots.txt"] == 1  # cached in the hosts table


def _counter(settings: Settings, name: str) -> int:
    from services.storage.sql.counters import read_counters

    engine = make_engine(settings.database_url)
    try:
        with session_factory(engine)() as session:
            return read_counters(session).get(name, 0)
    finally:
        engine.dispose()


def test_answered_but_uncommitted_pages_come_back_from_the_spool(
    settings: Settings, site: SlowSite, tmp_path: Path
) -> None:
    """With commits far apart, a kill -9 finds most answered pages uncommitted; the
    restarted crawler takes them from its write-ahead spool instead of the network."""
    slow_commits = {"NIMBUS_FLUSH_INTERVAL": "600"}
    crawler = _start(settings, site, tmp_path, **slow_commits)
    try:
        wait_for(lambda: "/hang" in site.requests)  # one request per host: the rest wait behind it
        # Every page answered before the hang is parsed and on the spool (or already
        # committed, its segment deleted) before the kill.
        wait_for(
            lambda: (
                {site.base + p for p in site.answered if p != "/robots.txt"}
                <= _spooled(tmp_path) | _committed(settings)
            ),
            what="the answered pages on the spool",
        )
    finally:
        crawler.send_signal(signal.SIGKILL)
        crawler.wait(timeout=30)
    answered_before = [p for p in site.answered if p != "/robots.txt"]
    uncommitted = {site.base + p for p in answered_before} - _committed(settings)
    assert len(answered_before) >= 5 and uncommitted  # work the kill would have cost
    _finish(settings, site, tmp_path, **slow_commits)
    requested = Counter(site.requests)
    assert requested["/hang"] == 2  # in flight at the kill: asked again
    assert all(count == 1 for path, count in requested.items() if path != "/hang"), requested
    assert _counter(settings, "recovered_from_spool") >= len(uncommitted)
