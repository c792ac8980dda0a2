"""A small real web on loopback, rebuilt from the sample data in data/.

There is no internet here, yet the demo and the end-to-end tests must crawl
real pages over real HTTP. So, read through the archive readers
(``services.archives``: a bundle of each sample file, its batches, its records),
as an archive crawl reads them:

* ``iana_site``: the 2014 crawl of www.iana.org in ``iana.warc.gz`` (de-chunked
  and decoded by the WARC reader, revisits resolved, every media type kept:
  the pages' stylesheets and images are served too), at its original paths.
  Absolute links to www.iana.org are rewritten to the loopback origin so the
  crawl stays on this machine.
* ``wiki_site``: the Wikipedia articles of the MediaWiki dump, as the dump
  reader gives them (clean text, wiki links, redirects as aliases), rendered to
  plain HTML pages; wiki links between articles become real links, redirects
  become HTTP 301s, and the front page is a hub that also links the sample PDFs.

Each site is a plain dict of path -> Resource; ``serve`` puts sites on
ephemeral loopback ports in daemon threads.
"""

from __future__ import annotations

import html
import sys
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit

from services.archives.batches import plan_batches, read_batch
from services.archives.bundle import ArchiveType, bundle_of
from services.archives.records import ArchiveRecord, Document

WIKI_DUMP = "wiki/enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
IANA_WARC = "warc/iana.warc.gz"
PDFS = ("pdf/pypdf-example.pdf", "pdf/tracemonkey.pdf", "pdf/federal-register-2020-17221.pdf")


@dataclass
class Resource:
    content_type: str
    body: bytes
    status: int = 200
    location: str | None = None  # for redirects


@dataclass
class Site:
    name: str
    resources: dict[str, Resource] = field(default_factory=dict)
    robots_txt: str = "User-agent: *\nAllow: /\n"


def archive_records(
    path: Path, archive_type: ArchiveType, every_type: bool = False
) -> Iterator[ArchiveRecord]:
    """Every record of one sample file, read as a bundle of that file alone."""
    bundle = bundle_of(str(path.parent), archive_type, [path.name], description=f"sample data: {path.name}")
    for batch in plan_batches(bundle):
        yield from read_batch(bundle, batch, every_type=every_type)


def iana_site(warc_path: Path, origin: str) -> Site:
    """The HTML, CSS, JS and images of the IANA crawl, links kept on ``origin``."""
    site = Site("iana", robots_txt="User-agent: *\nDisallow: /_js/\nDisallow: /_css/\n")
    for record in archive_records(warc_path, ArchiveType.WARC, every_type=True):
        payload = record.payload
        if payload is None or payload.status != 200:
            continue
        parts = urlsplit(record.url)
        if parts.hostname != "www.iana.org":
            continue
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        ctype = payload.content_type or "application/octet-stream"
        body = payload.body
        if ctype.startswith("text/html"):
            for prefix in (b"https://www.iana.org", b"http://www.iana.org", b"//www.iana.org"):
                body = body.replace(prefix, origin.encode())
        site.resources.setdefault(path, Resource(ctype, body))
    return site


def wiki_site(dump_path: Path, pdf_paths: Iterable[Path] = (), limit: int | None = None) -> Site:
    """Wikipedia articles as HTML pages under /wiki/, a hub at /, PDFs under /papers/."""
    articles: dict[str, Document] = {}  # page URL -> the article, in dump order
    aliases: dict[str, str] = {}  # a redirect's URL -> its target's
    for record in archive_records(dump_path, ArchiveType.MEDIAWIKI):
        if record.redirect_to:
            aliases[record.url] = record.redirect_to
        elif record.document is not None and (limit is None or len(articles) < limit):
            articles[record.url] = record.document
    site = Site("wiki", robots_txt="User-agent: *\nDisallow: /wiki/Special:\nCrawl-delay: 0\n")
    for url, target in aliases.items():
        if target in articles:
            site.resources[_path(url)] = Resource("text/html", b"", status=301, location=_path(target))
    for url, article in articles.items():
        links: dict[str, str] = {}  # linked article's path -> anchor text
        for link, anchor in article.links:
            link = aliases.get(link, link)
            if link in articles and link != url and _path(link) not in links:
                links[_path(link)] = anchor or articles[link].title
        page = _article_html(article.title, article.text, links)
        site.resources[_path(url)] = Resource("text/html; charset=utf-8", page.encode("utf-8"))
    papers = []
    for path in pdf_paths:
        site.resources[f"/papers/{path.name}"] = Resource("application/pdf", path.read_bytes())
        papers.append(path.name)
    hub = _hub_html(sorted((a.title, _path(u)) for u, a in articles.items()), papers)
    site.resources["/"] = Resource("text/html; charset=utf-8", hub.encode("utf-8"))
    return site


def _path(url: str) -> str:
    """Where a wiki page is served: its URL's path (the dump's URLs are Wikipedia's)."""
    parts = urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")


def _body_html(text: str) -> str:
    """Clean text to HTML: a paragraph a line (headings and list items are lines of their own)."""
    return "\n".join(f"<p>{html.escape(line.strip())}</p>" for line in text.splitlines() if line.strip())


def _article_html(title: str, text: str, links: dict[str, str]) -> str:
    see_also = "\n".join(
        f'<li><a href="{html.escape(path)}">{html.escape(anchor)}</a></li>' for path, anchor in links.items()
    )
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)} - Sample Wiki</title></head><body>"
        f'<p><a href="/">Sample Wiki</a></p><h1>{html.escape(title)}</h1>\n{_body_html(text)}\n'
        f"<h2>Linked articles</h2><ul>\n{see_also}\n</ul></body></html>"
    )


def _hub_html(articles: list[tuple[str, str]], papers: list[str]) -> str:
    items = "\n".join(f'<li><a href="{html.escape(p)}">{html.escape(t)}</a></li>' for t, p in articles)
    pdfs = "\n".join(f'<li><a href="/papers/{quote(p)}">{html.escape(p)}</a></li>' for p in papers)
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        "<title>Sample Wiki - all articles</title></head><body><h1>Sample Wiki</h1>"
        f"<h2>Articles</h2><ul>\n{items}\n</ul><h2>Papers</h2><ul>\n{pdfs}\n</ul></body></html>"
    )


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address) -> None:
        """Clients closing kept-alive connections are normal; anything else is printed."""
        exc = sys.exc_info()[1]
        if not isinstance(exc, ConnectionError):
            super().handle_error(request, client_address)


class SiteServer:
    """One site on an ephemeral 127.0.0.1 port, served from a daemon thread.

    ``requests`` logs every (method, path) so tests can check what a crawler
    asked for (robots.txt obeyed, nothing fetched twice).
    """

    def __init__(self, site: Site | None = None) -> None:
        self.site = site or Site("empty")
        self.requests: list[tuple[str, str]] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib name
                return  # quiet: the request log above is what tests read

            def do_HEAD(self) -> None:
                self._respond(head=True)

            def do_GET(self) -> None:
                self._respond(head=False)

            def _respond(self, head: bool) -> None:
                with server._lock:
                    server.requests.append((self.command, self.path))
                res = server.lookup(self.path)
                if res is None:
                    res = Resource("text/html", b"<html><title>Not found</title></html>", status=404)
                self.send_response(res.status)
                self.send_header("Content-Type", res.content_type)
                self.send_header("Content-Length", str(len(res.body)))
                if res.location:
                    self.send_header("Location", res.location)
                self.end_headers()
                if not head:
                    self.wfile.write(res.body)

        self.httpd = _QuietServer(("127.0.0.1", 0), Handler)
        self.origin = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def lookup(self, path: str) -> Resource | None:
        """The resource at ``path``, however its characters are percent-encoded."""
        if path == "/robots.txt":
            return Resource("text/plain", self.site.robots_txt.encode())
        return self._by_unquoted.get(unquote(path))

    def start(self) -> SiteServer:
        self._by_unquoted = {unquote(k): v for k, v in self.site.resources.items()}
        self._thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def body(self, path: str) -> bytes:
        return self.site.resources[path].body


def start_sample_web(data_dir: Path, wiki_limit: int | None = None) -> list[SiteServer]:
    """Serve the IANA site and the wiki site (with PDFs) on two loopback ports."""
    iana = SiteServer()
    iana.site = iana_site(data_dir / IANA_WARC, iana.origin)
    wiki = SiteServer(wiki_site(data_dir / WIKI_DUMP, [data_dir / p for p in PDFS], wiki_limit))
    # The wiki hub links the IANA site so one seed reaches both hosts.
    hub = wiki.site.resources["/"]
    hub.body = hub.body.replace(
        b"<h2>Papers</h2>", f'<p>See also <a href="{iana.origin}/">IANA</a>.</p><h2>Papers</h2>'.encode()
    )
    return [wiki.start(), iana.start()]
