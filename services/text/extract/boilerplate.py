"""Boilerplate: page furniture and link lists, cut out of a page's text and kept apart.

Menus, site headers and footers and sidebars neither fill snippets nor count as what a
page is about: marked ones (HTML5 elements, ARIA roles) are removed from the tree, and in
pages that mark nothing, blocks that are mostly link text are cut out of the text. What
was cut is returned beside the text (``Split.nav``): the index keeps it as a field of its
own at a low weight (``services.ranking.bm25f``), so a word a reader sees only in a menu,
a list of links or a sidebar still finds the page. A page whose "boilerplate" is nearly
all of it keeps its full text (and no navigation text). Pure functions over a selectolax
tree; ``html.parse_html`` calls them.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from selectolax.lexbor import LexborHTMLParser
from selectolax.lexbor import LexborNode as Node

from services.text.extract.whitespace import clean_text

# Page furniture: menus, site headers and footers, sidebars (HTML5 elements and ARIA roles).
_BOILERPLATE_TAGS = ["nav", "header", "footer", "aside"]
_BOILERPLATE_ROLES = '[role="navigation"], [role="banner"], [role="contentinfo"], [role="complementary"]'
_ROLE_ATTRIBUTE = re.compile(r"\brole\s*=")


def _has_furniture(tree: LexborHTMLParser, low: str) -> bool:
    """Whether the page marks furniture: the elements from the parsed tree (looked up in C) and
    a plain substring test of the lower-cased page (``low``) before the role regex. One
    case-insensitive regex over the page for both costs more than the rest of the parse
    (docs/performance-notes.md)."""
    if any(tree.tags(tag) for tag in _BOILERPLATE_TAGS):
        return True
    return "role" in low and _ROLE_ATTRIBUTE.search(low) is not None


class Split(NamedTuple):
    """A page's body text cut in two: ``main``, its content, and ``nav``, the boilerplate
    cut out of it (menus, headers, footers, sidebars, link lists), its blocks joined by
    spaces ("" when nothing was cut)."""

    main: str
    nav: str = ""


_MIN_MAIN_SHARE = 0.2  # less main text than this (or < 200 chars): the markup is not trusted


def _too_little_left(main: str, full: str) -> bool:
    return len(main) < max(200, _MIN_MAIN_SHARE * len(full)) and len(main) < len(full)


def _furniture_text(nodes: list[Node]) -> str:
    """The text of the outermost of ``nodes`` (a <nav> inside a <header> is read once)."""
    marked = {node.mem_id for node in nodes}
    texts = []
    for node in nodes:
        parent, inside = node.parent, False
        while parent is not None:
            if parent.mem_id in marked:
                inside = True
                break
            parent = parent.parent
        if not inside:
            text = clean_text(node.text(deep=True, separator=" "))
            if text:
                texts.append(text)
    return " ".join(texts)


def _without_boilerplate(tree: LexborHTMLParser, full: str) -> Split:
    """The body text without page furniture, so menus and footers neither fill snippets nor
    count as content (their links were already taken), and the furniture's text apart. A page
    whose "furniture" holds nearly all its text (content wrapped in <header>, say) keeps its
    full text."""
    roles = tree.css(_BOILERPLATE_ROLES)
    nav = _furniture_text([*roles, *(node for tag in _BOILERPLATE_TAGS for node in tree.tags(tag))])
    for node in roles:
        node.decompose()
    tree.strip_tags(_BOILERPLATE_TAGS)
    body = tree.body or tree.root
    main = clean_text(body.text(deep=True, separator=" ")) if body is not None else ""
    if _too_little_left(main, full):
        return Split(full)
    return Split(main, nav)


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


def _without_link_lists(anchors: list[tuple[Node, int]], full: str) -> Split:
    """The body text without link lists, and their text apart; or ``full`` when they hold
    nearly all of it (a site map, a directory page: then the links are the content).

    A block's cleaned text is a run of the page's cleaned text, so it is cut out of the
    string: the tree is neither changed nor read a second time."""
    main = full
    cut = []
    for text in _link_lists(anchors):
        at = main.find(text)
        if at >= 0:
            main = f"{main[:at].rstrip()} {main[at + len(text) :].lstrip()}".strip()
            cut.append(text)
    if _too_little_left(main, full):
        return Split(full)
    return Split(main, " ".join(cut))


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


def main_text(tree: LexborHTMLParser, low: str, anchors: list[tuple[Node, int]], full: str) -> Split:
    """``full``, the body's text, split into its content and its boilerplate: the furniture
    the page marks, or, when it marks none, its link lists (``anchors``: the ``<a>`` nodes
    with text and their text's length; ``low``: the page lower-cased)."""
    if _has_furniture(tree, low):
        return _without_boilerplate(tree, full)
    if len(anchors) >= _MIN_LIST_LINKS:
        return _without_link_lists(anchors, full)
    return Split(full)
