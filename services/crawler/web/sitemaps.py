"""Sitemaps: page URLs a host lists for crawlers, from robots.txt and /sitemap.xml.

Sitemap index files nest (an index of indexes is legal and so is a cycle
by mistake), so discovery is a breadth-first walk with a visited set and two
caps: sitemap files fetched and page URLs kept. Gzip sitemaps (``.xml.gz``,
served as ``application/gzip`` without a Content-Encoding) are recognised by
their magic bytes and inflated with the same byte cap as any body. Broken
XML keeps the URLs read before the break; every broken or failed sitemap is
counted in ``errors``, never raised.

Only sitemaps and page URLs on the host itself are used: the walk spends that
host's politeness budget, and a sitemap listing other hosts' pages is how
spam gets into a frontier.
"""

from __future__ import annotations

import asyncio
import logging
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import cast
from urllib.parse import urljoin
from xml.etree.ElementTree import Element, ParseError, XMLPullParser

import aiohttp

from services.crawler.web.client_session import Timeouts
from services.crawler.web.fetch import Fetch, fetch
from services.text.errors import BadUrlError
from services.text.urls import host_key as url_host_key
from services.text.urls import normalize_url

log = logging.getLogger(__name__)

MAX_SITEMAPS = 50
MAX_URLS = 50_000  # the sitemaps.org limit for one sitemap file
_GZIP_MAGIC = b"\x1f\x8b"
_URL_LINE = re.compile(r"^https?://\S+$", re.I)


@dataclass
class SitemapResult:
    """Page URLs (normalized, deduplicated, in sitemap order) and what it took to find them."""

    urls: list[str] = field(default_factory=list)
    sitemaps_fetched: int = 0
    errors: int = 0


@dataclass
class ParsedSitemap:
    """One sitemap file: ``index`` lists sitemaps, ``urlset`` and ``text`` list pages."""

    kind: str  # index | urlset | text | garbage
    locs: list[str] = field(default_factory=list)
    broken: bool = False  # unreadable or cut short: whatever was read before the break is in locs


def gunzip_capped(data: bytes, max_bytes: int) -> tuple[bytes, bool]:
    """Inflate a gzip file to at most ``max_bytes``; (bytes, complete)."""
    z = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = z.decompress(data, max_bytes + 1)
    except zlib.error:
        return b"", False
    if len(out) > max_bytes:
        return out[:max_bytes], False
    return out, z.eof


def parse_sitemap(data: bytes) -> ParsedSitemap:
    """Pure: the ``<loc>`` values of a sitemap or sitemap index, or the URLs of a text sitemap.

    Documents with a DTD or entity declarations are refused: sitemaps never
    need them, and they are the vehicle of entity-expansion bombs.
    """
    head = data[:512].lstrip().removeprefix(b"\xef\xbb\xbf").lstrip()
    if not head.startswith(b"<"):
        return _parse_text(data)
    if b"<!DOCTYPE" in data[:4096].upper() or b"<!ENTITY" in data.upper():
        return ParsedSitemap("garbage", broken=True)
    parser: XMLPullParser[Element] = XMLPullParser(events=("start", "end"))
    sitemap = ParsedSitemap("garbage")
    try:
        parser.feed(data)
        parser.close()
    except ParseError:
        sitemap.broken = True
    # Start and end events only: each is (event, element).
    for event, element in cast(Iterator[tuple[str, Element]], parser.read_events()):
        if not isinstance(element, Element):  # start/end events only: always an element
            continue
        name = element.tag.rsplit("}", 1)[-1].lower()
        if event == "start" and sitemap.kind == "garbage":
            sitemap.kind = {"sitemapindex": "index", "urlset": "urlset"}.get(name, "garbage")
            if sitemap.kind == "garbage":
                break  # an RSS feed, an HTML error page: not a sitemap
        elif event == "end" and name == "loc" and element.text and element.text.strip():
            sitemap.locs.append(element.text.strip())
    if sitemap.kind == "garbage":
        sitemap.broken = True
    return sitemap


def _parse_text(data: bytes) -> ParsedSitemap:
    """A text sitemap: one URL a line (sitemaps.org); anything else makes it garbage."""
    text = data.decode("utf-8", "replace").removeprefix("\ufeff")
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    urls = [line for line in lines if _URL_LINE.match(line)]
    if not urls:
        return ParsedSitemap("garbage", broken=True)
    return ParsedSitemap("text", urls, broken=len(urls) < len(lines))


async def discover_sitemap_urls(
    session: aiohttp.ClientSession,
    host_key: str,
    robots_sitemaps: list[str],
    *,
    max_sitemaps: int = MAX_SITEMAPS,
    max_urls: int = MAX_URLS,
    max_bytes: int,
    delay: float = 0.0,
    timeouts: Timeouts | None = None,
    fetch: Fetch = fetch,
) -> SitemapResult:
    """Walk ``host_key``'s sitemaps: robots.txt's Sitemap lines, then ``/sitemap.xml``.

    ``delay`` seconds pass between two sitemap requests (the host's politeness
    delay). A missing ``/sitemap.xml`` (the guess, not named by robots.txt) is
    not an error; a named sitemap that fails is. ``fetch`` makes the requests.
    """
    result = SitemapResult()
    host = url_host_key(normalize_url(host_key + "/"))
    queue: list[tuple[str, bool]] = []  # (url, named by robots.txt or an index)
    for raw in [*robots_sitemaps, "/sitemap.xml"]:
        url = _same_host(urljoin(host + "/", raw.strip()), host)
        if url is not None:
            queue.append((url, raw != "/sitemap.xml"))
        else:
            log.info("%s: sitemap %r is not on this host; skipped", host_key, raw)
    visited: set[str] = set()
    seen_pages: set[str] = set()
    while queue and result.sitemaps_fetched < max_sitemaps and len(result.urls) < max_urls:
        url, named = queue.pop(0)
        if url in visited:
            continue
        visited.add(url)
        if result.sitemaps_fetched and delay > 0:
            await asyncio.sleep(delay)
        fetched = await fetch(session, url, max_bytes=max_bytes, timeouts=timeouts)
        result.sitemaps_fetched += 1
        if not fetched.ok:
            if named or fetched.status not in (404, 410):
                result.errors += 1
                log.info("sitemap %s: %s", url, fetched.detail or f"HTTP {fetched.status}")
            continue
        data, complete = fetched.body, True
        if data.startswith(_GZIP_MAGIC):
            data, complete = gunzip_capped(data, max_bytes)
        sitemap = parse_sitemap(data)
        if sitemap.broken or not complete:
            result.errors += 1
            log.info(
                "sitemap %s: not a readable sitemap (%s%s); kept %d URLs",
                url,
                sitemap.kind,
                "" if complete else ", gzip corrupt or over the size cap",
                len(sitemap.locs),
            )
        for loc in sitemap.locs:
            target = _same_host(urljoin(url, loc), host)
            if target is None:
                continue
            if sitemap.kind == "index":
                queue.append((target, True))
            elif target not in seen_pages and len(result.urls) < max_urls:
                seen_pages.add(target)
                result.urls.append(target)
    return result


def _same_host(url: str, host: str) -> str | None:
    """``url`` normalized when it is on ``host`` (a normalized host key), else ``None``."""
    try:
        normalized = normalize_url(url)
    except BadUrlError:
        return None
    return normalized if url_host_key(normalized) == host else None
