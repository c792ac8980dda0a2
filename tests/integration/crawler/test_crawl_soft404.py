"""Soft 404s: a host that answers 200 "not found" for any missing path (echoing the path)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from services.config import Settings
from services.crawler.crawl import run_crawl
from services.crawler.web.soft404 import NotFoundPage, is_soft_404, words_of
from tests.integration.crawler.loopback_http import QuietHandler
from tests.integration.crawler.loopback_http import serve as serve_http
from tests.integration.stored_rows import stored_documents

TEXT = "The river society walks along the banks every summer and keeps the old stone bridges."
PAGES = {
    "/": ["Home", TEXT, ["/walks.html", "/bridges.html", "/gone1.html", "/gone2.html", "/old/gone3.html"]],
    "/walks.html": ["Walks", "Summer walks start at the mill and follow the river to the weir.", []],
    "/bridges.html": ["Bridges", "Seven stone bridges cross the river within the old town walls.", []],
}


def _page(title: str, text: str, links: list[str]) -> bytes:
    anchors = " ".join(f'<a href="{h}">{h}</a>' for h in links)
    return f"<html lang=en><title>{title}</title><body><p>{text}</p>{anchors}</body></html>".encode()


def _not_found(path: str) -> bytes:
    return (
        f"<html lang=en><title>Page not found</title><body><p>Sorry, the page {path} could not be "
        "found on the river society's web site. Please use the menu to find what you need.</p>"
        '<a href="/">home</a></body></html>'
    ).encode()


@pytest.fixture
def site() -> Iterator[tuple[str, list[str]]]:
    requests: list[str] = []

    class Handler(QuietHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            requests.append(self.path)
            if self.path == "/robots.txt":
                body, ctype = b"User-agent: *\nAllow: /\n", "text/plain"
            else:
                spec = PAGES.get(self.path)
                body, ctype = (_page(*spec) if spec else _not_found(self.path)), "text/html; charset=utf-8"
            self.send_response(200)  # always 200: the soft 404
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    httpd, base = serve_http(Handler)
    yield base, requests
    httpd.shutdown()
    httpd.server_close()


def test_not_found_pages_answered_with_200_are_not_documents(settings: Settings, site) -> None:
    base, requests = site
    probing = settings.with_overrides(soft404_probe=True, sitemaps=False)
    stats = run_crawl(probing, [base + "/"], progress=False)
    urls = {d.url for d in stored_documents(probing)}
    assert urls == {base + "/", base + "/walks.html", base + "/bridges.html"}
    assert stats.counters["soft_404"] == 3
    probes = [p for p in requests if p.startswith("/nimbus-soft404-probe-")]
    assert len(probes) == 1  # once per host


def test_without_the_probe_they_were_stored(settings: Settings, site) -> None:
    """What the probe prevents (the failure without it)."""
    base, _ = site
    run_crawl(settings.with_overrides(sitemaps=False), [base + "/"], progress=False)
    assert len(stored_documents(settings)) == 6


def test_similarity_ignores_the_echoed_path_and_keeps_real_pages() -> None:
    probe = NotFoundPage(
        words_of(_not_found("/nimbus-soft404-probe-1.html").decode(), "/nimbus-soft404-probe-1.html")
    )
    missing = words_of(_not_found("/old/reports-2004.html").decode(), "/old/reports-2004.html")
    assert is_soft_404(missing, probe)
    real = words_of(_page("Walks", PAGES["/walks.html"][1], []).decode(), "/walks.html")
    assert not is_soft_404(real, probe)
    assert not is_soft_404(missing, None) and not is_soft_404(missing, NotFoundPage(frozenset()))
