"""Boilerplate: page furniture and link lists, cut out of a page's text.

Menus, site headers and footers and sidebars neither match queries nor fill snippets:
marked ones (HTML5 elements, ARIA roles) are removed from the tree, and in pages that
mark nothing, blocks that are mostly link text are cut out of the text. A page whose
"boilerplate" is nearly all of it keeps its full text. Pure functions over a selectolax
tree; ``html.parse_html`` calls them.
"""

from __future__ import annotations

import re
from typing import Any

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
    string: the tree is neither changed nor read a second time."""
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


def main_text(tree: LexborHTMLParser, low: str, anchors: list[tuple[Node, int]], full: str) -> str:
    """``full``, the body's text, without its boilerplate: the furniture the page marks, or,
    when it marks none, its link lists (``anchors``: the ``<a>`` nodes with text and their
    text's length; ``low``: the page lower-cased)."""
    if _has_furniture(tree, low):
        return _without_boilerplate(tree, full)
    if len(anchors) >= _MIN_LIST_LINKS:
        return _without_link_lists(anchors, full)
    return full
