"""The query language: words, "phrases", -exclusions and OR. Pure: no index needed.

    solar wind             both words (AND); if that finds too few documents,
                           any of them (OR), ranked by score
    +solar +wind           every result holds both, however few do (no OR fallback)
    +solar wind            every result holds solar; wind as above (AND, else ranked)
    solar OR wind          any of the words
    "solar wind" speed     the phrase (adjacent, in order) and the word
    solar -wind            solar, never a document with "wind"
    solar NOT wind         the same
    solar -"solar wind"    solar, never a document with the phrase

Words go through the index analyzer, so a stop word inside a phrase is
skipped just as it was at index time, and a phrase of one term is a word.
    solar | wind           the same as OR
    site:nasa.gov wind     only pages on that host or its subdomains (several site: widen);
                           site:127.0.0.1:8001 only that port (without one: every port)
    -site:nasa.gov wind    never pages on it
    filetype:pdf wind      only PDFs (pdf, html; several widen)
    intitle:wind solar     "wind" must be in the title (and counts as a word)

Words are analyzed in the query's languages (``languages``, first the one whose terms
it shows; ``services.text.analysis.languages.query_languages`` picks them): a word whose
forms differ between them ("Häuser": ``häuser`` in English, ``haus`` in German) matches
a document holding any of its forms (``ParsedQuery.alternatives``), scored by the best
one. Whether a word is a stop word is the first language's answer.

``+`` is Lucene's and tantivy's required clause (Google's old ``+word``): ``+"solar wind"``
requires both words and ranks the phrase's holders first, as a phrase always does; ``+`` on
a stop word requires nothing (the index holds no stop words). A ``+`` inside a word ("c++")
is part of the word.

An unclosed quote runs to the end of the query. ``OR`` and ``NOT`` are
operators only in capitals ("or" is a stop word anyway); operator names are
case-insensitive, and an unknown one (``foo:bar``) is searched as words.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from services.text.analysis.analyze import surface_form, surface_tokens, terms_of
from services.text.analysis.lang import identify
from services.text.analysis.languages import DEFAULT_LANGUAGE, query_languages, script_of

_PIECE = re.compile(r'([-+]?)"([^"]*)"?|(\S+)')
_OPERATOR = re.compile(r"(-?)(site|filetype|intitle):(\S+)", re.IGNORECASE)
# filetype: values people type -> the stored type's name (services.storage.formats.blocks.ContentType)
FILETYPES = {"pdf": "pdf", "html": "html", "htm": "html", "xhtml": "html"}
_HOST = re.compile(r"^[a-z0-9.\-\[\]:]+$")
# What makes a query more than words, OR aside: quotes, exclusions, operators, NOT (capitals),
# "|", a leading "+". A query without them (most of them) is analyzed in one call (``parse_query``).
_NOT_PLAIN = re.compile(r'["|:\-]|(?<!\S)NOT(?!\S)|(?<!\S)\+')
_OR = re.compile(r"(?<!\S)OR(?!\S)")
# "+every +word" (OR between them allowed) and nothing else an operator could mean: the words
# parse, every term then required (``_required_words_query``).
_EVERY_WORD_REQUIRED = re.compile(r'(?:\s*(?:\+[^\s"|:\-+][^\s"|:\-]*|OR))+\s*')
_PLUS = re.compile(r"(?<!\S)\+")


def _site(value: str) -> str | None:
    """The host of a site: value, with its port when one is given ("nasa.gov",
    "https://www.nasa.gov/x" -> "www.nasa.gov", "127.0.0.1:8001", "[::1]:8001"): two sites
    on one host differ by their port; without one, every port of the host matches."""
    host = value.lower().split("://", 1)[-1].split("/", 1)[0].strip(".")
    host = host.split("@")[-1]
    name, port = split_site(host)
    if not name or not _HOST.match(name) or "[" in name or "]" in name:
        return None
    if ":" in name:  # IPv6: bracketed, as in a URL
        name = f"[{name}]"
    return name if port is None else f"{name}:{port}"


def split_site(site: str) -> tuple[str, int | None]:
    """(host name, port or None) of a ``site:`` value as ``_site`` writes it; an IPv6 address
    without its brackets. A port that is not a number is no port."""
    if site.startswith("["):
        name, _, rest = site[1:].partition("]")
        digits = rest[1:] if rest.startswith(":") else ""
    elif site.count(":") == 1:
        name, _, digits = site.partition(":")
    else:
        name, digits = site, ""
    port = int(digits) if digits.isdigit() and 0 < int(digits) < 65536 else None
    return name.strip("."), port


@dataclass(frozen=True)
class ParsedQuery:
    terms: Counter[str]  # every scoring term (words and phrase words) -> occurrences
    phrases: list[list[str]] = field(default_factory=list)  # analyzed, two or more terms each
    excluded: list[str] = field(default_factory=list)
    excluded_phrases: list[list[str]] = field(default_factory=list)
    any_word: bool = False  # explicit OR
    forms: dict[str, str] = field(default_factory=dict)  # term -> the word as typed (first seen)
    sites: list[str] = field(default_factory=list)  # site:host, lower case, any of them
    excluded_sites: list[str] = field(default_factory=list)
    filetypes: list[str] = field(default_factory=list)  # canonical names (FILETYPES values)
    in_title: list[str] = field(default_factory=list)  # analyzed terms each title must hold
    # term -> the same words' terms in the query's other languages (any of them matches)
    alternatives: dict[str, list[str]] = field(default_factory=dict)
    required: list[str] = field(default_factory=list)  # +word: terms every result holds (a form of)

    def forms_of(self, term: str) -> list[str]:
        """``term`` and its alternatives, ``term`` first."""
        return [term, *self.alternatives.get(term, ())]

    @cached_property
    def all_required(self) -> bool:
        """Every word is ``+``-required: the query is a strict AND, whatever OR it holds."""
        return bool(self.required) and all(t in self.required for t in self.terms)

    @property
    def some_required(self) -> bool:
        """Some words, not all, are ``+``-required: they restrict the documents, as operators do."""
        return bool(self.required) and not self.all_required

    @property
    def filtered(self) -> bool:
        """Whether an operator restricts which documents may be results (``+word`` does when
        other words are optional; when every word is required the AND itself restricts them)."""
        return bool(
            self.sites or self.excluded_sites or self.filetypes or self.in_title or self.some_required
        )

    @property
    def only_exclusions(self) -> bool:
        """Nothing to search for, only things to leave out ("-wind")."""
        return (
            not self.terms
            and not self.sites
            and not self.filetypes
            and bool(self.excluded or self.excluded_phrases or self.excluded_sites)
        )

    @property
    def empty(self) -> bool:
        return not self.terms


def analyses_for(text: str, index_languages: Mapping[str, int]) -> list[str]:
    """The analyses a query is read in, on an index holding ``index_languages`` (pages per
    analysis): its own language when CLD2 is sure of it (a query of a few words rarely
    is: ``identify`` needs 16 letters and a reliable answer), and the index's
    (``query_languages``). On an index of one analysis every reading ends in that one, so
    the query's language is not asked (CLD2 was a twentieth of a short query's time)."""
    if len(index_languages) == 1:
        return list(index_languages)
    return query_languages(identify(text), dict(index_languages), script_of(text))


class _Analysis:
    """The query's analyzer: each piece's (term, form) pairs in the first language, and
    the other languages' terms of the same words gathered in ``alternatives``."""

    def __init__(self, languages: Sequence[str]) -> None:
        self.languages = list(languages) or [DEFAULT_LANGUAGE]
        self.alternatives: dict[str, list[str]] = {}

    def __call__(self, text: str) -> list[tuple[str, str]]:
        surfaces = surface_tokens(text)
        first, *others = (terms_of(surfaces, lang) for lang in self.languages)
        pairs = []
        for i, (surface, term) in enumerate(zip(surfaces, first, strict=True)):
            if not term:
                continue
            pairs.append((term, surface_form(surface)))
            for other in others:
                alternative = other[i]
                if alternative and alternative != term:
                    known = self.alternatives.setdefault(term, [])
                    if alternative not in known:
                        known.append(alternative)
        return pairs


def parse_query(text: str, languages: Sequence[str] = (DEFAULT_LANGUAGE,)) -> ParsedQuery:
    if _NOT_PLAIN.search(text) is None:
        return _words_query(text, languages)
    if _EVERY_WORD_REQUIRED.fullmatch(text) is not None:
        return _required_words_query(text, languages)
    return _operators_query(text, languages)


def _required_words_query(text: str, languages: Sequence[str]) -> ParsedQuery:
    """``+every +word``: the words' one-pass parse, each of its terms required; what
    ``_operators_query`` makes of it (a test compares the two), at the words parse's cost."""
    return _words_query(_PLUS.sub("", text), languages, required=True)


def _words_query(text: str, languages: Sequence[str], required: bool = False) -> ParsedQuery:
    """A query of words only, or of words and ``OR``, read in one pass of the analyzer: what
    ``_operators_query`` makes of it word by word (tokens never cross the spaces between
    words), at a third of the cost of a typical query's parse (a test compares the two on
    hostile text)."""
    without_or = _OR.sub(" ", text)
    analyze_forms = _Analysis(languages)
    pairs = analyze_forms(without_or)
    terms = Counter(term for term, _ in pairs)
    forms: dict[str, str] = {}
    for term, form in pairs:
        forms.setdefault(term, form)
    alternatives = analyze_forms.alternatives
    return ParsedQuery(
        terms,
        any_word=without_or != text,
        forms=forms,
        alternatives={t: a for t, a in alternatives.items() if t in terms},
        required=list(terms) if required else [],
    )


def _operators_query(text: str, languages: Sequence[str]) -> ParsedQuery:
    analyze_forms = _Analysis(languages)
    terms: Counter[str] = Counter()
    forms: dict[str, str] = {}
    phrases: list[list[str]] = []
    excluded: list[str] = []
    excluded_phrases: list[list[str]] = []
    any_word = False
    negate_next = False
    sites: list[str] = []
    excluded_sites: list[str] = []
    filetypes: list[str] = []
    in_title: list[str] = []
    required: list[str] = []
    for match in _PIECE.finditer(text):
        sign, quoted, word = match.group(1), match.group(2), match.group(3)
        if word is not None:
            require = word.startswith("+") and len(word) > 1
            word = word[1:] if require else word
            if word in ("OR", "|"):
                any_word = True
                continue
            operator = _OPERATOR.fullmatch(word)
            if operator is not None:
                name, value = operator.group(2).lower(), operator.group(3)
                negate = bool(operator.group(1)) or negate_next
                negate_next = False
                if name == "site" and (host := _site(value)) is not None:
                    (excluded_sites if negate else sites).append(host)
                    continue
                kind = value.lower().lstrip(".")
                if name == "filetype" and kind.isalnum() and not negate:
                    filetypes.append(FILETYPES.get(kind, kind))  # a type never stored matches nothing
                    continue
                if name == "intitle" and not negate:
                    pairs = analyze_forms(value)
                    in_title.extend(term for term, _ in pairs)
                    terms.update(term for term, _ in pairs)
                    for term, form in pairs:
                        forms.setdefault(term, form)
                    continue
                word = ("-" if negate else "") + value  # an operator we cannot apply: its words
            if "|" in word.strip("|") and not word.startswith("-"):
                any_word = True  # wind|solar
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
                if require:
                    required.extend(analyzed)
                for term, form in pairs:
                    forms.setdefault(term, form)
            continue
        pairs = analyze_forms(quoted or "")
        analyzed = [term for term, _ in pairs]
        negate = sign == "-" or negate_next
        negate_next = False
        if negate:
            if len(analyzed) == 1:  # -"word" is -word
                excluded.extend(analyzed)
            elif analyzed:
                excluded_phrases.append(analyzed)
            continue
        terms.update(analyzed)
        if sign == "+":
            required.extend(analyzed)
        for term, form in pairs:
            forms.setdefault(term, form)
        if len(analyzed) > 1:
            phrases.append(analyzed)
    alternatives = analyze_forms.alternatives
    excluded = [*excluded, *(a for t in excluded for a in alternatives.get(t, ()))]
    return ParsedQuery(
        terms,
        phrases,
        sorted(set(excluded) - set(terms)),
        excluded_phrases,
        any_word,
        forms,
        sorted(set(sites)),
        sorted(set(excluded_sites)),
        sorted(set(filetypes)),
        list(dict.fromkeys(in_title)),
        {t: a for t, a in alternatives.items() if t in terms},
        list(dict.fromkeys(required)),
    )


def plain_query(text: str, languages: Sequence[str] = (DEFAULT_LANGUAGE,)) -> ParsedQuery:
    """``text`` as words only, however long: no phrases, exclusions, OR or operators.

    A judged collection's queries are sentences written for people, not for a search
    box: a quoted title in a CISI question is not a phrase constraint, "-based" is no
    exclusion and a capital OR is a word. IR evaluations read them as bags of words
    (Anserini escapes Lucene's query syntax for the same reason), so ``nimbus eval``
    measures the ranking, not how its query language reads prose."""
    analysis = _Analysis(languages)
    pairs = analysis(text)
    forms: dict[str, str] = {}
    for term, form in pairs:
        forms.setdefault(term, form)
    return ParsedQuery(Counter(term for term, _ in pairs), forms=forms, alternatives=analysis.alternatives)
