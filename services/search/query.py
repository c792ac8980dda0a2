"""The query language: words, "phrases", -exclusions and OR. Pure: no index needed.

    solar wind             both words (AND); if that finds too few documents,
                           any of them (OR), ranked by score
    solar OR wind          any of the words
    "solar wind" speed     the phrase (adjacent, in order) and the word
    solar -wind            solar, never a document with "wind"
    solar NOT wind         the same
    solar -"solar wind"    solar, never a document with the phrase

Words go through the index analyzer, so a stop word inside a phrase is
skipped just as it was at index time, and a phrase of one term is a word.
An unclosed quote runs to the end of the query. ``OR`` and ``NOT`` are
operators only in capitals ("or" is a stop word anyway).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from services.text.analyze import analyze_forms

_PIECE = re.compile(r'(-?)"([^"]*)"?|(\S+)')


@dataclass(frozen=True)
class ParsedQuery:
    terms: Counter[str]  # every scoring term (words and phrase words) -> occurrences
    phrases: list[list[str]] = field(default_factory=list)  # analyzed, two or more terms each
    excluded: list[str] = field(default_factory=list)
    excluded_phrases: list[list[str]] = field(default_factory=list)
    any_word: bool = False  # explicit OR
    forms: dict[str, str] = field(default_factory=dict)  # term -> the word as typed (first seen)

    @property
    def only_exclusions(self) -> bool:
        """Nothing to search for, only things to leave out ("-wind")."""
        return not self.terms and bool(self.excluded or self.excluded_phrases)

    @property
    def empty(self) -> bool:
        return not self.terms


def parse_query(text: str) -> ParsedQuery:
    terms: Counter[str] = Counter()
    forms: dict[str, str] = {}
    phrases: list[list[str]] = []
    excluded: list[str] = []
    excluded_phrases: list[list[str]] = []
    any_word = False
    negate_next = False
    for match in _PIECE.finditer(text):
        minus, quoted, word = match.group(1), match.group(2), match.group(3)
        if word is not None:
            if word == "OR":
                any_word = True
                continue
            if word == "NOT":
                negate_next = True
                continue
            negate = negate_next or (word.startswith("-") and len(word) > 1)
            negate_next = False
            pairs = analyze_forms(word[1:] if word.startswith("-") else word)
            analyzed = [term for term, _ in pairs]
            if negate:
                excluded.extend(analyzed)
            else:
                terms.update(analyzed)
                for term, form in pairs:
                    forms.setdefault(term, form)
            continue
        pairs = analyze_forms(quoted or "")
        analyzed = [term for term, _ in pairs]
        negate = bool(minus) or negate_next
        negate_next = False
        if negate:
            if len(analyzed) == 1:  # -"word" is -word
                excluded.extend(analyzed)
            elif analyzed:
                excluded_phrases.append(analyzed)
            continue
        terms.update(analyzed)
        for term, form in pairs:
            forms.setdefault(term, form)
        if len(analyzed) > 1:
            phrases.append(analyzed)
    return ParsedQuery(terms, phrases, sorted(set(excluded) - set(terms)), excluded_phrases, any_word, forms)
