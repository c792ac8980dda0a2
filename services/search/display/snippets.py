"""Snippets: the window of a document's text that best shows why it matched.

A word matches when the analyzer turns it into one of the query's terms, so
"Running" highlights for the query "runs" exactly as the index matched them; the
words of a page are analyzed in its language (``lang``), as the index analyzed them.
The result is a list of fragments ``(text, match)``, never HTML: templates
escape each fragment and wrap matches in ``<mark>`` themselves.

A page's furniture sections ("External links", "References", "See also", "Further
reading", "Notes", "Bibliography" and the like) hold the query's words as often as
its content does (a list of links named after the subject), and a passage from them
tells a reader nothing: the best window is chosen first by the query terms it holds,
then by whether it lies in the main content, before the first such heading. The
heading is found where the extracted text has it, at a block's start (after a
sentence's end or a line break, followed by a capital or a list's first item): the
extractors keep no structure in the text, so the decision is made here, for every
stored record, HTML, PDF and wiki text alike; the cost is one regex per text.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Iterable
from functools import lru_cache
from itertools import islice
from typing import NamedTuple

from services.text.analysis.analyze import CJK, CJK_CHAR, analyze
from services.text.analysis.languages import DEFAULT_LANGUAGE, analysis_key

WINDOW_WORDS = 30
# The window is chosen among the first 100,000 characters: enough for any
# web page's body, and it bounds the work per result on a 500-page PDF.
MAX_SCAN_CHARS = 100_000
ELLIPSIS = "…"

# The analyzer's word pattern, applied to the original text so spans stay exact; a CJK
# character is a word of its own (the analyzer indexes CJK text as character bigrams).
_WORD = re.compile(rf"[{CJK}]|[^\W{CJK}]+(?:['’.][^\W{CJK}]+)*")


class Fragment(NamedTuple):
    """A piece of a snippet; a named tuple, not a frozen dataclass: a page makes about eighty
    of them, and a frozen dataclass's ``__init__`` costs several times a tuple's."""

    text: str
    match: bool


def snippet_text(fragments: Iterable[Fragment]) -> str:
    return "".join(f.text for f in fragments)


@lru_cache(maxsize=100_000)
def _word_terms(word: str, lang: str = DEFAULT_LANGUAGE) -> frozenset[str]:
    """Terms one word yields in ``lang``'s analysis (empty for stop words); cached across requests."""
    return frozenset(analyze(word, lang))


def make_snippet(
    text: str,
    query_terms: Iterable[str],
    description: str = "",
    window: int = WINDOW_WORDS,
    lang: str = DEFAULT_LANGUAGE,
) -> list[Fragment]:
    """Fragments of the best ``window``-word stretch of ``text`` for ``query_terms``.

    The best window holds the most distinct query terms, then the most
    matching words; the earliest wins a tie. Without any match the
    description (or else the start of the text) stands in, still highlighted
    where it matches.
    """
    terms = frozenset(query_terms)
    key = analysis_key(lang)
    for source in (text, description):
        fragments = _best_window(source, terms, window, require_match=True, lang=key)
        if fragments:
            return fragments
    return _best_window(description or text, terms, window, require_match=False, lang=key)


_FURNITURE_TITLES = (
    "External links", "EXTERNAL LINKS", "References", "REFERENCES", "See also", "SEE ALSO",
    "Further reading", "FURTHER READING", "Notes", "NOTES", "Bibliography", "BIBLIOGRAPHY",
    "Sources", "Citations", "Footnotes", "Works cited", "Notes and references",
)  # fmt: skip
_FURNITURE_HEADING = re.compile(
    r"(?:^|(?<=[.!?)\]\"”’:;]\s)|(?<=\n))[ \t]*"
    r"(?:" + "|".join(_FURNITURE_TITLES) + r")"
    r"(?:[ \t]*\[\s*edit\s*\])?(?=\s+[A-Z0-9\"“'‘\[(*•^]|\s*$)",
)


def furniture_start(text: str) -> int:
    """Where the page's furniture sections begin in ``text`` (its first "External links",
    "References" ... heading), or ``len(text)`` when it has none.

    The heading's own words are looked for first (``in``: a fast scan in C): the pattern's
    lookbehinds, tried at every position of a long page, cost most of a snippet's time on
    the many pages that hold none of them (docs/benchmarks.md, issue 31's stop)."""
    if not any(title in text for title in _FURNITURE_TITLES):
        return len(text)
    m = _FURNITURE_HEADING.search(text)
    return m.start() if m else len(text)


_LONGEST_TITLE = max(map(len, _FURNITURE_TITLES))


def _densest_in_content(
    text: str, matches: list[tuple[int, int, frozenset[str]]], width: int
) -> tuple[int, int]:
    """``_densest`` with the page's furniture start, looked for only where it can matter.

    The best stretch by terms and matching words alone is also the best with the furniture
    rule unless a furniture heading starts at or before it (a stretch before every heading
    is in the main content, and none beats it on terms or words). So the headings are looked
    for in the text up to that stretch (a heading starting there holds its title within
    the longest title's length; ``[ \t]*`` cannot cover a word), and the whole page is
    searched only when one of their titles occurs there: most pages are spared the
    scan of every title over all their text."""
    first, last = _densest(matches, width, len(text))
    head = text[: first + _LONGEST_TITLE]
    if not any(title in head for title in _FURNITURE_TITLES):
        return first, last
    return _densest(matches, width, furniture_start(text))


CHARS_PER_WORD = 8  # a word and its space, on average in English text
CJK_CHARS_PER_WORD = 3


def _best_window(
    text: str, terms: frozenset[str], window: int, require_match: bool, lang: str = DEFAULT_LANGUAGE
) -> list[Fragment]:
    text = text[:MAX_SCAN_CHARS]
    matches = _matches(text, terms, lang)
    if require_match and not matches:
        return []
    # Locate the best stretch by characters over the matches alone, then cut
    # words only in its neighbourhood: the cost follows the matches, not the
    # length of the document (a 100,000-character article stays cheap).
    first, last = _densest_in_content(text, matches, window * CHARS_PER_WORD) if matches else (0, 0)
    if CJK_CHAR.match(text, first):
        # Each CJK character is a "word" here: a window of them is three times as many, about
        # the width of an English one (still within the neighbourhood cut below).
        window *= CJK_CHARS_PER_WORD
    # About half a window of words each side is enough to centre it; room that one end of
    # the text lacks goes to the other (a match in the first line shows the lines after it).
    half = (window // 2 + 4) * CHARS_PER_WORD
    lo = max(0, first - half)
    hi = last + half + (half - (first - lo))
    if hi > len(text):
        lo = max(0, lo - (hi - len(text)))
    # The words before the stretch, then at most a window's worth from its first match: the
    # window holds that match, so it ends within them.
    spans = [m.span() for m in _WORD.finditer(text, lo, first)]
    spans += [m.span() for m in islice(_WORD.finditer(text, first, hi), window)]
    if lo > 0 and spans and spans[0][0] == lo and _WORD.match(text[lo - 1 : lo + 1] or ""):
        spans = spans[1:]  # the neighbourhood began inside a word
    if not spans:
        return [] if require_match else _plain(text)
    # The words that match, by index into spans (found by bisection: there are few of them).
    marked = []
    for at, _end, _terms in matches:
        i = bisect_left(spans, (at,))
        if i < len(spans) and spans[i][0] == at:
            marked.append(i)
    hit_words = [i for i in marked if first <= spans[i][0] <= last]
    start = _centre(hit_words, len(spans), window)
    end = min(len(spans), start + window)
    at_start = lo == 0 and start == 0
    at_end = end == len(spans) and spans[-1][1] >= len(text.rstrip()) - 1
    # Whole text at either end: keep its leading and trailing punctuation.
    first_char = 0 if at_start else spans[start][0]
    last_char = len(text) if at_end else spans[end - 1][1]
    out: list[Fragment] = []
    if not at_start:
        out.append(Fragment(ELLIPSIS + " ", False))
    pos = first_char
    for i in marked:
        if start <= i < end:
            a, b = spans[i]
            _append(out, _squash(text[pos:a]), False)
            _append(out, text[a:b], True)
            pos = b
    _append(out, _squash(text[pos:last_char]), False)
    if not at_end:
        _append(out, " " + ELLIPSIS, False)
    return _trim(out)


def matching_spans(text: str, terms: frozenset[str], lang: str = "") -> list[tuple[int, int]]:
    """(start, end) of every word of ``text`` that matches one of ``terms``, as the snippet
    marks them (a cached copy's highlighting uses the same rule), its words analyzed in the
    page's language ``lang``."""
    return [(at, end) for at, end, _ in _matches(text, terms, analysis_key(lang))] if terms else []


def query_fragments(text: str, terms: frozenset[str], lang: str = "") -> list[Fragment]:
    """All of ``text`` as fragments, its words that match ``terms`` marked."""
    out: list[Fragment] = []
    pos = 0
    for at, end in matching_spans(text, terms, lang):
        _append(out, text[pos:at], False)
        _append(out, text[at:end], True)
        pos = end
    _append(out, text[pos:], False)
    return out


def _matches(
    text: str, terms: frozenset[str], lang: str = DEFAULT_LANGUAGE
) -> list[tuple[int, int, frozenset[str]]]:
    """(start, end, query terms) of every matching word, in text order: a CJK character is
    a match when a query bigram holds it there (``_cjk_matches``)."""
    bigrams = {t for t in terms if len(t) == 2 and CJK_CHAR.search(t)}
    if lang == DEFAULT_LANGUAGE:
        found = _word_matches(text, terms - bigrams)
    else:
        found = _every_word_matches(text, terms - bigrams, lang)
    if not bigrams:
        return found
    by_start = {at: (end, words) for at, end, words in found}
    for at, end, words in _cjk_matches(text, bigrams):
        if at in by_start:
            words = words | by_start[at][1]
        by_start[at] = (end, words)
    return [(at, end, words) for at, (end, words) in sorted(by_start.items())]


def _cjk_matches(text: str, bigrams: set[str]) -> list[tuple[int, int, frozenset[str]]]:
    """Both characters of every occurrence of a query bigram, as one-character matches (the
    bigram's text is its term: NFKC and case folding leave CJK characters as they are)."""
    out: dict[int, set[str]] = {}
    for term in bigrams:
        at = text.find(term)
        while at >= 0:
            out.setdefault(at, set()).add(term)
            out.setdefault(at + 1, set()).add(term)
            at = text.find(term, at + 1)
    return [(at, at + 1, frozenset(words)) for at, words in out.items()]


def _word_matches(text: str, terms: frozenset[str]) -> list[tuple[int, int, frozenset[str]]]:
    """(start, end, query terms) of every word that matches, in text order.

    A Snowball stem starts with its word's first letters, bar its last one or two (happy ->
    happi, hoping -> hope), so only words starting with a query term's first letters (up to
    four, at most all but its last) are candidates, and only those go through the analyzer;
    the analyzer drops inner apostrophes (Yup'ik -> yupik), so words holding one are
    candidates too. The candidates are found with ``str.find`` on the lower-cased text (C's
    fast search; a prefix regex tries every position), kept at word starts. Where
    lower-casing changes the text's length (a few Unicode letters), offsets would not line
    up: the regex does it.
    """
    prefixes = sorted({t[: _prefix_length(t)].lower() for t in terms if t})
    if not prefixes:
        return []
    low = text.lower()
    if len(low) != len(text):
        return _matches_by_regex(text, terms, tuple(prefixes))
    starts: set[int] = set()
    for prefix in prefixes:
        at = low.find(prefix)
        while at >= 0:
            if _word_start(low, at):
                starts.add(at)
            at = low.find(prefix, at + 1)
    backwards = ""
    for apostrophe in _APOSTROPHES:
        at = low.find(apostrophe)
        while at >= 0:
            if 0 < at < len(low) - 1 and _word_char(low[at + 1]):
                # Back to the start of the word holding it: the word's characters before the
                # apostrophe, matched on the reversed text (one C call, not a Python loop).
                backwards = backwards or low[::-1]
                run = _BACK_TO_WORD_START.match(backwards, len(low) - at)
                starts.add(at - (run.end() - run.start()) if run else at)
            at = low.find(apostrophe, at + 1)
    out = []
    for at in sorted(starts):
        m = _WORD.match(text, at)
        if m is None:
            continue
        found = _word_terms(m.group()) & terms
        if found:
            out.append((at, m.end(), found))
    return out


def _every_word_matches(text: str, terms: frozenset[str], lang: str) -> list[tuple[int, int, frozenset[str]]]:
    """``_word_matches`` for a page in another language than English: every word goes
    through the analyzer (cached per word), since a stem need not start with its word's
    letters once accents are folded ("élections" -> ``elect``, "Häuser" -> ``haus``)."""
    if not terms:
        return []
    out = []
    for m in _WORD.finditer(text):
        found = _word_terms(m.group(), lang) & terms
        if found:
            out.append((m.start(), m.end(), found))
    return out


def _prefix_length(term: str) -> int:
    return min(4, max(2, len(term) - 1))


def _word_start(low: str, at: int) -> bool:
    """Whether a word of ``_WORD`` may start at ``at`` (the regex's look-behinds)."""
    return (
        at == 0
        or not _word_char(low[at - 1])
        and not (at >= 2 and low[at - 1] in _JOINERS and _word_char(low[at - 2]))
        # every CJK character is a word; CJK[0] is the class's lowest code point, so the
        # comparison spares the regex at the mid-word candidates of other scripts
        or low[at] >= CJK[0]
        and CJK_CHAR.match(low, at) is not None
    )


_APOSTROPHES = ("'", "’")
# Read on the reversed text from just before an apostrophe: word characters, and joiners with a
# word character before them (after them, reversed), as far as the word goes.
_BACK_TO_WORD_START = re.compile(r"(?:\w|['’.](?=\w))*")


_JOINERS = "'’."


def _word_char(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def _matches_by_regex(
    text: str, terms: frozenset[str], prefixes: tuple[str, ...]
) -> list[tuple[int, int, frozenset[str]]]:
    out = []
    for m in _candidate_pattern(prefixes).finditer(text):
        found = _word_terms(m.group()) & terms
        if found:
            out.append((m.start(), m.end(), found))
    return out


@lru_cache(maxsize=1024)
def _candidate_pattern(prefixes: tuple[str, ...]) -> re.Pattern[str]:
    alternatives = "|".join(re.escape(p) for p in prefixes)
    # A word starting with a prefix, or any word holding an apostrophe (see ``_matches``).
    return re.compile(
        rf"(?<!\w)(?<!\w['’.])(?:(?:{alternatives})\w*(?:['’.]\w+)*|\w+(?:\.\w+)*['’]\w+(?:['’.]\w+)*)",
        re.IGNORECASE,
    )


def _densest(
    matches: list[tuple[int, int, frozenset[str]]], width: int, furniture: int | None = None
) -> tuple[int, int]:
    """Character span (first match start, last match start) of the best stretch ``width`` wide:
    most distinct query terms, then in the main content (ending before ``furniture``), then
    most matching words; the earliest wins a tie."""
    furniture = matches[-1][0] + 1 if furniture is None else furniture
    counts: dict[str, int] = {}  # a plain dict: Counter's update and subtract are Python loops
    best_key, best = (-1, False, -1), (matches[0][0], matches[0][0])
    left = 0
    for right, (start, _end, found) in enumerate(matches):
        for term in found:
            counts[term] = counts.get(term, 0) + 1
        while matches[left][0] <= start - width:
            for term in matches[left][2]:
                if counts[term] == 1:
                    del counts[term]
                else:
                    counts[term] -= 1
            left += 1
        key = (len(counts), start < furniture, right - left + 1)
        if key > best_key:  # strict: the earliest window wins a tie
            best_key, best = key, (matches[left][0], start)
    return best


def _centre(hit_words: list[int], n: int, window: int) -> int:
    """First word of a ``window``-word stretch centred on the matching words."""
    if not hit_words:
        return 0
    first = hit_words[0]
    # Only the matches of the chosen stretch count (others may lie in the margin).
    last = max(i for i in hit_words if i - first < window)
    slack = window - (last - first + 1)
    return max(0, min(first - slack // 2, n - window))


# A run of text without a space longer than this (a hash, a pasted URL, base64) is cut with
# an ellipsis: shown whole, one such "word" fills the snippet and says nothing.
MAX_WORD_CHARS = 40
_LONG_RUN = re.compile(rf"\S{{{MAX_WORD_CHARS + 1},}}")


def _trim(out: list[Fragment]) -> list[Fragment]:
    """Drop whitespace at the outer ends (the text may start or end with blanks) and cut
    over-long runs without a space."""
    if out and not out[0].match:
        out[0] = Fragment(out[0].text.lstrip(), False)
    if out and not out[-1].match:
        out[-1] = Fragment(out[-1].text.rstrip(), False)
    return [
        Fragment(_LONG_RUN.sub(_cut, f.text), f.match) if len(f.text) > MAX_WORD_CHARS else f
        for f in out
        if f.text
    ]


def _cut(run: re.Match[str]) -> str:
    return run.group()[:MAX_WORD_CHARS] + ELLIPSIS


def _plain(text: str) -> list[Fragment]:
    text = _squash(text).strip()
    return [Fragment(text, False)] if text else []


_SPACES = re.compile(r"\s+")


def _squash(text: str) -> str:
    # Most gaps between words are single spaces: nothing to squash (``isprintable`` is False
    # for every whitespace character but the ASCII space).
    if text.isprintable() and "  " not in text:
        return text
    return _SPACES.sub(" ", text)


def _append(out: list[Fragment], text: str, match: bool) -> None:
    if not text:
        return
    if out and out[-1].match == match:  # adjacent matches: CJK characters, one <mark>
        out[-1] = Fragment(out[-1].text + text, match)
    else:
        out.append(Fragment(text, match))
