"""A stored page made fit to show: the original bytes stay as they were fetched.

A cached copy is shown inside a sandboxed frame (no scripts, an opaque origin),
but it still has to *look* like the page: its relative stylesheets and images
must load from the original site, it must be decoded with the charset the
crawler found, and it must not redirect the frame away. BeautifulSoup with
Python's ``html.parser`` is forgiving of any markup and keeps the document as
written, which is what a display copy needs (speed does not matter here: one
page per request).
"""

from __future__ import annotations

from bs4 import BeautifulSoup, Tag

from services.text.extract.charset import decode_body

# Elements a display copy never needs: they run code, or embed things that would.
_DROPPED = ("script", "base", "object", "embed", "applet")
_URL_ATTRIBUTES = ("href", "src", "action", "formaction", "xlink:href")


def display_html(body: bytes, url: str, charset: str | None = None) -> str:
    """``body`` as UTF-8 HTML whose relative links resolve against ``url``, with nothing
    that runs code or navigates away (scripts, event handlers, ``javascript:`` URLs,
    meta refresh)."""
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
    return str(soup)


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
