"""The words of a form a reader sees that are no text of the page: placeholders and buttons.

A login or search form shows "Email address", "Password" and "Sign in", but when those are
``placeholder`` and ``value`` attributes no text extraction sees them. A form's labels,
``<button>`` text and ``<option>`` text are text nodes, already in the page's text (or in
its navigation text, when the form sits in a header or a menu). Hidden inputs' values are
tokens, not words, and a text box's ``value`` is what someone typed in: neither is read.
Pure; ``html.parse_html`` calls it.
"""

from __future__ import annotations

from selectolax.lexbor import LexborHTMLParser

from services.text.extract.whitespace import clean_text

_BUTTON_TYPES = frozenset({"submit", "button", "reset"})  # an <input> whose value is its label


def form_text(tree: LexborHTMLParser) -> str:
    """The placeholders of text boxes and the labels of ``<input>`` buttons (``value``, or
    ``alt`` of an image button), inputs first, then text areas, joined by spaces."""
    words = []
    for tag in ("input", "textarea"):
        for node in tree.tags(tag):
            attributes = node.attributes
            kind = (attributes.get("type") or "text").strip().lower()
            if kind == "hidden":
                continue
            words.append(attributes.get("placeholder") or "")
            if tag == "input" and kind in _BUTTON_TYPES:
                words.append(attributes.get("value") or "")
            elif tag == "input" and kind == "image":
                words.append(attributes.get("alt") or "")
    return clean_text(" ".join(words))
