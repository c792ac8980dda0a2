"""The crawler against a real little web site on 127.0.0.1 (two ports: two hosts).

The servers log every request, so "never fetched" and "fetched once" are
checked where they happen, and every stored byte is compared with what the
server sent.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from sqlalchemy import select

from services.config import Settings
from services.crawler.crawl import run_crawl
from services.storage.blobs.blobstore import open_blobstore
from services.storage.formats.blocks import read_block
from services.storage.formats.records import decode_record, iter_records
from services.storage.sql.engines import make_engine, session_factory
from services.storage.sql.models import Document, FrontierEntry
from services.text.urls import normalize_url, url_id
from tests.integration.stored_rows import stored_documents


@dataclass
class Site:
    """Pages by path; ``(status, content_type, body, extra headers)``; unknown paths are 404."""

    pages: dict[str, tuple[int, str, bytes, dict[str, str]]]
    requests: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    port: int = 0

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def paths(self) -> list[str]:
        with self.lock:
            return list(self.requests)


def _handler(site: Site) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            with site.lock:
                site.requests.append(self.path)
            status, ctype, body, headers = site.pages.get(
                self.path, (404, "text/html", b"<h1>not found</h1>", {})
            )
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            for key, value in headers.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - quiet tests
            return

    return Handler


@pytest.fixture
def serve() -> Iterator:
    servers: list[ThreadingHTTPServer] = []

    def start(site: Site) -> Site:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(site))
        server.daemon_threads = True
        site.port = server.server_address[1]
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return site

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def _html(title: str, body: str) -> tuple[int, str, bytes, dict[str, str]]:
    page = f"<!doctype html><html lang=en><head><title>{title}</title></head><body>{body}</body></html>"
    return 200, "text/html; charset=utf-8", page.encode(), {}


@pytest.fixture
def sites(serve, sample_data: Path) -> tuple[Site, Site]:
    """Host A: 9 pages (one disallowed, one 404, one PDF, one redirect); host B: 2 pages."""
    other = serve(
        Site(
            {
                "/": _html("Other home", '<a href="/x.html">x marks the spot</a>'),
                "/x.html": _html("Other X", "<p>The treasure is buried on the other host.</p>"),
            }
        )
    )
    pdf = (sample_data / "pdf" / "pypdf-example.pdf").read_bytes()
    home = (
        "<p>Welcome to the loopback garden of linked pages for the crawler.</p>"
        '<a href="a.html">Page A</a> <a href="/a.html#top">again</a> '
        '<a href="http://127.0.0.1:{port}/a.html?utm_source=news">tracked</a> '
        '<a href="b.html">Page B</a> <a href="/private/secret.html">Secret</a> '
        '<a href="/missing.html">Missing</a> <a href="/doc.pdf">The PDF</a> '
        '<a href="/old.html">Old page</a> <a href="/">Home</a> <a href="mailto:a@b.c">mail</a> '
        f'<a href="{other.url("/")}">Elsewhere</a>'
    )
    site = Site(
        {
            "/robots.txt": (200, "text/plain", b"User-agent: *\nDisallow: /private/\n", {}),
            "/a.html": _html(
                "Page A", '<p>Alpha page text.</p><a href="c.html">Page C</a> <a href="/">Home</a>'
            ),
            "/b.html": _html("Page B", '<p>Bravo page text.</p><a href="/a.html">Back to A</a>'),
            "/c.html": _html("Page C", '<p>Charlie, two links deep.</p><a href="/d.html">Page D</a>'),
            "/d.html": _html("Page D", "<p>Delta, three links deep.</p>"),
            "/e.html": _html("Page E", "<p>Echo, reached only through a redirect.</p>"),
            "/private/secret.html": _html("Secret", "<p>robots.txt forbids this page.</p>"),
            "/doc.pdf": (200, "application/pdf", pdf, {}),
            "/old.html": (301, "text/html", b"moved", {"Location": "/e.html"}),
        }
    )
    serve(site)
    site.pages["/"] = _html("Home", home.format(port=site.port))
    return site, other


def _served(sites: tuple[Site, Site]) -> dict[str, bytes]:
    """Normalized URL -> body, for every 200 page of both hosts."""
    return {
        normalize_url(site.url(path)): body
        for site in sites
        for path, (status, _, body, _) in site.pages.items()
        if status == 200
    }


def _check_full_crawl(settings: Settings, sites: tuple[Site, Site]) -> list[Document]:
    """Crawl both sites, check everything stored against what was served; returns the documents."""
    site, other = sites
    stats = run_crawl(settings, [site.url("/")], progress=False)

    assert "/private/secret.html" not in site.paths()
    assert stats.counters["robots_denied"] == 1
    assert stats.counters["status_404"] == 1
    assert stats.counters["redirect"] == 1
    # A: 9 page URLs (the redirect /old.html and its target /e.html are two), B: 2;
    # robots.txt and the sitemap probe are not pages.
    assert stats.pages == 11
    assert sorted(site.paths()) == sorted(
        [
            "/robots.txt",
            "/sitemap.xml",
            "/",
            "/a.html",
            "/b.html",
            "/c.html",
            "/d.html",
            "/missing.html",
            "/doc.pdf",
            "/old.html",
            "/e.html",
        ]
    )
    assert sorted(other.paths()) == ["/", "/robots.txt", "/sitemap.xml", "/x.html"]

    docs = stored_documents(settings)
    served = _served(sites)
    expected = {u for u in served if not u.endswith(("/robots.txt", "/secret.html"))}
    assert {d.url for d in docs} == expected
    assert normalize_url(site.url("/missing.html")) not in {d.url for d in docs}
    assert normalize_url(site.url("/old.html")) not in {d.url for d in docs}
    assert [d.doc_num for d in docs] == list(range(len(expected)))

    blobs = open_blobstore(settings.blob_url, settings.aws_endpoint_url)
    blocks = {name: read_block(blobs.get(name), name) for name in {d.content_block for d in docs}}
    record_blocks = {d.record_block for d in docs}
    records = {r.doc_num: r for name in record_blocks for r in iter_records(blobs.get(name), name)}
    assert sorted(records) == [d.doc_num for d in docs]
    for doc in docs:
        ranged = blobs.get(doc.content_block, doc.content_offset, doc.content_offset + doc.length)
        assert ranged == served[doc.url], doc.url
        entry, body = blocks[doc.content_block][doc.content_index]
        assert body == served[doc.url] and entry.url_id == bytes.fromhex(doc.url_id)
        assert doc.url_id == url_id(doc.url)
        member = blobs.get(doc.record_block, doc.record_offset, doc.record_offset + doc.record_length)
        record = decode_record(member)
        assert (record.doc_num, record.url, record.doc_id) == (doc.doc_num, doc.url, doc.doc_id)
        assert records[doc.doc_num] == record

    by_url = {r.url: r for r in records.values()}
    home = by_url[normalize_url(site.url("/"))]
    links = [link.url for link in home.links]
    assert len(links) == len(set(links))
    assert set(links) == {
        normalize_url(site.url(p))
        for p in ("/a.html", "/b.html", "/private/secret.html", "/missing.html", "/doc.pdf", "/old.html")
    } | {normalize_url(other.url("/"))}
    assert {link.url: link.anchor for link in home.links}[normalize_url(site.url("/a.html"))] == "Page A"
    pdf = by_url[normalize_url(site.url("/doc.pdf"))]
    assert pdf.content_type == "application/pdf" and "Beautiful is better than ugly" in pdf.text
    assert by_url[normalize_url(site.url("/e.html"))].title == "Page E"
    assert home.lang == "en"

    # Running again on the same database: nothing is fetched, nothing is added.
    before = (site.paths(), other.paths())
    again = run_crawl(settings, [site.url("/")], progress=False)
    assert again.pages == 0
    assert (site.paths(), other.paths()) == before
    assert len(stored_documents(settings)) == len(docs)
    return docs


# Site A: 7 documents (/, a-e, the PDF; /old.html redirects, /missing.html is a 404);
# site B: 2 (/, /x.html). Robots-denied /private/secret.html is none of them.
DOCUMENTS = 9


def test_crawl_loopback_sqlite_and_files(settings: Settings, sites) -> None:
    assert len(_check_full_crawl(settings, sites)) == DOCUMENTS


@pytest.mark.mariadb
def test_crawl_loopback_mariadb(settings: Settings, sites, mysql_url: str) -> None:
    docs = _check_full_crawl(settings.with_overrides(database_url=mysql_url), sites)
    assert len(docs) == DOCUMENTS


def test_crawl_loopback_s3(settings: Settings, sites, moto_server: str, s3_bucket: str) -> None:
    s3 = settings.with_overrides(blob_url=f"s3://{s3_bucket}/crawl", aws_endpoint_url=moto_server)
    _check_full_crawl(s3, sites)
    assert any(name.startswith("content/") for name in open_blobstore(s3.blob_url, moto_server).list())


def test_depth_limit(settings: Settings, sites) -> None:
    site, other = sites
    stats = run_crawl(settings, [site.url("/")], max_depth=1, progress=False)
    assert not {"/c.html", "/d.html"} & set(site.paths())
    assert "/x.html" not in other.paths()
    assert stats.counters["depth_limit"] > 0
    docs = stored_documents(settings)
    assert docs and max(d.depth for d in docs) == 1
    assert {d.url for d in docs} == {
        normalize_url(u)
        for u in (
            site.url("/"),
            site.url("/a.html"),
            site.url("/b.html"),
            site.url("/doc.pdf"),
            site.url("/e.html"),
            other.url("/"),
        )
    }


def test_page_limit_then_resume(settings: Settings, sites) -> None:
    site, other = sites
    first = run_crawl(settings, [site.url("/")], max_pages=3, progress=False)
    assert first.pages == 3
    page_requests = [p for s in sites for p in s.paths() if p not in ("/robots.txt", "/sitemap.xml")]
    assert len(page_requests) == 3
    assert 1 <= len(stored_documents(settings)) <= 3

    rest = run_crawl(settings, [site.url("/")], progress=False)
    assert first.pages + rest.pages == 11
    requested = Counter((s.port, p) for s in sites for p in s.paths())
    assert max(requested.values()) == 1, requested  # nothing fetched twice, robots.txt included
    docs = stored_documents(settings)
    assert [d.doc_num for d in docs] == list(range(9))

    engine = make_engine(settings.database_url)
    with session_factory(engine)() as session:
        states = Counter(session.scalars(select(FrontierEntry.state)))
    engine.dispose()
    assert states == {"done": 12}  # 11 fetched (the redirect and its target), 1 denied by robots.txt
