"""Snippets: the window of a document's text that best shows why it matched.

A word matches when the analyzer turns it into one of the query's terms, so
"Running" highlights for the query "runs" exactly as the index matched them.
The result is a list of fragments ``(text, match)``, never HTML: templates
escape each fragment and wrap matches in ``<mark>`` themselves.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from services.text.analyze import analyze

WINDOW_WORDS = 30
# The window is chosen among the first 100,000 characters: enough for any
# web page's body, and it bounds the work per result on a 500-page PDF.
MAX_SCAN_CHARS = 100_000
ELLIPSIS = "…"

# The analyzer's word pattern, applied to the original text so spans stay exact.
_WORD = re.compile(r"\w+(?:['’.]\w+)*", re.UNICODE)


@dataclass(frozen=True)
class Fragment:
    text: str
    match: bool


def snippet_text(fragments: Iterable[Fragment]) -> str:
    return "".join(f.text for f in fragments)


@lru_cache(maxsize=100_000)
def _word_terms(word: str) -> frozenset[str]:
    """Terms one word yields (empty for stop words); cached across requests."""
    return frozenset(analyze(word))


def make_snippet(text: str, query_terms: Iterable[str], description: str = "",
                 window: int = WINDOW_WORDS) -> list[Fragment]:
    """Fragments of the best ``window``-word stretch of ``text`` for ``query_terms``.

    The best window holds the most distinct query terms, then the most
    matching words; the earliest wins a tie. Without any match the
    description (or else the start of the text) stands in, still highlighted
    where it matches.
    """
    terms = frozenset(query_terms)
    for source in (text, description):
        fragments = _best_window(source, terms, window, require_match=True)
        if fragments:
            return fragments
    return _best_window(description or text, terms, window, require_match=False)


def _best_window(text: str, terms: frozenset[str], window: int,
                 require_match: bool) -> list[Fragment]:
    text = text[:MAX_SCAN_CHARS]
    spans = [m.span() for m in _WORD.finditer(text)]
    if not spans:
        return [] if require_match else _plain(text)
    hits = [_word_terms(text[a:b]) & terms for a, b in spans]
    if require_match and not any(hits):
        return []
    start = _window_start(hits, window)
    end = min(len(spans), start + window)
    # Whole text at either end: keep its leading and trailing punctuation.
    first = 0 if start == 0 else spans[start][0]
    last = len(text) if end == len(spans) else spans[end - 1][1]
    out: list[Fragment] = []
    if start > 0:
        out.append(Fragment(ELLIPSIS + " ", False))
    pos = first
    for i in range(start, end):
        a, b = spans[i]
        if hits[i]:
            _append(out, _squash(text[pos:a]), False)
            _append(out, text[a:b], True)
            pos = b
    _append(out, _squash(text[pos:last]), False)
    if end < len(spans):
        _append(out, " " + ELLIPSIS, False)
    return _trim(out)


def _window_start(hits: list[frozenset[str]], window: int) -> int:
    """First word of the best window, then centred on the matches it holds."""
    n = len(hits)
    if n <= window:
        return 0
    distinct: Counter[str] = Counter()
    matched = 0
    best_key, best_start = (-1, -1), 0
    for i in range(n):
        distinct.update(hits[i])
        matched += bool(hits[i])
        if i >= window:
            old = hits[i - window]
            distinct.subtract(old)
            matched -= bool(old)
            for term in old:
                if distinct[term] <= 0:
                    del distinct[term]
        if i >= window - 1:
            key = (len(distinct), matched)
            if key > best_key:
                best_key, best_start = key, i - window + 1
    inside = [i for i in range(best_start, best_start + window) if hits[i]]
    if not inside:
        return best_start
    slack = window - (inside[-1] - inside[0] + 1)
    return max(0, min(inside[0] - slack // 2, n - window))


def _trim(out: list[Fragment]) -> list[Fragment]:
    """Drop whitespace at the outer ends (the text may start or end with blanks)."""
    if out and not out[0].match:
        out[0] = Fragment(out[0].text.lstrip(), False)
    if out and not out[-1].match:
        out[-1] = Fragment(out[-1].text.rstrip(), False)
    return [f for f in out if f.text]


def _plain(text: str) -> list[Fragment]:
    text = _squash(text).strip()
    return [Fragment(text, False)] if text else []


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def _append(out: list[Fragment], text: str, match: bool) -> None:
    if not text:
        return
    if out and out[-1].match == match and not match:
        out[-1] = Fragment(out[-1].text + text, False)
    else:
        out.append(Fragment(text, match))
