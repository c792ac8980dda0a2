"""HTML to title, text, description and links, with selectolax (Lexbor).

selectolax parses tens of times faster than BeautifulSoup+lxml on the same pages
(``python -m benchmarks.parsers``), and this runs once per fetched page in the
crawler's hot loop.
Where it follows the HTML standard into a useless result (a ``<title>`` never
closed swallows the whole page as title text, leaving no body), BeautifulSoup
with Python's forgiving ``html.parser`` repairs the markup and the page is
parsed again: the slow parser runs only on pages that need it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import urljoin

from bs4 import BeautifulSoup, NavigableString, PageElement, Tag
from selectolax.lexbor import LexborHTMLParser
from selectolax.lexbor import LexborNode as Node

from services.text.extract.boilerplate import main_text
from services.text.extract.charset import decode_body
from services.text.extract.forms import form_text
from services.text.extract.leftovers import tidy_leftovers
from services.text.extract.links import (
    ANCHORS,
    LINK_ATTRIBUTES,
    collect_links,
    legacy_query,
    link_elements,
    script_links,
)
from services.text.extract.robots_directives import NOARCHIVE, NOFOLLOW, NOINDEX, meta_directives
from services.text.extract.titles import placeholder_title
from services.text.extract.whitespace import clean_text
from services.text.urls import browser_href, header_href

_SKIP_TAGS = ["script", "style", "noscript", "template", "svg", "iframe", "object", "noframes"]
# A title this long with no body text, or one holding markup, is a <title> never closed.
_SWALLOWED_TITLE_CHARS = 1000
_MARKUP = re.compile(r"<(?:/?[a-zA-Z][a-zA-Z0-9]*)[\s>/]")
_REPAIRED_TITLE_CHARS = 200


@dataclass
class ParsedPage:
    title: str = ""
    text: str = ""  # the body's text without its boilerplate (services.text.extract.boilerplate)
    # What a reader sees beside the content: the boilerplate cut out of ``text`` (menus,
    # headers, footers, sidebars, link lists) and the form words no text holds (forms)
    nav: str = ""
    description: str = ""
    keywords: str = ""
    lang: str = ""
    links: list[tuple[str, str]] = field(default_factory=list)  # (absolute URL, anchor text)
    noindex: bool = False
    nofollow: bool = False
    noarchive: bool = False  # robots "noarchive" (or Bing's "nocache"): show no cached copy
    charset: str = ""  # the charset the text was decoded with ("" when given text)
    refresh_url: str = ""  # <meta http-equiv=refresh> target, absolute, when its delay is short
    refresh_delay: float = 0.0
    canonical: str = ""  # <link rel=canonical href>, absolute


def parse_html(body: bytes | str, base_url: str, header_charset: str | None = None) -> ParsedPage:
    if isinstance(body, str):
        html, charset = body, ""
    else:
        decoded = decode_body(body, header_charset)
        html, charset = decoded.text, decoded.charset
    page = _parse(html, base_url, charset)
    if title_swallowed_page(page):
        page = _parse(repair_unclosed_title(html), base_url, charset)
    if charset and not charset.startswith("utf"):
        page.links = [(legacy_query(url, charset), label) for url, label in page.links]
    return page


_REFRESH = re.compile(r"""^\s*(\d+(?:\.\d*)?)?\s*[;,]?\s*(?:url\s*=\s*)?(["']?)(.*?)\2\s*$""", re.I | re.S)


def parse_refresh(content: str) -> tuple[float, str] | None:
    """``<meta http-equiv=refresh content=...>`` as (delay, target), as browsers read it:
    ``"0; url=/new"``, ``"5;URL='page.html'"``, ``"0;/new"``, ``"3"`` (no target)."""
    match = _REFRESH.match(content)
    if match is None or (match.group(1) is None and not match.group(3)):
        return None
    delay = float(match.group(1) or 0)
    target = match.group(3).strip()
    if target.lower().startswith("url="):
        target = target[4:].strip().strip("\"'")
    return delay, target


def refresh_target(content: str, base: str) -> tuple[float, str] | None:
    """(delay, absolute target) of a refresh, from ``<meta http-equiv=refresh>`` or from the
    ``Refresh`` response header (browsers obey both alike); None without a usable target.
    The target is read as browsers read a header's (``header_href``: bytes that were not
    UTF-8 kept as sent; a page's decoded text has none)."""
    refresh = parse_refresh(content)
    if refresh is None or not refresh[1]:
        return None
    try:
        return refresh[0], urljoin(base, header_href(refresh[1]))
    except ValueError:  # a malformed target is no redirect
        return None


def title_swallowed_page(page: ParsedPage) -> bool:
    """Whether the title took the page: no body text, and a title too long or holding tags."""
    return not page.text and (len(page.title) > _SWALLOWED_TITLE_CHARS or bool(_MARKUP.search(page.title)))


def repair_unclosed_title(html: str) -> str:
    """The page with its ``<title>`` closed where its own text ends.

    Python's ``html.parser`` (through BeautifulSoup) does not treat title as raw
    text, so the tags after an unclosed ``<title>`` become its children: the
    leading text stays the title and the children move out after it. A title of
    plain text that runs on (no tags at all) keeps its first words as the title
    and all of it as body text.
    """
    soup = BeautifulSoup(html, "html.parser")
    title = soup.find("title")
    if not isinstance(title, Tag):
        return html
    children = list(title.children)
    split = next((i for i, c in enumerate(children) if isinstance(c, Tag)), len(children))
    leading = clean_text("".join(str(c) for c in children[:split] if isinstance(c, NavigableString)))
    rest = [c.extract() for c in children[split:]]
    if not rest and len(leading) > _REPAIRED_TITLE_CHARS:
        paragraph = soup.new_tag("p")
        paragraph.string = leading
        rest = [paragraph]
        leading = leading[:_REPAIRED_TITLE_CHARS].rsplit(" ", 1)[0] + " …"
    title.clear()
    title.append(leading)
    anchor: PageElement = title
    for node in rest:
        anchor.insert_after(node)
        anchor = node
    return str(soup)


def _parse(html: str, base_url: str, charset: str) -> ParsedPage:
    tree = LexborHTMLParser(html)
    page = ParsedPage(charset=charset)
    # tags() walks the tree in C; a CSS selector is compiled on every call and costs
    # many times more, four or five a page in the hot loop (docs/performance-notes.md).
    base = base_url
    for node in tree.tags("base"):
        href = browser_href(node.attributes.get("href") or "")
        if href:
            base = urljoin(base_url, href)
            break

    titles = tree.tags("title")
    if titles:
        page.title = clean_text(titles[0].text(deep=True))
    if not page.title or placeholder_title(page.title):
        page.title = _first_heading(tree) or page.title
    html_nodes = tree.tags("html")
    if html_nodes:
        page.lang = (html_nodes[0].attributes.get("lang") or "").strip().lower()

    for meta in tree.tags("meta"):
        attributes = meta.attributes
        name = (attributes.get("name") or "").strip().lower()
        if not name:
            if (attributes.get("http-equiv") or "").strip().lower() == "refresh":
                refresh = refresh_target(attributes.get("content") or "", base)
                if refresh is not None:
                    page.refresh_delay, page.refresh_url = refresh
            continue
        content = clean_text(attributes.get("content") or "")
        if name == "description":
            page.description = content
        elif name == "keywords":
            page.keywords = content
        elif name == "robots":
            directives = meta_directives(content)
            page.noindex = bool(directives & NOINDEX)
            page.nofollow = bool(directives & NOFOLLOW)
            page.noarchive = bool(directives & NOARCHIVE)

    page.canonical, related = link_elements(tree, base)  # related: <link rel=next|prev|alternate>

    anchors: list[tuple[Node, int]] = []  # followed links' nodes and their (cleaned) text's length
    low = html.lower()
    # Image maps, frames and iframes: one regex over the page decides whether the tree is
    # walked for them, tag by tag; most pages have none.
    embeds = _EMBEDS.search(low) is not None
    if not page.nofollow:
        collect_links(tree, base, page.links, anchors, LINK_ATTRIBUTES if embeds else ANCHORS)
        page.links += related
        script_links(tree, html, low, base, page.links)
    # A <noframes> holds the page offered to browsers without frames: the parser keeps it as
    # raw markup, so it is parsed on its own, for its links and, on a frameset page (no
    # body), for the page's text.
    frameset = tree.body is None and bool(tree.tags("frameset"))
    fallback = []
    for noframes in tree.tags("noframes") if embeds else ():
        inner = LexborHTMLParser(noframes.text(deep=True))
        if not page.nofollow:
            collect_links(inner, base, page.links, [], LINK_ATTRIBUTES)
        if frameset and inner.body is not None:
            inner.strip_tags(_SKIP_TAGS)
            fallback.append(inner.body.text(deep=True, separator=" "))

    tree.strip_tags(_SKIP_TAGS)
    if frameset:
        page.text = clean_text(" ".join(fallback))  # the frames' pages are crawled as links
        return page
    body_node = tree.body or tree.root
    if body_node is not None:
        # Read before the furniture leaves the tree: a login form sits in the header.
        forms = form_text(tree) if "<input" in low or "<textarea" in low else ""
        split = main_text(tree, low, anchors, clean_text(body_node.text(deep=True, separator=" ")))
        page.text = tidy_leftovers(split.main)
        page.nav = f"{split.nav} {forms}".strip()
    return page


_HEADINGS = ("h1", "h2", "h3")
_MAX_HEADING_TITLE = 200


def _first_heading(tree: LexborHTMLParser) -> str:
    """The page's first non-empty heading, highest level first: the title of a page whose
    ``<title>`` is missing or an authoring tool's default (``titles.placeholder_title``)."""
    for tag in _HEADINGS:
        for node in tree.tags(tag):
            text = clean_text(node.text(deep=True))
            if text:
                return text[:_MAX_HEADING_TITLE]
    return ""


_EMBEDS = re.compile(r"<(?:area|i?frame|noframes)[\s>/]")  # searched in the lower-cased page
