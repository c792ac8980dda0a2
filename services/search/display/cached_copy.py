"""A stored page made fit to show: the original bytes stay as they were fetched.

A cached copy is shown inside a sandboxed frame (no scripts, an opaque origin),
but it still has to *look* like the page: its relative stylesheets and images
must load from the original site, it must be decoded with the charset the
crawler found, and it must not redirect the frame away. BeautifulSoup with
Python's ``html.parser`` is forgiving of any markup and keeps the document as
written, which is what a display copy needs (speed does not matter here: one
page per request).

The query's words are highlighted as Google's cache did, inside the copy (the frame
is sandboxed: our page cannot reach into it, so the marks are made here). Only text
nodes of the body are touched, each split around its matching words into text and
``<mark>`` elements built by the parser's API, never by pasting strings: a word can
never land in an attribute, a script, a style sheet or a comment, and whatever the
page's text holds stays text.
"""

from __future__ import annotations

from bs4 import BeautifulSoup, NavigableString, Tag
from bs4.element import PreformattedString

from services.search.display.snippets import matching_spans
from services.text.extract.charset import decode_body

# Elements a display copy never needs: they run code, or embed things that would.
_DROPPED = ("script", "base", "object", "embed", "applet")
_URL_ATTRIBUTES = ("href", "src", "action", "formaction", "xlink:href")
# Text that is not the page's visible running text: never highlighted.
_NOT_PROSE = frozenset(
    {
        "head",
        "title",
        "script",
        "style",
        "textarea",
        "option",
        "select",
        "noscript",
        "template",
        "svg",
        "math",
    }
)
MAX_MARKS = 2000  # a page of one word repeated does not grow without bound
# Inline: the page's own style sheet may restyle or hide <mark>; "revert" cannot be relied on.
MARK_STYLE = "background:#ffeb3b;color:#000;padding:0;font:inherit"


def display_html(
    body: bytes, url: str, charset: str | None = None, terms: frozenset[str] = frozenset()
) -> str:
    """``body`` as UTF-8 HTML whose relative links resolve against ``url``, with nothing
    that runs code or navigates away (scripts, event handlers, ``javascript:`` URLs,
    meta refresh), and the words that match ``terms`` (analyzed query terms) marked."""
    decoded = decode_body(body, charset)
    soup = BeautifulSoup(decoded.text, "html.parser")
    for name in _DROPPED:
        for node in soup.find_all(name):
            node.decompose()
    for meta in soup.find_all("meta"):
        equiv = str(meta.get("http-equiv") or "").strip().lower()
        if meta.has_attr("charset") or equiv in {"refresh", "content-type", "set-cookie"}:
            meta.decompose()
    for node in soup.find_all(True):
        for attribute in list(node.attrs):
            lowered = attribute.lower()
            value = str(node.attrs[attribute]).strip().lower()
            if lowered.startswith("on") or (lowered in _URL_ATTRIBUTES and value.startswith("javascript:")):
                del node.attrs[attribute]
    head = _head(soup)
    head.insert(0, soup.new_tag("base", href=url))
    head.insert(0, soup.new_tag("meta", charset="utf-8"))
    if terms:
        highlight(soup, terms)
    return str(soup)


def highlight(soup: BeautifulSoup, terms: frozenset[str]) -> int:
    """Wrap the words of the document's visible text that match ``terms`` in ``<mark>``; the
    number of marks made (at most ``MAX_MARKS``)."""
    marks = 0
    for node in list(soup.find_all(string=True)):
        if marks >= MAX_MARKS:
            break
        # Comments, CDATA, doctypes and processing instructions are strings too: not text.
        if not isinstance(node, NavigableString) or isinstance(node, PreformattedString):
            continue
        if any(parent.name in _NOT_PROSE for parent in node.parents if isinstance(parent, Tag)):
            continue
        text = str(node)
        spans = matching_spans(text, terms)[: MAX_MARKS - marks]
        if not spans:
            continue
        pieces: list[NavigableString | Tag] = []
        pos = 0
        for at, end in spans:
            if at > pos:
                pieces.append(NavigableString(text[pos:at]))
            mark = soup.new_tag("mark", attrs={"class": "nimbus-highlight", "style": MARK_STYLE})
            mark.string = text[at:end]
            pieces.append(mark)
            pos = end
        if pos < len(text):
            pieces.append(NavigableString(text[pos:]))
        node.replace_with(*pieces)
        marks += len(spans)
    return marks


def _head(soup: BeautifulSoup) -> Tag:
    """The document's ``<head>``, made if the page has none (many old pages do not)."""
    head = soup.find("head")
    if isinstance(head, Tag):
        return head
    head = soup.new_tag("head")
    html = soup.find("html")
    if isinstance(html, Tag):
        html.insert(0, head)
    else:
        soup.insert(0, head)
    return head
