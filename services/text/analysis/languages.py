"""Which analysis each language gets: its Snowball stemmer, its stop list, elision and
accent folding. Pure data and lookups; ``analyze`` applies them.

A document is analyzed in the language the crawler identified (``lang``: CLD2, or the
page's ``<html lang>``), a query in the languages ``query_languages`` picks. Every
language maps to an *analysis key*: a language with a Snowball stemmer is its own key,
a language without one (Chinese, Japanese, Korean, Thai, Vietnamese, ...) is ``PLAIN``
(tokens as they stand, no stop list, no stemming: Lucene's CJK and Thai analyzers do not
stem either), and an unknown language ("") is ``DEFAULT_LANGUAGE``, English, as every
document was before languages had their own analysis.

Per language, as Lucene's analyzers (and Elasticsearch's language analyzers built on
them) do it:

- Stop lists are Snowball's own (``stopwords/<name>.txt``, the lists Lucene ships for
  these languages; provenance in ``stopwords/README.md``). English keeps the project's
  SMART-style list (``stopwords_en.txt``), which the judged collections were measured
  with. Snowball stemmers without a list of Snowball's (Arabic, Greek, Turkish, ...)
  stem without one: BM25's idf already makes a frequent word cheap.
- Elision (Lucene's ElisionFilter): French, Italian and Catalan articles and pronouns
  joined by an apostrophe are dropped, so "l'avion" is "avion".
- Accents are folded after stemming where the language's users leave them out when
  they type (French, Spanish, Portuguese, Italian, Catalan: Elasticsearch's guide adds
  ``asciifolding`` to these analyzers), so "election" finds "élection". Snowball's
  stemmers read the accents (suffixes such as "-ées"), so folding comes after them.
  German needs no separate step: its Snowball stemmer maps ä, ö, ü to a, o, u and ß to
  ss, and ae, oe, ue after a consonant to the vowel (Lucene's GermanNormalizationFilter),
  so "Häuser", "Haeuser" and "Haus" meet. Swedish, Finnish, Turkish and the others keep
  their letters: å is not a, and their users type it.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

DEFAULT_LANGUAGE = "en"  # the analysis of a document or query of unknown language
PLAIN = "plain"  # tokens only: languages without a Snowball stemmer


@dataclass(frozen=True)
class LanguageAnalysis:
    stemmer: str  # PyStemmer's algorithm name
    stop_list: str = ""  # file in this package ("": none)
    elisions: frozenset[str] = frozenset()
    fold_accents: bool = False


_FR_ELISIONS = frozenset(
    [
        "l",
        "m",
        "t",
        "qu",
        "n",
        "s",
        "j",
        "d",
        "c",
        "jusqu",
        "quoiqu",
        "lorsqu",
        "puisqu",
    ]  # Lucene's FrenchAnalyzer articles
)
_IT_ELISIONS = frozenset(  # Lucene's ItalianAnalyzer articles
    [
        "c",
        "l",
        "all",
        "dall",
        "dell",
        "nell",
        "sull",
        "coll",
        "pell",
        "gl",
        "agl",
        "dagl",
        "degl",
        "negl",
        "sugl",
        "un",
        "m",
        "t",
        "s",
        "v",
        "d",
    ]
)
_CA_ELISIONS = frozenset(["d", "l", "m", "n", "s", "t"])  # Lucene's CatalanAnalyzer articles

# ISO 639-1 code -> analysis. Keys are the codes ``services.text.analysis.lang.identify`` gives.
LANGUAGES: dict[str, LanguageAnalysis] = {
    "ar": LanguageAnalysis("arabic"),
    "ca": LanguageAnalysis("catalan", elisions=_CA_ELISIONS, fold_accents=True),
    "cs": LanguageAnalysis("czech"),
    "da": LanguageAnalysis("danish", "stopwords/danish.txt"),
    "de": LanguageAnalysis("german", "stopwords/german.txt"),
    "el": LanguageAnalysis("greek"),
    "en": LanguageAnalysis("english", "stopwords_en.txt"),
    "es": LanguageAnalysis("spanish", "stopwords/spanish.txt", fold_accents=True),
    "et": LanguageAnalysis("estonian"),
    "eu": LanguageAnalysis("basque"),
    "fa": LanguageAnalysis("persian"),
    "fi": LanguageAnalysis("finnish", "stopwords/finnish.txt"),
    "fr": LanguageAnalysis("french", "stopwords/french.txt", _FR_ELISIONS, fold_accents=True),
    "ga": LanguageAnalysis("irish", "stopwords/irish.txt"),
    "hi": LanguageAnalysis("hindi"),
    "hu": LanguageAnalysis("hungarian", "stopwords/hungarian.txt"),
    "hy": LanguageAnalysis("armenian"),
    "id": LanguageAnalysis("indonesian", "stopwords/indonesian.txt"),
    "it": LanguageAnalysis("italian", "stopwords/italian.txt", _IT_ELISIONS, fold_accents=True),
    "lt": LanguageAnalysis("lithuanian"),
    "ne": LanguageAnalysis("nepali"),
    "nl": LanguageAnalysis("dutch", "stopwords/dutch.txt"),
    "no": LanguageAnalysis("norwegian", "stopwords/norwegian.txt"),
    "pl": LanguageAnalysis("polish"),
    "pt": LanguageAnalysis("portuguese", "stopwords/portuguese.txt", fold_accents=True),
    "ro": LanguageAnalysis("romanian"),
    "ru": LanguageAnalysis("russian", "stopwords/russian.txt"),
    "sr": LanguageAnalysis("serbian"),
    "sv": LanguageAnalysis("swedish", "stopwords/swedish.txt"),
    "ta": LanguageAnalysis("tamil"),
    "tr": LanguageAnalysis("turkish"),
    "yi": LanguageAnalysis("yiddish"),
}
_ALIASES = {"nb": "no", "nn": "no", "ms": "id"}  # Bokmål, Nynorsk; Malay reads as Indonesian


def analysis_key(lang: str) -> str:
    """The analysis of a text in ``lang`` (an ISO 639 code, any case, maybe a BCP 47 tag):
    the language's own code, ``PLAIN`` for a language without a stemmer, or
    ``DEFAULT_LANGUAGE`` for an unknown one."""
    if not lang:
        return DEFAULT_LANGUAGE
    code = lang.split("-")[0].strip().lower()
    code = _ALIASES.get(code, code)
    if code in LANGUAGES:
        return code
    return PLAIN if code else DEFAULT_LANGUAGE


# Languages holding at least this share of an index's documents are among a query's
# analyses when the query's own language cannot be told (a short query usually).
MIN_SHARE = 0.05
MAX_QUERY_LANGUAGES = 6  # at most this many analyses of one query (a stemmer call per word each)
# The script each stemmed language is written in (Latin when not listed); ``PLAIN`` takes any.
_SCRIPTS = {
    "ar": "ARABIC",
    "el": "GREEK",
    "fa": "ARABIC",
    "hi": "DEVANAGARI",
    "hy": "ARMENIAN",
    "ne": "DEVANAGARI",
    "ru": "CYRILLIC",
    "sr": "CYRILLIC",
    "ta": "TAMIL",
    "yi": "HEBREW",
}


def script_of(text: str) -> str:
    """The script of the first letter of ``text`` as Unicode names it ("LATIN", "CYRILLIC",
    "CJK", ...), "" when it has no letter."""
    for ch in text:
        if ch.isalpha():
            return unicodedata.name(ch, "").split(" ")[0]
    return ""


def _writes(key: str, script: str) -> bool:
    """Whether the analysis ``key`` reads text in ``script`` ("" : any script)."""
    return not script or key == PLAIN or _SCRIPTS.get(key, "LATIN") == script


def dominant_language(languages: dict[str, int]) -> str:
    """The analysis key most of an index's documents have (``DEFAULT_LANGUAGE`` when empty)."""
    if not languages:
        return DEFAULT_LANGUAGE
    return max(sorted(languages), key=lambda key: languages[key])


def query_languages(detected: str, languages: dict[str, int], script: str = "") -> list[str]:
    """The analyses of a query, first the one whose stop list and terms lead.

    ``detected`` is the query's own language when language identification was sure of
    it ("" otherwise); ``languages`` the index's documents per analysis key; ``script``
    the query's script (``script_of``). A query identified with certainty is analyzed
    in its language and in the index's dominant one (a German query on an English web
    may still mean an English word), unless the index holds no document of its language
    (then no term of that analysis can match, and it is treated as unsure). One that
    cannot be told is analyzed in every language of its script holding at least
    ``MIN_SHARE`` of the index, most common first, and in the dominant one (Elasticsearch's
    advice for multilingual indexes: search the per-language fields together). Each
    word's forms are then OR-ed (``services.search.query``).
    """
    dominant = dominant_language(languages)
    key = analysis_key(detected) if detected else ""
    if key and (key in languages or not languages):
        keys = [key, dominant]
    else:
        total = sum(languages.values())
        # Most common first; the plain analysis after the stemmed ones (it has no stop list).
        common = sorted(languages, key=lambda k: (k == PLAIN, -languages[k], k))
        shared = [k for k in common if languages[k] >= MIN_SHARE * total and _writes(k, script)]
        keys = [*shared, dominant]
    return list(dict.fromkeys(keys))[:MAX_QUERY_LANGUAGES]
