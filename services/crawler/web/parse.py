"""Fetched bytes to record fields: pure functions, no I/O.

HTML goes through selectolax (``services.text.extract.html``), PDF through pypdfium2
(``services.text.extract.pdf``). Links come out normalized and deduplicated, so that
``url_id(link.url)`` is the ``url_id`` of the target's document row and the
PageRank job never has to normalize again.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from services.crawler.errors import ParseError
from services.crawler.web.fetch_result import FetchResult
from services.storage.formats.blocks import SNIFFED_TYPES, ContentType, mime_type
from services.storage.formats.records import Link, LinksPickledFlat
from services.text.analysis.lang import identify
from services.text.errors import BadUrlError, PdfError
from services.text.extract.charset import header_charset
from services.text.extract.html import parse_html, refresh_target
from services.text.extract.pdf import parse_pdf
from services.text.urls import normalize_url

INDEXABLE = (ContentType.HTML, ContentType.PDF)
MAX_ANCHOR_CHARS = 300  # anchor text beyond this is a paragraph wrapped in <a>, not a label
# Out-links kept per page, in document order (Nutch's db.max.outlinks.per.page, 100 by
# default, for the same reason): a site's hub pages list hundreds, while a generated
# listing or a link farm lists tens of thousands, and one such page would put them all in
# the frontier, the record and the link graph at once.
MAX_LINKS = 1000


MAX_REFRESH_DELAY = 10.0  # seconds: a refresh this soon is a redirect, not a page


@dataclass
class ParsedDoc(LinksPickledFlat):
    content_type: ContentType
    title: str = ""
    text: str = ""
    description: str = ""
    lang: str = ""
    links: list[Link] = field(default_factory=list)
    keywords: str = ""  # <meta name=keywords>
    nav: str = ""  # menus, link lists, form words: seen beside the text (services.text.extract.boilerplate)
    noindex: bool = False  # <meta name=robots content=noindex>: follow links, store nothing
    noarchive: bool = False  # robots noarchive (meta or X-Robots-Tag): stored, no cached copy shown
    charset: str = ""  # the charset an HTML body was decoded with
    refresh_url: str = ""  # <meta http-equiv=refresh> target (normalized), "" when none
    refresh_delay: float = 0.0
    canonical: str = ""  # <link rel=canonical> (normalized), "" when none or the page itself
    links_dropped: int = 0  # distinct links past MAX_LINKS, left out
    links_bad: int = 0  # links whose URL no crawl can use (normalize_url refused it), left out


def accept_content_type(header: str) -> bool:
    """Is a body with this Content-Type worth downloading?

    HTML and PDF are; so are a missing or generic type (``SNIFFED_TYPES``), which
    is sniffed after reading.
    """
    mime = mime_type(header)
    return mime in SNIFFED_TYPES or ContentType.from_mime(mime) in INDEXABLE


def classify(content_type: str, body: bytes) -> ContentType:
    """The body's type: magic bytes first, then the header, then sniffing a generic header.

    Servers mislabel: a PDF sent as text/html is still a PDF (its first bytes
    say so), and an HTML error page sent as application/pdf is HTML. A type
    that is neither (text/plain, images) is trusted, as browsers do.
    """
    head = body[:1024].lstrip().removeprefix(b"\xef\xbb\xbf").lstrip()
    if head.startswith(b"%PDF-"):
        return ContentType.PDF
    ctype = ContentType.from_mime(content_type)
    if ctype == ContentType.PDF and _looks_like_html(head):
        return ContentType.HTML
    if ctype in INDEXABLE:
        return ctype
    if mime_type(content_type) in SNIFFED_TYPES and _looks_like_html(head):
        return ContentType.HTML
    return ctype


def _looks_like_html(head: bytes) -> bool:
    return head[:15].lower().startswith((b"<!doctype html", b"<html", b"<head", b"<body", b"<!--"))


def normalize_links(pairs: Iterable[tuple[str, str]], page_url: str) -> tuple[list[Link], int]:
    """Normalize, drop unusable and self links, dedupe keeping the first non-empty anchor;
    with the number of links whose URL no crawl can use (``normalize_url`` refused it:
    ``http://[::1/``, a port of 99999, an empty host), skipped and counted, never an error.

    A page's link to itself says nothing about its importance, so it is left
    out of the link graph. All of them: ``parse_document`` applies ``MAX_LINKS``.
    """
    links: dict[str, Link] = {}
    bad = 0
    for raw, anchor in pairs:
        try:
            url = normalize_url(raw)
        except BadUrlError:
            bad += 1
            continue
        if url == page_url:
            continue
        anchor = anchor[:MAX_ANCHOR_CHARS]
        link = links.get(url)
        if link is None:
            links[url] = Link(url, anchor)
        elif not link.anchor and anchor:
            link.anchor = anchor
    return list(links.values()), bad


def parse_document(result: FetchResult, page_url: str) -> ParsedDoc:
    """Parse a successful fetch whose document URL (normalized final URL) is ``page_url``.

    Relative links resolve against the final URL, as a browser would after a
    redirect. Raises ``ParseError`` for an empty body, a type we do not index or
    an unreadable PDF.
    """
    if not result.body.strip():
        delay, target = _header_refresh(result.refresh, result.final_url) if result.refresh else (0.0, "")
        if target and delay <= MAX_REFRESH_DELAY:  # a redirect by header alone: nothing to store
            return ParsedDoc(content_type=ContentType.HTML, refresh_url=target, refresh_delay=delay)
        raise ParseError(f"{page_url}: empty body (status {result.status})", "empty")
    ctype = classify(result.content_type, result.body)
    if ctype == ContentType.HTML:
        page = parse_html(result.body, result.final_url, header_charset(result.content_type))
        links, bad_links = normalize_links(page.links, page_url)
        parsed = ParsedDoc(
            content_type=ctype,
            title=page.title,
            text=page.text,
            description=page.description,
            keywords=page.keywords,
            nav=page.nav,
            lang=identify(f"{page.title} {page.description} {page.text}", page.lang),
            links=links[:MAX_LINKS],
            links_dropped=max(0, len(links) - MAX_LINKS),
            links_bad=bad_links,
            noindex=page.noindex,
            noarchive=page.noarchive,
            charset=page.charset,
            refresh_url=_normalized_or_empty(page.refresh_url),
            refresh_delay=page.refresh_delay,
            canonical=_normalized_or_empty(page.canonical),
        )
        if not parsed.refresh_url and result.refresh:
            parsed.refresh_delay, parsed.refresh_url = _header_refresh(result.refresh, result.final_url)
        if parsed.canonical and parsed.canonical != page_url:
            # The site names the URL it prefers: crawl that one too; if its bytes are these,
            # duplicate detection folds the two (docId), as it does for any copy.
            parsed.links.append(Link(parsed.canonical, parsed.title))
        return parsed
    if ctype == ContentType.PDF:
        try:
            pdf = parse_pdf(result.body, name=page_url)
        except PdfError as exc:
            raise ParseError(str(exc), "pdf") from exc
        return ParsedDoc(content_type=ctype, title=pdf.title, text=pdf.text, lang=identify(pdf.text))
    raise ParseError(
        f"{page_url}: content type {result.content_type or 'unknown'!r} is neither HTML nor PDF", "type"
    )


def _header_refresh(value: str, base: str) -> tuple[float, str]:
    """The ``Refresh`` response header, which browsers obey as they obey ``<meta
    http-equiv=refresh>`` (old servers and some CMSs redirect with it): (delay, normalized
    target), or (0, "") when it names no usable target."""
    refresh = refresh_target(value, base)
    return (refresh[0], _normalized_or_empty(refresh[1])) if refresh is not None else (0.0, "")


def _normalized_or_empty(url: str) -> str:
    """A page-declared URL in normal form; "" when absent or not crawlable (it is only a hint)."""
    if not url:
        return ""
    try:
        return normalize_url(url)
    except BadUrlError:
        return ""
