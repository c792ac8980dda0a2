"""Words a typesetter broke at a line's end, put back together.

A PDF holds lines, not words: "com-" ends one line and "pile" starts the next. The
extractors mark such a break in one of three ways, all handled here:

* PDFium writes U+FFFE where the line-end hyphen was and joins the next line on
  directly ("com\\ufffepile");
* pdfminer.six keeps the hyphen and the line break ("com-\\npile"; also U+2010);
* a soft hyphen (U+00AD) is a break the author allowed, invisible by definition: it
  always goes, and a line end after it joins the word.

The hard part is the hyphen itself: "com-pile" was a break inside a word, "mixed-mode"
and "FAA-approved" are compounds that happened to break at their own hyphen. The rule,
in order (the practice of dehyphenators that see one document at a time, e.g. GROBID's
and CERMINE's, which use the document's own words as the dictionary):

1. the document's own words decide: "compile" written elsewhere and never "com-pile" →
   join; "mixed-mode" written elsewhere on one line and never "mixedmode" → keep the
   hyphen; both seen → the more frequent form;
2. without evidence, a part with a digit or a capital after its first letter ("FAA-",
   "-LQP", "B737-") or a second part starting with a capital ("Soekarno-Hatta") keeps the
   hyphen: names, codes and acronyms are compounds, not syllables;
3. without evidence, two parts of three letters or more that are each a word of the
   document ("non-negligible" has "negligible"; "language-independent") keep it: a
   syllable break leaves at least one fragment that is no word ("discov-", "-ered");
4. otherwise join: a lowercase word broken at a line end is, in running text, far more
   often a syllable break than a compound. On tracemonkey.pdf's 161 breaks the document
   decides 129 (124 joined, 5 kept); of the other 32, rule 3 keeps 7 hyphens (6 real
   compounds such as "trace-compilation", one wrong: "mis-match").
"""

from __future__ import annotations

import re
from collections import Counter

SOFT_HYPHEN = "\u00ad"
PDFIUM_BREAK = "\ufffe"  # PDFium: "a hyphen was here, at the end of a line"
# A candidate break between two word parts: PDFium's mark, or a hyphen then a line end.
_BREAK = re.compile(r"([^\W_]+)(?:\ufffe[ \t]*|[-\u2010][ \t]*\r?\n\s*)([^\W_]+)")
_WORD = re.compile(r"[^\W_]+")
_COMPOUND = re.compile(r"[^\W_]+(?:[-\u2010][^\W_]+)+")
_SOFT_BREAK = re.compile(r"\u00ad[ \t]*\r?\n\s*")


class Vocabulary:
    """How often each word and each hyphenated compound occurs in a document, outside the
    line-end breaks themselves (lower-cased)."""

    def __init__(self, text: str) -> None:
        plain = _BREAK.sub(" ", _SOFT_BREAK.sub("", text).replace(SOFT_HYPHEN, ""))
        self.words = Counter(w.lower() for w in _WORD.findall(plain))
        self.compounds = Counter(c.lower().replace("\u2010", "-") for c in _COMPOUND.findall(plain))


def keep_hyphen(left: str, right: str, vocabulary: Vocabulary | None = None) -> bool:
    """Whether ``left``-``right``, broken at a line end, is a compound (keep the hyphen) rather
    than one word broken in two (the rule in the module's docstring)."""
    if vocabulary is not None:
        joined = vocabulary.words[(left + right).lower()]
        hyphenated = vocabulary.compounds[f"{left}-{right}".lower()]
        if joined or hyphenated:
            return hyphenated >= joined
    if any(ch.isdigit() for ch in left + right):
        return True
    if right[0].isupper() or any(ch.isupper() for ch in left[1:]) or any(ch.isupper() for ch in right[1:]):
        return True
    if vocabulary is not None and min(len(left), len(right)) >= 3:
        return bool(vocabulary.words[left.lower()] and vocabulary.words[right.lower()])
    return False


def rejoin_hyphenated(text: str, vocabulary: Vocabulary | None = None) -> str:
    """``text`` with its line-end breaks resolved: soft hyphens gone, broken words joined,
    compounds keeping their hyphen; a PDFium mark not between two word parts becomes the
    hyphen it stood for. Other line ends are left as they are."""
    if SOFT_HYPHEN in text:
        text = _SOFT_BREAK.sub("", text).replace(SOFT_HYPHEN, "")
    if PDFIUM_BREAK not in text and "-" not in text and "\u2010" not in text:
        return text
    vocabulary = vocabulary if vocabulary is not None else Vocabulary(text)

    def resolve(match: re.Match[str]) -> str:
        left, right = match.group(1), match.group(2)
        return f"{left}-{right}" if keep_hyphen(left, right, vocabulary) else left + right

    return _BREAK.sub(resolve, text).replace(PDFIUM_BREAK, "-")
