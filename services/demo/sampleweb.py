"""A small real web on loopback, rebuilt from the sample data in data/.

There is no internet here, yet the demo and the end-to-end tests must crawl
real pages over real HTTP. So:

* ``iana_site``: the 2014 crawl of www.iana.org in ``iana.warc.gz`` (read with
  warcio, which also de-chunks and decodes bodies), served at its original
  paths. Absolute links to www.iana.org are rewritten to the loopback origin
  so the crawl stays on this machine.
* ``wiki_site``: the Wikipedia articles of the MediaWiki dump, rendered to
  plain HTML pages (wikitextparser turns wikitext into text); wikilinks
  between articles become real links, redirects become HTTP 301s, and the
  front page is a hub that also links the sample PDFs.

Each site is a plain dict of path -> Resource; ``serve`` puts sites on
ephemeral loopback ports in daemon threads.
"""

from __future__ import annotations

import bz2
import html
import re
import sys
import threading
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit

WIKI_DUMP = "wiki/enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
IANA_WARC = "warc/iana.warc.gz"
PDFS = ("pdf/pypdf-example.pdf", "pdf/tracemonkey.pdf", "pdf/federal-register-2020-17221.pdf")

_REF = re.compile(r"<ref[^>/]*/>|<ref[^>]*>.*?</ref>", re.S | re.I)
_COMMENT = re.compile(r"<!--.*?-->", re.S)
_CATEGORY = re.compile(r"\[\[(?:Category|[a-z]{2,3}(?:-[a-z]+)?):[^\]]*\]\]")  # and interlanguage links


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


def iana_site(warc_path: Path, origin: str) -> Site:
    """The HTML, CSS, JS and images of the IANA crawl, links kept on ``origin``."""
    from warcio.archiveiterator import ArchiveIterator

    site = Site("iana", robots_txt="User-agent: *\nDisallow: /_js/\nDisallow: /_css/\n")
    with open(warc_path, "rb") as fh:
        for record in ArchiveIterator(fh):
            if record.rec_type != "response" or record.http_headers is None:
                continue
            if record.http_headers.get_statuscode() != "200":
                continue
            parts = urlsplit(record.rec_headers.get_header("WARC-Target-URI"))
            if parts.hostname != "www.iana.org":
                continue
            path = parts.path + (f"?{parts.query}" if parts.query else "")
            ctype = record.http_headers.get_header("Content-Type") or "application/octet-stream"
            body = record.content_stream().read()
            if ctype.startswith("text/html"):
                for prefix in (b"https://www.iana.org", b"http://www.iana.org", b"//www.iana.org"):
                    body = body.replace(prefix, origin.encode())
            site.resources.setdefault(path, Resource(ctype, body))
    return site


def wiki_site(dump_path: Path, pdf_paths: Iterable[Path] = (), limit: int | None = None) -> Site:
    """Wikipedia articles as HTML pages under /wiki/, a hub at /, PDFs under /papers/."""
    import wikitextparser as wtp

    articles, redirects = _read_dump(dump_path, limit)
    site = Site("wiki", robots_txt="User-agent: *\nDisallow: /wiki/Special:\nCrawl-delay: 0\n")
    for title, target in redirects.items():
        if target in articles:
            site.resources[_wiki_path(title)] = Resource(
                "text/html", b"", status=301, location=_wiki_path(target)
            )
    for title, wikitext in articles.items():
        parsed = wtp.parse(_CATEGORY.sub("", _COMMENT.sub("", _REF.sub("", wikitext))))
        links: dict[str, str] = {}
        for link in parsed.wikilinks:
            target = link.title.strip().replace("_", " ")
            target = target[:1].upper() + target[1:]
            target = redirects.get(target, target)
            if target in articles and target != title and target not in links:
                links[target] = (link.text or link.title).strip()
        text = parsed.plain_text(replace_templates=True, replace_tables=True)
        site.resources[_wiki_path(title)] = Resource(
            "text/html; charset=utf-8", _article_html(title, text, links).encode("utf-8")
        )
    papers = []
    for path in pdf_paths:
        site.resources[f"/papers/{path.name}"] = Resource("application/pdf", path.read_bytes())
        papers.append(path.name)
    site.resources["/"] = Resource(
        "text/html; charset=utf-8", _hub_html(sorted(articles), papers).encode("utf-8")
    )
    return site


def _read_dump(dump_path: Path, limit: int | None) -> tuple[dict[str, str], dict[str, str]]:
    articles: dict[str, str] = {}
    redirects: dict[str, str] = {}
    with bz2.open(dump_path) as fh:
        for _event, elem in ET.iterparse(fh, events=("end",)):
            if not elem.tag.endswith("}page"):
                continue
            title = elem.findtext("{*}title") or ""
            redirect = elem.find("{*}redirect")
            if elem.findtext("{*}ns") == "0":
                if redirect is not None:
                    redirects[title] = redirect.get("title", "")
                elif limit is None or len(articles) < limit:
                    articles[title] = elem.findtext("{*}revision/{*}text") or ""
            elem.clear()
    return articles, redirects


def _wiki_path(title: str) -> str:
    return "/wiki/" + quote(title.replace(" ", "_"), safe="_(),'-.")


_HEADING = re.compile(r"^(={2,6})\s*(.*?)\s*=+\s*$")
_LIST_ITEM = re.compile(r"^[*#:;]+\s*(.*)$")


def _body_html(text: str) -> str:
    """Plain text from wikitext to HTML: == headings ==, * list items, paragraphs."""
    out: list[str] = []
    paragraph: list[str] = []

    def end_paragraph() -> None:
        if paragraph:
            out.append(f"<p>{html.escape(' '.join(paragraph))}</p>")
            paragraph.clear()

    in_list = False
    for raw in text.splitlines():
        line = raw.strip()
        heading, item = _HEADING.match(line), _LIST_ITEM.match(line)
        if in_list and not item:
            out.append("</ul>")
            in_list = False
        if not line:
            end_paragraph()
        elif heading:
            end_paragraph()
            level = min(len(heading.group(1)), 4)
            out.append(f"<h{level}>{html.escape(heading.group(2))}</h{level}>")
        elif item:
            end_paragraph()
            if not in_list:
                out.append("<ul>")
                in_list = True
            if item.group(1).strip():
                out.append(f"<li>{html.escape(item.group(1).strip())}</li>")
        else:
            paragraph.append(line)
    end_paragraph()
    if in_list:
        out.append("</ul>")
    return "\n".join(out)


def _article_html(title: str, text: str, links: dict[str, str]) -> str:
    body = _body_html(text)
    see_also = "\n".join(
        f'<li><a href="{_wiki_path(t)}">{html.escape(anchor or t)}</a></li>' for t, anchor in links.items()
    )
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)} - Sample Wiki</title></head><body>"
        f'<p><a href="/">Sample Wiki</a></p><h1>{html.escape(title)}</h1>\n{body}\n'
        f"<h2>Linked articles</h2><ul>\n{see_also}\n</ul></body></html>"
    )


def _hub_html(titles: list[str], papers: list[str]) -> str:
    items = "\n".join(f'<li><a href="{_wiki_path(t)}">{html.escape(t)}</a></li>' for t in titles)
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
