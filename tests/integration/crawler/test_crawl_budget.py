"""Crawl budget on a site whose links are mostly dead: the live pages are reached first.

The site is the shape of an old web site: a live tree of sections and pages, and on every page
a score of links to places that no longer answer (a removed ``/old/`` section, a ``/cgi-bin/``
that is gone, a few stray missing files inside live sections, a host that refuses connections).
Every link on a page looks alike and gets the same starting priority; what tells them apart is
what the host has already answered for each path prefix.
"""

from __future__ import annotations

import socket
from collections import Counter
from collections.abc import Iterator

import pytest
from sqlalchemy import text

from services.config import Settings
from services.crawler.crawl import run_crawl
from services.storage.sql.engines import make_engine
from tests.integration.crawler.loopback_http import QuietHandler
from tests.integration.crawler.loopback_http import serve as serve_http
from tests.integration.stored_rows import stored_documents

SECTIONS, PAGES_PER_SECTION = 6, 6
DEAD_PER_PAGE = 20  # 12 under /old/, 5 under /cgi-bin/, 1 missing in a live section, 2 to a dead host
HOME_LINK_LIST = 60  # the home page's own list of links into the removed section


def _closed_port() -> int:
    """A loopback port nothing listens on (connections are refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def live_paths() -> list[str]:
    paths = ["/"]
    for s in range(SECTIONS):
        paths.append(f"/docs/s{s}/")
        paths += [f"/docs/s{s}/p{p}.html" for p in range(PAGES_PER_SECTION)]
    return paths


def _dead_links(key: str, section: int, dead_host: str) -> list[str]:
    links = [f"/old/{key}-{k}.html" for k in range(12)]
    links += [f"/cgi-bin/show.pl?page={key}-{k}" for k in range(5)]
    links.append(f"/docs/s{section}/gone-{key}.html")
    links += [f"{dead_host}/{key}/{k}.html" for k in range(2)]
    return links


def _links(path: str, dead_host: str) -> list[str]:
    """The page's links, dead ones first, as in a page whose menu is older than its content."""
    key = path.strip("/").replace("/", "-").replace(".html", "") or "home"
    if path == "/":
        dead = _dead_links(key, 0, dead_host) + [f"/old/archive-{k}.html" for k in range(HOME_LINK_LIST)]
        return dead + [f"/docs/s{s}/" for s in range(SECTIONS)]
    section = int(path.split("/")[2][1:])
    dead = _dead_links(key, section, dead_host)
    if path.endswith("/"):
        return dead + [f"/docs/s{section}/p{p}.html" for p in range(PAGES_PER_SECTION)]
    return [*dead, "/"]


@pytest.fixture
def dead_link_site() -> Iterator[tuple[str, list[str]]]:
    requests: list[str] = []
    dead_host = f"http://127.0.0.1:{_closed_port()}"
    live = set(live_paths())

    class Handler(QuietHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            requests.append(self.path)
            if self.path == "/robots.txt":
                status, body = 200, b"User-agent: *\nAllow: /\n"
            elif self.path in live:
                anchors = " ".join(f'<a href="{h}">link</a>' for h in _links(self.path, dead_host))
                text = f"Page {self.path} of the society's archive: minutes, letters and photographs."
                body = f"<html lang=en><title>{self.path}</title><body><p>{text}</p>{anchors}</body></html>"
                status, body = 200, body.encode()
            else:
                status, body = 404, b"<html><title>404</title><body>Not Found</body></html>"
            self.send_response(status)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    httpd, base = serve_http(Handler)
    yield base, requests
    httpd.shutdown()
    httpd.server_close()


def test_every_live_page_is_reached_within_a_few_times_their_number(
    settings: Settings, dead_link_site
) -> None:
    base, requests = dead_link_site
    live = live_paths()
    dead_links = len(live) * DEAD_PER_PAGE + HOME_LINK_LIST
    assert dead_links >= 20 * len(live)
    budget = 3 * len(live)
    run_crawl(
        settings.with_overrides(max_pages=budget, sitemaps=False, max_depth=5), [base + "/"], progress=False
    )
    stored = {d.url.removeprefix(base) for d in stored_documents(settings)}
    missed = sorted(set(live) - stored)
    spent = Counter(
        "live" if p in set(live) else p.split("/")[1] + ("/gone" if "gone" in p else "")
        for p in requests
        if p != "/robots.txt"
    )
    assert not missed, f"{len(missed)} of {len(live)} live pages not reached in {budget} requests: {spent}"
    pages = [p for p in requests if p != "/robots.txt"]
    assert len(pages) <= budget
    # The commit ledger carries pages and errors per flush (the dashboard's chart).
    engine = make_engine(settings.database_url)
    with engine.connect() as conn:
        ledger = conn.execute(text("SELECT SUM(pages), SUM(errors) FROM fetch_batches")).one()
    engine.dispose()
    assert ledger == (len(pages), sum(p not in set(live) for p in pages))  # every 404 an error
