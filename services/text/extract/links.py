"""A parsed page's links: where each leads and what it is called.

Anchors, image maps, frames and iframes, ``<link rel=next|prev|alternate>``, navigation
written in JavaScript and jump menus, each read as a browser reads it
(``browser_href``), with the label a search engine gives it (an image link's ``alt``).
Pure functions over a selectolax tree; ``html.parse_html`` calls them.
"""

from __future__ import annotations

import contextlib
import re
from urllib.parse import quote, urljoin, urlsplit

from selectolax.lexbor import LexborHTMLParser
from selectolax.lexbor import LexborNode as Node

from services.text.extract.whitespace import clean_text
from services.text.urls import browser_href

_FOLLOW_SCHEMES = {"http", "https"}
# Most links on the web are absolute http(s) URLs; they skip urljoin, which at 20+ links
# a page is the largest cost of parsing a page (docs/performance-notes.md).
_ABSOLUTE = ("http://", "https://", "HTTP://", "HTTPS://")
_NOT_FOLLOWED = ("#", "javascript:", "mailto:", "tel:", "data:")


LINK_ATTRIBUTES = (("a", "href"), ("area", "href"), ("frame", "src"), ("iframe", "src"))
ANCHORS = LINK_ATTRIBUTES[:1]


def collect_links(
    tree: LexborHTMLParser,
    base: str,
    links: list[tuple[str, str]],
    anchors: list[tuple[Node, int]],
    tags: tuple[tuple[str, str], ...],
) -> None:
    """Append the page's followable links as (absolute URL, label); ``anchors`` gets the
    ``<a>`` nodes with text, for link-list removal.

    ``<a href>`` labelled by its text, image-map ``<area href>`` by its ``alt``, and the
    ``src`` of ``<frame>`` and ``<iframe>`` by their ``title``: old sites navigate by image
    maps and framesets, whose pages are reachable no other way (Nutch and Heritrix follow
    all four). ``tags``: which of them to look for. An href is read as a browser reads it
    (``browser_href``)."""
    for tag, attribute in tags:
        for node in tree.tags(tag):
            attributes = node.attributes
            url = followable(base, attributes.get(attribute) or "")
            if url is None or "nofollow" in (attributes.get("rel") or "").lower().split():
                continue
            if tag == "a":
                label = clean_text(node.text(deep=True))
                if label:
                    anchors.append((node, len(label)))
                else:
                    label = _image_label(node)
            else:
                label = clean_text(attributes.get("alt" if tag == "area" else "title") or "")
            links.append((url, label))


# <link> elements that lead to other pages of the site: the next and previous page of a
# paginated archive or forum thread (often the only way to page 2 is a script or a form),
# and the page in other languages (rel=alternate hreflang). Not feeds, stylesheets, icons.
_RELATED = frozenset({"next", "prev", "previous", "alternate"})
_PAGE_TYPES = frozenset({"text/html", "application/xhtml+xml"})


def link_elements(tree: LexborHTMLParser, base: str) -> tuple[str, list[tuple[str, str]]]:
    """The page's ``<link>`` elements: its canonical URL (absolute, the first given; "" when
    none) and the pages ``_RELATED`` leads to, as (URL, title)."""
    canonical, related = "", list[tuple[str, str]]()
    for link in tree.tags("link"):
        attributes = link.attributes
        rel = (attributes.get("rel") or "").lower().split()
        if "canonical" in rel and not canonical:
            href = browser_href(attributes.get("href") or "")
            if href:
                with contextlib.suppress(ValueError):
                    canonical = urljoin(base, href)
        elif _RELATED.intersection(rel) and (attributes.get("type") or "text/html").lower() in _PAGE_TYPES:
            _append_link(
                base, attributes.get("href") or "", clean_text(attributes.get("title") or ""), related
            )
    return canonical, related


# Navigation written in JavaScript, as old sites wrote it: ``location.href = "x.html"``,
# ``location.replace('x.html')``, ``window.open("x.html")``, Dreamweaver's
# ``MM_goToURL('parent','x.html')``; only string literals (no expressions), in scripts or
# in ``onclick`` attributes alike. Nutch (parse-js) and Heritrix (ExtractorJS) follow URLs
# found in JavaScript too; without them a site whose home page only redirects by script,
# or navigates by buttons, ends at its first page.
_SCRIPT_NAVIGATION = re.compile(
    r"""(?:location(?:\.href)?\s*=\s*|location\.(?:replace|assign)\(\s*|window\.open\(\s*"""
    r"""|MM_goToURL\([^)]*?,\s*)(["'])([^"'<>\s\\]{1,500}?)\1"""
)
_SCRIPT_KEYWORDS = ("location", "window.open(", "MM_goToURL(")
_SCRIPT_WORDS = ("location", "window.open(", "jumpmenu", "mm_gotourl")  # in the lower-cased page


def script_links(
    tree: LexborHTMLParser, html: str, low: str, base: str, links: list[tuple[str, str]]
) -> None:
    """Append the URLs the page navigates to by script (``_SCRIPT_NAVIGATION``) and the
    choices of its jump menus (a ``<select>`` whose ``onchange`` goes to the chosen
    ``<option value>``), labelled by the option's text. ``low``: the page lower-cased, whose
    substring tests skip all of it on the pages (most) that navigate by no script."""
    if not any(word in low for word in _SCRIPT_WORDS):
        return
    # str.find to each keyword, then the pattern anchored there: one regex scan of the page
    # has no literal prefix to skip by and costs about ten times as much.
    for keyword in _SCRIPT_KEYWORDS:
        at = html.find(keyword)
        while at >= 0:
            match = _SCRIPT_NAVIGATION.match(html, at)
            if match is not None:
                _append_link(base, match.group(2), "", links)
            at = html.find(keyword, at + len(keyword))
    for menu in tree.tags("select"):
        action = menu.attributes.get("onchange") or ""
        if "location" in action or "jumpMenu" in action or "goToURL" in action:
            for option in menu.css("option"):
                _append_link(base, option.attributes.get("value") or "", clean_text(option.text()), links)


def followable(base: str, target: str) -> str | None:
    """The absolute http(s) URL a link's ``target`` leads to, read as a browser reads it
    (``browser_href``); None for fragments, scripts, mail and other schemes."""
    href = browser_href(target)
    if not href or href.startswith(_NOT_FOLLOWED):
        return None
    if href.startswith(_ABSOLUTE):
        return href  # already absolute: the crawler's normalize_url does the rest
    try:
        url = urljoin(base, href)
    except ValueError:  # malformed IPv6 literal and the like
        return None
    return url if urlsplit(url).scheme in _FOLLOW_SCHEMES else None


def _append_link(base: str, target: str, label: str, links: list[tuple[str, str]]) -> None:
    url = followable(base, target)
    if url is not None:
        links.append((url, label))


def _image_label(anchor: Node) -> str:
    """The anchor text of a link that is an image: its ``alt`` (or ``title``), as search
    engines read image links. Old sites' menus are image buttons; without it their links
    carry no words into the anchor-text field."""
    for node in anchor.traverse(include_text=False):
        if node.tag == "img":
            attributes = node.attributes
            return clean_text(attributes.get("alt") or attributes.get("title") or "")
    return ""


def legacy_query(url: str, charset: str) -> str:
    """``url`` with the non-ASCII characters of its query percent-encoded in ``charset``,
    the page's own encoding, as browsers send them (WHATWG URL: the query of a link in a
    windows-1252 page is encoded in windows-1252, the path always in UTF-8).

    ``search.php?name=Müller`` on a Latin-1 page asks for ``name=M%FCller``: the server
    wrote its script for those bytes, and UTF-8's ``M%C3%BCller`` finds nothing. A character
    the charset lacks is sent as ``&#NNN;``, as browsers do."""
    if url.isascii() or "?" not in url:
        return url
    head, _, query = url.partition("?")
    query, hash_mark, fragment = query.partition("#")
    if query.isascii():
        return url
    encoded = quote(query, safe=_QUERY_SAFE, encoding=charset, errors="xmlcharrefreplace")
    return f"{head}?{encoded}{hash_mark}{fragment}"


# What stays as written in a query (WHATWG's query percent-encode set is the rest); "#" here can
# only come from a "&#NNN;" reference (the fragment is cut off first), and must not end the query.
_QUERY_SAFE = "".join(chr(c) for c in range(0x21, 0x7F) if chr(c) not in '"#<>`')
