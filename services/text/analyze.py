"""The analyzer: the one function that turns text into index terms.

The same code runs at index time (MapReduce mappers) and at query time (the
search service), so a query word and a document word meet on the same term.
Unicode word tokenization, case folding, an English stop list, and Snowball
stemming through PyStemmer (the C build of the Snowball stemmers).
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from functools import lru_cache
from importlib import resources

import Stemmer

# Words: runs of letters/digits, with inner apostrophes or dots kept for
# "don't" and "u.s." before they are normalised away.
_TOKEN = re.compile(r"\w+(?:['’.]\w+)*", re.UNICODE)
MAX_TOKEN_LENGTH = 64  # longer "words" are base64, hashes or junk


@lru_cache(maxsize=1)
def stopwords() -> frozenset[str]:
    text = resources.files("services.text").joinpath("stopwords_en.txt").read_text("utf-8")
    return frozenset(text.split())


@lru_cache(maxsize=1)
def _stemmer() -> Stemmer.Stemmer:
    stemmer = Stemmer.Stemmer("english")
    stemmer.maxCacheSize = 100_000
    return stemmer


def tokenize(text: str) -> list[str]:
    """Case-folded, NFKC-normalised word tokens (stop words kept)."""
    text = unicodedata.normalize("NFKC", text).casefold().replace("’", "'")
    return [t for t in _TOKEN.findall(text) if len(t) <= MAX_TOKEN_LENGTH]


def analyze(text: str) -> list[str]:
    """Index terms of ``text``, in order (repeats kept: query-term frequency counts).

    Written for speed (it runs on every token the index job sees): one pass
    in Python for the stop list, the rest as whole-string or C-level calls.
    """
    stop = stopwords()
    text = unicodedata.normalize("NFKC", text).casefold().replace("’", "'")
    words = [t for t in _TOKEN.findall(text) if t not in stop and len(t) <= MAX_TOKEN_LENGTH]
    if not words:
        return []
    joined = "\n".join(words)
    if "'" in joined or "." in joined:  # "don't" -> "dont", "u.s" -> "us", after the stop list
        words = joined.replace("'", "").replace(".", "").split("\n")
    return list(filter(None, _stemmer().stemWords(words)))


def term_counts(text: str) -> Counter[str]:
    return Counter(analyze(text))
