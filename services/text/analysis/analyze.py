"""The analyzer: the one function that turns text into index terms.

The same code runs at index time (MapReduce mappers) and at query time (the
search service), so a query word and a document word meet on the same term.
Unicode word tokenization, case folding, an English stop list, and Snowball
stemming through PyStemmer (the C build of the Snowball stemmers). Chinese,
Japanese and Korean text is cut into overlapping character bigrams (``CJK``).
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from importlib import resources

import Stemmer

# Tokens, tried in this order at each position:
#   numbers with dots ("3.14", "1.2.3") stay whole, dots and all;
#   initialisms ("u.s.a", "e.g": single characters between dots) are joined later ("usa");
#   words, with inner apostrophes ("don't"). Any other dot separates: "node.js" is "node" and
#   "js", "www.example-site.net" is "www", "example", "site", "net", so each part is findable.
_TOKEN = re.compile(r"\d+(?:\.\d+)+(?!\w)|\w(?:\.\w)+(?!\w)|\w+(?:['’]\w+)*", re.UNICODE)
_NUMBER = re.compile(r"\d+(?:\.\d+)+")
MAX_TOKEN_LENGTH = 64  # longer "words" are base64, hashes or junk

# CJK: Han ideographs (with the iteration marks), Hiragana, Katakana and Hangul syllables.
# Chinese and Japanese put no space between words (Korean spaces phrases: a word carries its
# particles), so ``\w+`` takes a whole clause as one "word" and a query word never meets it.
# A run of these characters becomes its overlapping bigrams, a lone one stays a unigram: the
# dictionary-free scheme of Lucene's CJKBigramFilter (Elasticsearch's and Solr's "cjk"
# analyzers), which finds a word of any length as consecutive bigrams, so phrase queries work
# on positions as for other words. Thai, also unspaced, needs a dictionary and is left whole.
# The ranges ascend (CJK[0] is the lowest code point: snippets test it before the regex).
CJK = "\u3005-\u3007\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\U00020000-\U0002fa1f"
CJK_CHAR = re.compile(f"[{CJK}]")  # one CJK character (search and snippets use it too)
_CJK_RUNS = re.compile(f"([{CJK}]+)")


@lru_cache(maxsize=1)
def stopwords() -> frozenset[str]:
    text = resources.files("services.text.analysis").joinpath("stopwords_en.txt").read_text("utf-8")
    return frozenset(text.split())


@lru_cache(maxsize=1)
def _stemmer() -> Stemmer.Stemmer:
    stemmer = Stemmer.Stemmer("english")
    stemmer.maxCacheSize = 100_000
    return stemmer


def _normalize(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold().replace("’", "'")


def surface_tokens(text: str) -> list[str]:
    """Case-folded, NFKC-normalised word tokens as they stand: before the stop list,
    the length cap and stemming (``terms_of`` finishes them)."""
    return _tokens(_normalize(text))


def _tokens(normal: str) -> list[str]:
    """The word pattern's tokens of normalised text, CJK runs cut into bigrams: the one step
    ``surface_tokens`` and ``rough_surfaces`` share, so the index job and queries agree."""
    tokens = _TOKEN.findall(normal)
    return tokens if normal.isascii() else _cjk_split(tokens)  # isascii: O(1) on a str


def _cjk_split(tokens: list[str]) -> list[str]:
    """``tokens`` with each run of CJK characters inside them cut into bigrams (see ``CJK``)."""
    out: list[str] = []
    for token in tokens:
        if token.isascii() or CJK_CHAR.search(token) is None:
            out.append(token)
            continue
        for i, part in enumerate(_CJK_RUNS.split(token)):  # odd parts are the CJK runs
            if i % 2 == 0:
                part = part.strip("'’.")  # "東京's": the joiner belonged to the CJK side
                if part:
                    out.append(part)
            elif len(part) == 1:
                out.append(part)
            else:
                out.extend(part[j : j + 2] for j in range(len(part) - 1))
    return out


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
    return _normalize(text).encode("utf-8", "surrogatepass").translate(_ROUGH_BYTES).split()


def rough_surfaces(rough: bytes) -> list[str]:
    """The surface tokens of one rough token (none, one or several)."""
    return _tokens(rough.decode("utf-8", "surrogatepass"))


def terms_of(surfaces: list[str]) -> list[str]:
    """The index term of each surface token, "" for a token that is dropped (a stop word,
    or longer than ``MAX_TOKEN_LENGTH``).

    The index job calls this once per distinct token of a whole block, not
    once per occurrence: stemming a block's vocabulary is a small fraction of
    stemming its text.
    """
    stop = stopwords()
    kept = [i for i, t in enumerate(surfaces) if t not in stop and len(t) <= MAX_TOKEN_LENGTH]
    out = [""] * len(surfaces)
    if not kept:
        return out
    joined = "\n".join(surface_form(surfaces[i]) for i in kept)
    for i, term in zip(kept, _stemmer().stemWords(joined.split("\n")), strict=True):
        out[i] = term
    return out


def surface_form(token: str) -> str:
    """The form of a surface token that is stemmed: "don't" -> "dont", "u.s" -> "us" (a
    number keeps its dots). A word as typed, for exact-form matching (services.text.analysis.forms)."""
    return token.replace("'", "") if _NUMBER.fullmatch(token) else token.replace("'", "").replace(".", "")


def analyze_forms(text: str) -> list[tuple[str, str]]:
    """(index term, the word's form as written) of each kept word of ``text``, in order."""
    surfaces = surface_tokens(text)
    return [(term, surface_form(s)) for s, term in zip(surfaces, terms_of(surfaces), strict=True) if term]


def analyze(text: str) -> list[str]:
    """Index terms of ``text``, in order (repeats kept: query-term frequency counts).

    The index job's block-at-a-time analysis is ``terms_of`` over a block's
    distinct tokens; this is the same per text, so queries meet the index.
    """
    return [term for term in terms_of(surface_tokens(text)) if term]
