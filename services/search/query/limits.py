"""How much of a query is searched: what a search box or a client sends becomes, before it
is parsed, corrected or retrieved, the query that is searched. The one place the limits
live; pure, and every change is told to the searcher (``QueryCut.notices``: the results
page shows them, the JSON API returns them with the words left out).

Three steps, in this order:

1. Characters. At most MAX_QUERY_CHARS characters are read (whitespace runs count as one
   space), before any analysis: a huge query costs what a long one does. The cut falls
   between words; a word it would halve is left out whole.
2. Repeats. A word (or a quoted phrase, or an operator) sent MIN_REPEAT or more times in
   a row is searched once: ``ab ab ab …`` is ``ab``, corrected as ``ab``. Twice is kept:
   doubled words are names and grammar (Bora Bora, Duran Duran, "had had"). Repeats that
   are not adjacent are kept too: the ranking counts a word's occurrences in the query
   (``qw_t``, docs/ranking.md keeps it deliberately), so dropping them would re-rank every
   query that says a word twice, which is a ranking decision, not a guard against junk;
   and step 3 already bounds what they can cost.
3. Words. At most MAX_QUERY_WORDS words, counted after step 2: a run searched once is one
   word. A word is what spaces separate: an operator (``site:nasa.gov``) is one, a quoted
   phrase is as many as it holds. The words after the limit are ignored, as Google ignores
   "(and any subsequent words)" past its 32; an operator left with nothing to act on at
   the end (``OR``, ``|``, ``NOT``) goes with them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_QUERY_CHARS = 2048  # the length of a search box's query (Google's box: maxlength 2048)
MAX_QUERY_WORDS = 32  # Google's limit: past it a query is a pasted paragraph, not a question
MIN_REPEAT = 3  # a word this many times in a row is a stuck key or a probe; twice is a name
QUERY_PART = re.compile(r'[-+]?"[^"]*"?|\S+')  # a query's parts: quoted phrases whole, else words
_DANGLING = frozenset({"OR", "|", "NOT"})  # operators that act on the next word
_NOTICE_WORDS = 5  # repeated words a notice names; the API lists every one
_NOTICE_CHARS = 40  # of a word a notice quotes (the API gives it whole)


@dataclass(frozen=True)
class Repeat:
    word: str  # the part as first sent (a word, a quoted phrase, an operator)
    times: int  # sent this many times in a row, searched once


@dataclass(frozen=True)
class QueryCut:
    """What ``bound_query`` left out of a query; falsy when it is searched as sent."""

    ignored_chars: int = 0  # characters past MAX_QUERY_CHARS, never read
    repeats: tuple[Repeat, ...] = ()
    ignored_words: tuple[str, ...] = ()  # past MAX_QUERY_WORDS, as sent, in order

    def __bool__(self) -> bool:
        return bool(self.ignored_chars or self.repeats or self.ignored_words)

    def notices(self) -> list[str]:
        """One sentence for the searcher per step that changed the query."""
        out = []
        if self.ignored_chars:
            out.append(
                f"We limit queries to {MAX_QUERY_CHARS:,} characters: the last "
                f"{self.ignored_chars:,} characters of yours were ignored."
            )
        if len(self.repeats) == 1:
            (repeat,) = self.repeats
            out.append(
                f"{_quoted(repeat.word)} was repeated {repeat.times:,} times in a row: it was searched once."
            )
        elif self.repeats:
            named = ", ".join(f"{_quoted(r.word)} ({r.times:,} times)" for r in self.repeats[:_NOTICE_WORDS])
            more = len(self.repeats) - _NOTICE_WORDS
            rest = f" and {more:,} more" if more > 0 else ""
            out.append(f"Words repeated in a row were searched once each: {named}{rest}.")
        if self.ignored_words:
            out.append(
                f"{_quoted(self.ignored_words[0])} (and any subsequent words) was ignored because "
                f"we limit queries to {MAX_QUERY_WORDS} words."
            )
        return out


def _quoted(word: str) -> str:
    """``word`` in quotes, a quoted phrase as it stands, cut at _NOTICE_CHARS."""
    shown = word if len(word) <= _NOTICE_CHARS else word[:_NOTICE_CHARS] + "…"
    return shown if word.lstrip("-+").startswith('"') else f"“{shown}”"


@dataclass(frozen=True)
class BoundedQuery:
    text: str  # the query as searched
    cut: QueryCut  # what was left out of the query as sent


def bound_query(q: str) -> BoundedQuery:
    """``q`` as searched: whitespace runs as one space, then the three steps of the module."""
    text = " ".join(q.split())
    text, ignored_chars = _within_chars(text)
    text, repeats = _collapse_repeats(text)
    text, ignored_words = _within_words(text)
    return BoundedQuery(text, QueryCut(ignored_chars, repeats, ignored_words))


def _within_chars(text: str) -> tuple[str, int]:
    """The first MAX_QUERY_CHARS characters of ``text`` ending at a word's end (the whole
    prefix when it is one word), and how many characters were left out."""
    if len(text) <= MAX_QUERY_CHARS:
        return text, 0
    head = text[:MAX_QUERY_CHARS]
    if text[MAX_QUERY_CHARS] != " " and " " in head:  # the cut would halve a word
        head = head[: head.rindex(" ")]
    head = head.rstrip()
    return head, len(text[len(head) :].strip())


def _collapse_repeats(text: str) -> tuple[str, tuple[Repeat, ...]]:
    """``text`` with each run of MIN_REPEAT or more equal parts (case aside) as its first;
    the rest of the text as it stands, character for character."""
    if '"' not in text and not _word_runs(text.casefold().split()):
        return text, ()  # the parts are the words, and none repeats: most queries, said at once
    parts = list(QUERY_PART.finditer(text))
    repeats: list[Repeat] = []
    kept: list[str] = []
    start = 0  # the first of the text not yet copied to ``kept``
    i = 0
    while i < len(parts):
        j = i + 1
        key = parts[i].group(0).casefold()
        while j < len(parts) and parts[j].group(0).casefold() == key:
            j += 1
        if j - i >= MIN_REPEAT:
            kept.append(text[start : parts[i].end()])
            start = parts[j - 1].end()
            repeats.append(Repeat(parts[i].group(0), j - i))
        i = j
    if not repeats:
        return text, ()
    kept.append(text[start:])
    return "".join(kept), tuple(repeats)


def _word_runs(words: list[str]) -> bool:
    """Whether MIN_REPEAT or more of ``words`` in a row are equal."""
    run = 1
    for before, word in zip(words, words[1:], strict=False):
        run = run + 1 if word == before else 1
        if run >= MIN_REPEAT:
            return True
    return False


def _within_words(text: str) -> tuple[str, tuple[str, ...]]:
    """The first MAX_QUERY_WORDS words of ``text`` (single-spaced), and the words after."""
    words = text.split(" ")
    if len(words) <= MAX_QUERY_WORDS:
        return text, ()
    kept, ignored = words[:MAX_QUERY_WORDS], words[MAX_QUERY_WORDS:]
    while kept and kept[-1] in _DANGLING:  # "solar OR" would make the whole query an OR
        ignored.insert(0, kept.pop())
    return " ".join(kept), tuple(ignored)
