"""MediaWiki XML dumps (Wikipedia's pages-articles, any wiki's Special:Export) to documents.

- ``<siteinfo>`` (optional) gives the wiki's namespaces, its page URL (``<base>``) and
  its language (the root's ``xml:lang``, else ``<base>``'s host, ``fr.wikipedia.org``);
  without it, MediaWiki's canonical namespace names, the bundle's ``url_template`` or
  ``https://<bundle>.wiki.invalid/wiki/<Title>``, and the bundle's ``language``.
- Pages of the kept namespaces (articles, ``[0]``, by default) become documents: the
  newest revision's wikitext as clean text (``wikitext``), its wiki links as links to the
  target's stable URL with their anchor text. Pages elsewhere are counted
  ``namespace``; a page without text ``empty``.
- A redirect is an alias (``redirect_to``), not a page.

Pages are cut out of the decompressed stream by ``elements`` and parsed one at a time
(ElementTree: as fast as lxml on a page-sized string here, docs/benchmarks.md).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any
from urllib.parse import quote, urlsplit

from services.archives.formats.elements import split
from services.archives.formats.warc import warc_date
from services.archives.formats.wikitext import CANONICAL, Namespaces, to_text
from services.archives.records import ArchiveRecord, Document, Skip, damaged, skipped
from services.text.errors import BadUrlError
from services.text.urls import normalize_url

PAGE = {b"<page>": b"</page>"}
_XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"
_ROOT = re.compile(rb"<mediawiki\b[^>]*>")


@dataclass
class Site:
    """What a dump says about its wiki; stored with each batch so no worker reads the head."""

    url_template: str  # "https://en.wikipedia.org/wiki/{title}"
    language: str = ""
    namespaces: dict[str, int] = field(default_factory=lambda: dict(CANONICAL))
    names: dict[int, str] = field(default_factory=dict)  # number -> the wiki's own name
    first_letter: bool = True  # titles' first letter is case-insensitive (case="first-letter")
    _links: dict[str, str] = field(default_factory=dict, repr=False, compare=False)

    def to_state(self) -> dict[str, Any]:
        return {
            "url_template": self.url_template,
            "language": self.language,
            "namespaces": self.namespaces,
            "names": {str(k): v for k, v in self.names.items()},
            "first_letter": self.first_letter,
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> Site:
        return cls(
            state["url_template"],
            state["language"],
            dict(state["namespaces"]),
            {int(k): v for k, v in state["names"].items()},
            bool(state["first_letter"]),
        )

    def title(self, raw: str) -> str:
        """A link target as the page's title: spaces for underscores, namespace and first letter
        as the wiki writes them."""
        title = " ".join(raw.replace("_", " ").split())
        prefix, colon, rest = title.partition(":")
        ns = self.namespaces.get(prefix.strip().lower()) if colon else None
        if ns is not None and ns != 0:
            rest = rest.strip()
            return f"{self.names.get(ns, prefix.strip())}:{self._first(rest)}"
        return self._first(title)

    def _first(self, title: str) -> str:
        return title[:1].upper() + title[1:] if self.first_letter else title

    def url(self, title: str) -> str:
        return self.url_template.replace("{title}", quote(title.replace(" ", "_"), safe=";:@$!*(),/~"))

    def link_url(self, raw: str) -> str:
        """A link target's normalized page URL ("" when it cannot be one), remembered: the same
        targets recur on page after page."""
        url = self._links.get(raw)
        if url is None:
            if len(self._links) > 200_000:
                self._links.clear()
            try:
                url = normalize_url(self.url(self.title(raw)))
            except BadUrlError:
                url = ""
            self._links[raw] = url
        return url


def read_site(head: bytes, *, language: str = "", url_template: str = "", bundle_name: str = "wiki") -> Site:
    """The ``Site`` of a dump from its first bytes (up to its first ``<page>``)."""
    template = url_template or f"https://{_label(bundle_name)}.wiki.invalid/wiki/{{title}}"
    site = Site(template, language)
    root = _ROOT.search(head)
    if root is not None:
        attributes = ET.fromstring(root.group(0).rstrip(b">").rstrip(b"/") + b"/>").attrib
        site.language = language or attributes.get(_XML_LANG, "")
    start, end = head.find(b"<siteinfo>"), head.find(b"</siteinfo>")
    if start < 0 or end < 0:
        return site
    info = _strip_ns(ET.fromstring(head[start : end + len(b"</siteinfo>")]))
    base = info.findtext("base") or ""
    if base and not url_template:
        parts = urlsplit(base)
        path = parts.path.rsplit("/", 1)[0] + "/"
        site.url_template = f"{parts.scheme or 'https'}://{parts.netloc}{path}{{title}}"
        if not site.language:
            host = parts.hostname or ""
            site.language = (
                host.split(".")[0] if host.count(".") >= 2 and len(host.split(".")[0]) <= 3 else ""
            )
    site.first_letter = (info.findtext("case") or "first-letter") == "first-letter"
    for ns in info.iter("namespace"):
        key = int(ns.get("key", "0"))
        if ns.text:
            site.namespaces[ns.text.strip().lower()] = key
            site.names[key] = ns.text.strip()
    return site


def _label(name: str) -> str:
    return re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-")[:63] or "wiki"


def _strip_ns(element: ET.Element) -> ET.Element:
    for node in element.iter():
        node.tag = node.tag.rsplit("}", 1)[-1]
    return element


def read_pages(
    stream: IO[bytes],
    name: str,
    start: int,
    stop: int,
    *,
    site: Site,
    keep: frozenset[int],
    cap: int,
    fetched_at: float,
) -> Iterator[ArchiveRecord]:
    """The pages that start in [start, stop) of a dump's decompressed stream (at ``start``)."""
    for element in split(stream, start, stop, PAGE, cap):
        if element.data is None:
            if element.truncated:
                yield damaged(
                    name,
                    element.offset,
                    fetched_at,
                    Skip.TRUNCATED,
                    element.damage or "the dump ends inside a <page>",
                )
            else:
                yield skipped("", element.offset, fetched_at, Skip.TOO_LARGE, "page")
            continue
        try:
            page = ET.fromstring(element.data)
        except ET.ParseError as exc:
            yield damaged(
                name, element.offset, fetched_at, Skip.CORRUPT, f"<page> is not well-formed XML ({exc})"
            )
            continue
        yield page_record(page, element.offset, site, keep, fetched_at)


def page_record(
    page: ET.Element, offset: int, site: Site, keep: frozenset[int], default_time: float
) -> ArchiveRecord:
    title = (page.findtext("title") or "").strip()
    ns_text = (page.findtext("ns") or "").strip()
    ns = int(ns_text) if ns_text.lstrip("-").isdigit() else _ns_of(title, site)
    revisions = page.findall("revision")
    newest = max(revisions, key=lambda r: r.findtext("timestamp") or "", default=None)
    when = (warc_date(newest.findtext("timestamp") or "") if newest is not None else None) or default_time
    try:
        url = normalize_url(site.url(title)) if title else ""
    except BadUrlError:
        url = ""
    if not url:
        return skipped("", offset, when, Skip.CORRUPT, "page without a usable title")
    if ns not in keep:
        return skipped(url, offset, when, Skip.NAMESPACE, str(ns))
    redirect = page.find("redirect")
    if redirect is not None and redirect.get("title"):
        target = site.title(redirect.get("title", "").split("#", 1)[0])
        try:
            return ArchiveRecord(url, offset, when, redirect_to=normalize_url(site.url(target)), title=title)
        except BadUrlError:
            return skipped(url, offset, when, Skip.CORRUPT, "redirect to an unusable title")
    wikitext = (newest.findtext("text") if newest is not None else "") or ""
    if not wikitext.strip():
        return skipped(url, offset, when, Skip.EMPTY, "page")
    text, raw_links = to_text(wikitext, Namespaces(site.namespaces), keep, site.link_url)
    if not text:
        return skipped(url, offset, when, Skip.EMPTY, "page")
    links: dict[str, str] = {}
    for link, anchor in raw_links:
        if link and link != url and not links.get(link):
            links[link] = anchor
    document = Document(title, text, list(links.items()), site.language)
    return ArchiveRecord(url, offset, when, document=document)


def _ns_of(title: str, site: Site) -> int:
    prefix, colon, _rest = title.partition(":")
    return site.namespaces.get(prefix.strip().lower(), 0) if colon else 0
