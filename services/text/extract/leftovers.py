"""What removed markup leaves in extracted text: ``Allah (; , )``, ``such as,, or``, ``[ ]``.

A wiki template or an inline element the extractor drops (a pronunciation, a date, a
citation) takes its words and leaves its punctuation. The shapes cleaned here are ones
running text never has; an empty ``()`` or ``[]`` is left alone where code may be the
text (``foo()``, ``a[]``): only the wiki text, where both come from removed templates,
drops them too (``wikitext``).
"""

from __future__ import annotations

import re

# A bracket holding only separators and spaces, with at least one separator: "(; , )", "[ , ]".
_SEPARATORS_ONLY = re.compile(r"\s*[(\[][\s,;:]*[,;][\s,;:]*[)\]]")
_DOUBLED = re.compile(r"([,;])(?:\s*[,;])+")  # ",," ", ;" -> the first
_SPACE_BEFORE = re.compile(r"(?<=\w)[ \t]+([,;:](?=\s|$)|\.(?=\s|$))")
_SPACES = re.compile(r"[ \t]{2,}")


def tidy_leftovers(text: str) -> str:
    """``text`` without brackets of bare separators, doubled commas and semicolons, spaces
    before punctuation and runs of spaces (line breaks are kept)."""
    if not any(s in text for s in ("(", "[", ",,", " ,", " ;", " .", "  ")):
        return text
    text = _SEPARATORS_ONLY.sub("", text)
    text = _DOUBLED.sub(r"\1", text)
    text = _SPACE_BEFORE.sub(r"\1", text)
    return _SPACES.sub(" ", text)
