"""HTML to title, text, description and links, with selectolax (Lexbor).

selectolax parses ~28x faster than BeautifulSoup+lxml on the same pages
(NOTES.md), and this runs once per fetched page in the crawler's hot loop.
Where it follows the HTML standard into a useless result (a ``<title>`` never
closed swallows the whole page as title text, leaving no body), BeautifulSoup
with Python's forgiving ``html.parser`` repairs the markup and the page is
parsed again: the slow parser runs only on pages that need it.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urljoin, urlsplit

from bs4 import BeautifulSoup, NavigableString, PageElement, Tag
from selectolax.lexbor import LexborHTMLParser
from selectolax.lexbor import LexborNode as Node

from services.text.charset import decode_body
from services.text.robots_directives import NOARCHIVE, NOFOLLOW, NOINDEX, meta_directives
from services.text.titles import placeholder_title
from services.text.urls import browser_href, header_href

_SKIP_TAGS = ["script", "style", "noscript", "template", "svg", "iframe", "object", "noframes"]
_FOLLOW_SCHEMES = {"http", "https"}
# Most links on the web are absolute http(s) URLs; they skip urljoin (about
# 10 us a link, 20+ links a page: the largest cost of parsing a page).
_ABSOLUTE = ("http://", "https://", "HTTP://", "HTTPS://")
# A title this long with no body text, or one holding markup, is a <title> never closed.
_SWALLOWED_TITLE_CHARS = 1000
_MARKUP = re.compile(r"<(?:/?[a-zA-Z][a-zA-Z0-9]*)[\s>/]")
_REPAIRED_TITLE_CHARS = 200


@dataclass
class ParsedPage:
    title: str = ""
    text: str = ""
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


def clean_text(text: str) -> str:
    """Runs of whitespace to one space (str.split: the same Unicode whitespace as ``\\s``, 3x faster)."""
    return " ".join(text.split())


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
        page.links = [(_legacy_query(url, charset), label) for url, label in page.links]
    return page


def _legacy_query(url: str, charset: str) -> str:
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
    # tags() walks the tree in C; a CSS selector is compiled on every call and
    # costs ~15x more (0.06 ms each, four or five per page in the hot loop).
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

    related: list[tuple[str, str]] = []  # <link rel=next|prev|alternate>: followed with the links
    for link in tree.tags("link"):
        attributes = link.attributes
        rel = (attributes.get("rel") or "").lower().split()
        if "canonical" in rel and not page.canonical:
            href = browser_href(attributes.get("href") or "")
            if href:
                with contextlib.suppress(ValueError):
                    page.canonical = urljoin(base, href)
        elif _RELATED.intersection(rel) and (attributes.get("type") or "text/html").lower() in _PAGE_TYPES:
            _append_link(
                base, attributes.get("href") or "", clean_text(attributes.get("title") or ""), related
            )

    anchors: list[tuple[Node, int]] = []  # followed links' nodes and their (cleaned) text's length
    low = html.lower()
    # Image maps, frames and iframes: one regex over the page (4 us) decides whether the
    # tree is walked for them (3.5 us a tag); most pages have none.
    embeds = _EMBEDS.search(low) is not None
    if not page.nofollow:
        _collect_links(tree, base, page.links, anchors, _LINK_ATTRIBUTES if embeds else _ANCHORS)
        page.links += related
        if any(word in low for word in _SCRIPT_WORDS):
            _script_links(tree, html, base, page.links)
    # A <noframes> holds the page offered to browsers without frames: the parser keeps it as
    # raw markup, so it is parsed on its own, for its links and, on a frameset page (no
    # body), for the page's text.
    frameset = tree.body is None and bool(tree.tags("frameset"))
    fallback = []
    for noframes in tree.tags("noframes") if embeds else ():
        inner = LexborHTMLParser(noframes.text(deep=True))
        if not page.nofollow:
            _collect_links(inner, base, page.links, [], _LINK_ATTRIBUTES)
        if frameset and inner.body is not None:
            inner.strip_tags(_SKIP_TAGS)
            fallback.append(inner.body.text(deep=True, separator=" "))

    tree.strip_tags(_SKIP_TAGS)
    if frameset:
        page.text = clean_text(" ".join(fallback))  # the frames' pages are crawled as links
        return page
    body_node = tree.body or tree.root
    if body_node is not None:
        page.text = clean_text(body_node.text(deep=True, separator=" "))
        if _has_furniture(tree, low):
            page.text = _without_boilerplate(tree, page.text)
        elif len(anchors) >= _MIN_LIST_LINKS:
            page.text = _without_link_lists(anchors, page.text)
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


_NOT_FOLLOWED = ("#", "javascript:", "mailto:", "tel:", "data:")


def _collect_links(
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
            url = _followable(base, attributes.get(attribute) or "")
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


def _script_links(tree: LexborHTMLParser, html: str, base: str, links: list[tuple[str, str]]) -> None:
    """Append the URLs the page navigates to by script (``_SCRIPT_NAVIGATION``) and the
    choices of its jump menus (a ``<select>`` whose ``onchange`` goes to the chosen
    ``<option value>``), labelled by the option's text."""
    # str.find to each keyword, then the pattern anchored there: one regex scan of the page
    # cost 70-280 us (no literal prefix to skip by), this a tenth of that.
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


def _followable(base: str, target: str) -> str | None:
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
    url = _followable(base, target)
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


_LINK_ATTRIBUTES = (("a", "href"), ("area", "href"), ("frame", "src"), ("iframe", "src"))
_ANCHORS = _LINK_ATTRIBUTES[:1]
_EMBEDS = re.compile(r"<(?:area|i?frame|noframes)[\s>/]")  # searched in the lower-cased page


# Page furniture: menus, site headers and footers, sidebars (HTML5 elements and ARIA roles).
_BOILERPLATE_TAGS = ["nav", "header", "footer", "aside"]
_BOILERPLATE_ROLES = '[role="navigation"], [role="banner"], [role="contentinfo"], [role="complementary"]'
_ROLE_ATTRIBUTE = re.compile(r"\brole\s*=")


def _has_furniture(tree: LexborHTMLParser, low: str) -> bool:
    """Whether the page marks furniture: the elements from the parsed tree (C, ~1 us each) and a
    plain substring test of the lower-cased page (``low``) before the role regex. One
    case-insensitive regex over the page for both cost 175 us on a 5 KB page, more than the
    rest of the parse."""
    if any(tree.tags(tag) for tag in _BOILERPLATE_TAGS):
        return True
    return "role" in low and _ROLE_ATTRIBUTE.search(low) is not None


_MIN_MAIN_SHARE = 0.2  # less main text than this (or < 200 chars): the markup is not trusted


def _without_boilerplate(tree: LexborHTMLParser, full: str) -> str:
    """The body text without page furniture, so menus and footers neither match queries nor
    fill snippets (their links were already taken). A page whose "furniture" holds nearly all
    its text (content wrapped in <header>, say) keeps its full text."""
    for node in tree.css(_BOILERPLATE_ROLES):
        node.decompose()
    tree.strip_tags(_BOILERPLATE_TAGS)
    body = tree.body or tree.root
    main = clean_text(body.text(deep=True, separator=" ")) if body is not None else ""
    if len(main) < max(200, _MIN_MAIN_SHARE * len(full)) and len(main) < len(full):
        return full
    return main


# Link lists of pages that mark no furniture (table and div layouts): a block of at least
# _MIN_LIST_LINKS links whose text is mostly link text is a menu or a list of links, not
# content (boilerpipe's and jusText's link-density feature; jusText calls a block with more
# than 20 % link text bad, this is stricter, so short content with a few links stays).
_MIN_LIST_LINKS = 3
_LINK_DENSITY = 0.6  # link characters over all characters of the block
_LIST_BLOCKS = frozenset(
    {"ul", "ol", "dl", "menu", "table", "tbody", "tr", "td", "th", "div", "p", "li", "center"}
)
_UP = 3  # ancestors of a link that may be its list (a > li > ul, a > td > tr > tbody)


def _without_link_lists(anchors: list[tuple[Node, int]], full: str) -> str:
    """The body text without link lists, or ``full`` when they hold nearly all of it (a
    site map, a directory page: then the links are the content).

    A block's cleaned text is a run of the page's cleaned text, so it is cut out of the
    string: the tree is neither changed nor read a second time (half the cost)."""
    main = full
    for text in _link_lists(anchors):
        at = main.find(text)
        if at >= 0:
            main = f"{main[:at].rstrip()} {main[at + len(text) :].lstrip()}".strip()
    if len(main) < max(200, _MIN_MAIN_SHARE * len(full)) and len(main) < len(full):
        return full
    return main


def _add(into: dict[int, list[Any]], node: Node, chars: int, links: int, key: int | None = None) -> None:
    key = node.mem_id if key is None else key
    entry = into.get(key)
    if entry is None:
        into[key] = [node, chars, links]
    else:
        entry[1] += chars
        entry[2] += links


def _link_lists(anchors: list[tuple[Node, int]]) -> list[str]:
    """The cleaned text of the outermost blocks that are link lists, from the links' nodes
    and text lengths.

    Level by level up from the links, each distinct ancestor visited once (a menu's
    twenty items share one list): the tree's properties are the cost here."""
    level: dict[int, list[Any]] = {}  # mem_id -> [node, link characters, links] at this height
    for a, chars in anchors:
        parent = a.parent
        if parent is not None:
            _add(level, parent, chars, 1)
    blocks: dict[int, list[Any]] = {}  # every list-like ancestor, with all links beneath it
    for height in range(_UP):
        above: dict[int, list[Any]] = {}
        for key, (node, chars, links) in level.items():
            if node.tag in _LIST_BLOCKS:
                _add(blocks, node, chars, links, key)
            if height + 1 < _UP and (parent := node.parent) is not None:
                _add(above, parent, chars, links)
        level = above
    dense: dict[int, tuple[Node, str]] = {}
    for key, (node, chars, links) in blocks.items():
        if links >= _MIN_LIST_LINKS:
            text = clean_text(node.text(deep=True, separator=" "))
            if text and chars / len(text) >= _LINK_DENSITY:
                dense[key] = (node, text)
    outermost = []
    for node, text in dense.values():
        parent, inside = node.parent, False
        for _ in range(_UP):
            if parent is None:
                break
            if parent.mem_id in dense:
                inside = True
                break
            parent = parent.parent
        if not inside:
            outermost.append(text)
    return outermost
