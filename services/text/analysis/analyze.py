"""The analyzer: the one function that turns text into index terms.

The same code runs at index time (MapReduce mappers) and at query time (the
search service), so a query word and a document word meet on the same term.
Unicode word tokenization, case folding, then per language (``languages``: the
document's identified language, the query's own or the index's) a stop list,
elision, Snowball stemming through PyStemmer (the C build of the Snowball
stemmers) and accent folding. Chinese, Japanese and Korean text is cut into
overlapping character bigrams (``CJK``); Thai, Lao, Khmer and Burmese, written
without spaces between words, into words by ICU's dictionary-based word break
(``UNSPACED``). Tokenization depends on the script only, never on the language,
so a query and a page always cut a text the same way.

``analyzer_version`` names all of it (this code's revision, the stemmers',
the stop lists' and ICU's data): each segment records it, and search refuses a
segment analyzed otherwise than its queries would be.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from functools import cache, lru_cache
from importlib import resources

import Stemmer

from services.text.analysis.languages import DEFAULT_LANGUAGE, LANGUAGES, PLAIN, analysis_key

# Bump when this module's or ``languages``' behaviour changes: the segments built before
# then must be rebuilt (``analyzer_version``).
ANALYZER_REVISION = 2  # 1: English for every document; 2: per-language analysis, ICU word break

# Tokens, tried in this order at each position:
#   numbers with dots ("3.14", "1.2.3") stay whole, dots and all;
#   initialisms ("u.s.a", "e.g": single characters between dots) are joined later ("usa");
#   words, with inner apostrophes ("don't"). Any other dot separates: "node.js" is "node" and
#   "js", "www.example-site.net" is "www", "example", "site", "net", so each part is findable.
#   Combining marks (Unicode category M) belong to the word they follow: Thai, Devanagari and
#   the other Brahmic scripts write most vowels as marks, which ``\w`` does not match.


def _mark_ranges() -> str:
    """A character class body of every combining mark of the Basic Multilingual Plane."""
    marks = [c for c in range(0x300, 0x10000) if unicodedata.category(chr(c)).startswith("M")]
    ranges: list[tuple[int, int]] = []
    for c in marks:
        if ranges and ranges[-1][1] == c - 1:
            ranges[-1] = (ranges[-1][0], c)
        else:
            ranges.append((c, c))
    return "".join(chr(a) if a == b else f"{chr(a)}-{chr(b)}" for a, b in ranges)


_W = rf"[\w{_mark_ranges()}]"
_TOKEN = re.compile(rf"\d+(?:\.\d+)+(?!\w)|\w(?:\.\w)+(?!\w)|{_W}+(?:['’]{_W}+)*", re.UNICODE)
_NUMBER = re.compile(r"\d+(?:\.\d+)+")
MAX_TOKEN_LENGTH = 64  # longer "words" are base64, hashes or junk

# CJK: Han ideographs (with the iteration marks), Hiragana, Katakana and Hangul syllables.
# Chinese and Japanese put no space between words (Korean spaces phrases: a word carries its
# particles), so ``\w+`` takes a whole clause as one "word" and a query word never meets it.
# A run of these characters becomes its overlapping bigrams, a lone one stays a unigram: the
# dictionary-free scheme of Lucene's CJKBigramFilter (Elasticsearch's and Solr's "cjk"
# analyzers), which finds a word of any length as consecutive bigrams, so phrase queries work
# on positions as for other words. Thai and the other unspaced scripts: ``UNSPACED``.
# The ranges ascend (CJK[0] is the lowest code point: snippets test it before the regex).
CJK = "\u3005-\u3007\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\U00020000-\U0002fa1f"
CJK_CHAR = re.compile(f"[{CJK}]")  # one CJK character (search and snippets use it too)
_CJK_RUNS = re.compile(f"([{CJK}]+)")
# Thai, Lao, Myanmar and Khmer: no space between words, and a word is not a fixed number of
# characters, so bigrams do not fit; ICU's word break (a dictionary per script, what Lucene's
# ICUTokenizer and ThaiTokenizer use) cuts a run into words. ICU through icu4py, whose wheel
# carries ICU itself (no system libicu needed).
UNSPACED = "\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff"
_UNSPACED_RUNS = re.compile(f"([{UNSPACED}]+)")
_SPLIT_CHAR = re.compile(f"[{CJK}{UNSPACED}]")


@cache
def stopwords(lang: str = DEFAULT_LANGUAGE) -> frozenset[str]:
    """The stop list of ``lang``'s analysis (empty for a language without one)."""
    key = analysis_key(lang)
    name = LANGUAGES[key].stop_list if key != PLAIN else ""
    if not name:
        return frozenset()
    text = resources.files("services.text.analysis").joinpath(name).read_text("utf-8")
    return frozenset(text.split())


@cache
def _stemmer(key: str) -> Stemmer.Stemmer:
    stemmer = Stemmer.Stemmer(LANGUAGES[key].stemmer)
    stemmer.maxCacheSize = 100_000
    return stemmer


@lru_cache(maxsize=1)
def analyzer_version() -> str:
    """The analyzer's identity: its revision and a digest of everything its terms depend on
    (PyStemmer's version, every stop list, the language table, ICU's version). Two builds
    with the same version give every text the same terms."""
    digest = hashlib.sha256()
    digest.update(f"{ANALYZER_REVISION}|{Stemmer.version()}|{_icu_version()}".encode())
    for key in sorted(LANGUAGES):  # sorted everywhere: a set's order changes from process to process
        spec = LANGUAGES[key]
        table = f"{key}|{spec.stemmer}|{sorted(spec.elisions)}|{spec.fold_accents}|"
        digest.update(table.encode() + "\n".join(sorted(stopwords(key))).encode("utf-8") + b"\0")
    return f"{ANALYZER_REVISION}-{digest.hexdigest()[:12]}"


def _icu_version() -> str:
    from icu4py import icu_version  # ICU's, not the binding's: its dictionaries decide

    return str(icu_version)


def _normalize(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold().replace("’", "'")


def surface_tokens(text: str) -> list[str]:
    """Case-folded, NFKC-normalised word tokens as they stand: before the stop list,
    the length cap and stemming (``terms_of`` finishes them)."""
    return _tokens(_normalize(text))


def _tokens(normal: str) -> list[str]:
    """The word pattern's tokens of normalised text, CJK runs cut into bigrams and unspaced
    scripts into words: the one step ``surface_tokens`` and ``rough_surfaces`` share, so the
    index job and queries agree."""
    tokens = _TOKEN.findall(normal)
    return tokens if normal.isascii() else _script_split(tokens)  # isascii: O(1) on a str


def _script_split(tokens: list[str]) -> list[str]:
    """``tokens`` with each run of CJK characters inside them cut into bigrams (see ``CJK``)
    and each run of an unspaced script into its words (``UNSPACED``)."""
    out: list[str] = []
    for token in tokens:
        if token.isascii() or _SPLIT_CHAR.search(token) is None:
            out.append(token)
            continue
        for i, part in enumerate(_CJK_RUNS.split(token)):  # odd parts are the CJK runs
            if i % 2 == 0:
                part = part.strip("'’.")  # "東京's": the joiner belonged to the CJK side
                if part:
                    out.extend(_unspaced_split(part))
            elif len(part) == 1:
                out.append(part)
            else:
                out.extend(part[j : j + 2] for j in range(len(part) - 1))
    return out


def _unspaced_split(token: str) -> list[str]:
    """``token`` with each run of Thai, Lao, Myanmar or Khmer cut into words by ICU."""
    if _UNSPACED_RUNS.search(token) is None:
        return [token]
    out: list[str] = []
    for i, part in enumerate(_UNSPACED_RUNS.split(token)):
        if i % 2 == 0:
            part = part.strip("'’.")
            if part:
                out.append(part)
        else:
            out.extend(w for w in _icu_words(part) if _WORDLIKE.search(w))
    return out


_WORDLIKE = re.compile(r"\w")


@lru_cache(maxsize=100_000)
def _icu_words(run: str) -> tuple[str, ...]:
    """ICU's words of a run of one unspaced script (cached: a page repeats its words)."""
    from icu4py.breakers import WordBreaker  # loads ICU's data: only for text that needs it

    first = ord(run[0])  # ICU picks its dictionary by script; the locale only names it
    locale = "th" if first < 0x0E80 else "lo" if first < 0x0F00 else "my" if first < 0x1780 else "km"
    return tuple(WordBreaker(run, locale))


# Bytes that never occur inside a token (ASCII characters that are neither word characters
# nor the joiners ' and .) become spaces; word bytes, joiners and every byte of UTF-8's
# multi-byte sequences stay.
_ROUGH_BYTES = bytes(c if c >= 0x80 or chr(c).isalnum() or chr(c) in "_'." else 0x20 for c in range(256))


def rough_tokens(text: str) -> list[bytes]:
    """The normalised text cut at ASCII separators only ("rough tokens"): every surface
    token lies inside one rough token, so ``rough_surfaces`` of each, in order, are
    ``surface_tokens(text)``.

    Why: the index job tokenizes whole blocks, and the word regex makes a string
    per token, a large share of a map task. ``bytes.translate`` and ``split`` cut
    several times faster, and a block holds far fewer distinct rough tokens than
    occurrences (docs/performance-notes.md), so the regex then runs once per
    distinct rough token: those still holding joiners ("u.s.", "end.") or
    non-ASCII separators ("1990–95") are split there by the same regex as
    ``surface_tokens``.
    """
    return rough_bytes(text).split()


def rough_bytes(text: str) -> bytes:
    """The normalised text's UTF-8 with every ASCII separator a space: ``rough_tokens`` before
    the split (the index job numbers the tokens of many texts at once:
    ``services.text.analysis.rough_ids``). No ASCII whitespace but the space is left."""
    return _normalize(text).encode("utf-8", "surrogatepass").translate(_ROUGH_BYTES)


def rough_surfaces(rough: bytes) -> list[str]:
    """The surface tokens of one rough token (none, one or several)."""
    return _tokens(rough.decode("utf-8", "surrogatepass"))


def terms_of(surfaces: list[str], lang: str = DEFAULT_LANGUAGE) -> list[str]:
    """The index term of each surface token in ``lang``'s analysis (``languages``), "" for a
    token that is dropped (a stop word, or longer than ``MAX_TOKEN_LENGTH``).

    The index job calls this once per distinct token of a whole block and language,
    not once per occurrence: stemming a block's vocabulary is a small fraction of
    stemming its text.
    """
    key = analysis_key(lang)
    spec = LANGUAGES.get(key)
    if spec is not None and spec.elisions:
        surfaces = [_elide(t, spec.elisions) for t in surfaces]
    stop = stopwords(key)
    kept = [i for i, t in enumerate(surfaces) if t not in stop and len(t) <= MAX_TOKEN_LENGTH]
    out = [""] * len(surfaces)
    if not kept:
        return out
    if spec is None:  # PLAIN: the words as they stand
        for i in kept:
            out[i] = surface_form(surfaces[i])
        return [t if t else "" for t in out]
    joined = "\n".join(surface_form(surfaces[i]) for i in kept)
    stems = _stemmer(key).stemWords(joined.split("\n"))
    if spec.fold_accents:
        stems = [fold_accents(t) for t in stems]
    for i, term in zip(kept, stems, strict=True):
        out[i] = term
    return out


def _elide(token: str, elisions: frozenset[str]) -> str:
    """``token`` without an elided article or pronoun ("l'avion" -> "avion")."""
    head, apostrophe, rest = token.partition("'")
    return rest if apostrophe and rest and head in elisions else token


def fold_accents(term: str) -> str:
    """``term`` without combining marks ("élect" -> "elect", "niñ" -> "nin"); ASCII as is."""
    if term.isascii():
        return term
    decomposed = unicodedata.normalize("NFD", term)
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def surface_form(token: str) -> str:
    """The form of a surface token that is stemmed: "don't" -> "dont", "u.s" -> "us" (a
    number keeps its dots). A word as typed, for exact-form matching (services.text.analysis.forms)."""
    return token.replace("'", "") if _NUMBER.fullmatch(token) else token.replace("'", "").replace(".", "")


def analyze_forms(text: str, lang: str = DEFAULT_LANGUAGE) -> list[tuple[str, str]]:
    """(index term, the word's form as written) of each kept word of ``text``, in order."""
    surfaces = surface_tokens(text)
    return [
        (term, surface_form(s)) for s, term in zip(surfaces, terms_of(surfaces, lang), strict=True) if term
    ]


def analyze(text: str, lang: str = DEFAULT_LANGUAGE) -> list[str]:
    """Index terms of ``text`` in ``lang``'s analysis, in order (repeats kept: query-term
    frequency counts).

    The index job's block-at-a-time analysis is ``terms_of`` over a block's
    distinct tokens per language; this is the same per text, so queries meet the index.
    """
    return [term for term in terms_of(surface_tokens(text), lang) if term]
