"""Why a query has nothing to search for, in a sentence for the searcher: no word at all,
only very common words (the stop list's, never indexed), or "words" too long to be indexed.

The sentence names the words, so a query changed before it was searched (``limits``:
"a a a …" is searched as "a") is answered about what was searched, and a 70-letter
string is not called a very common word."""

from __future__ import annotations

from services.text.analysis.analyze import MAX_TOKEN_LENGTH, stopwords, surface_tokens
from services.text.analysis.languages import DEFAULT_LANGUAGE

EXCLUSIONS_ONLY_MESSAGE = "Your query only leaves words out (“-word”, “NOT word”). Add a word to search for."
NO_WORDS_MESSAGE = (
    "Your query has no words to search for, only punctuation or symbols. Type a word or a phrase."
)
STOP_WORDS_MESSAGE = (
    "Your query holds only very common words (like “the” or “of”), which are not indexed. "
    "Add a more specific word."
)
_NAMED = 5  # words a message quotes
_SHOWN_CHARS = 24  # of a word too long to index


def nothing_to_search_message(text: str, lang: str = DEFAULT_LANGUAGE) -> str:
    """Why ``text``, none of whose words gives an index term, finds nothing; ``lang`` is the
    analysis that decides stop words (the query's first: ``language.parse_query``)."""
    if not any(ch.isalnum() for ch in text):
        return NO_WORDS_MESSAGE
    words = list(dict.fromkeys(surface_tokens(text)))
    stop = stopwords(lang)
    common = [w for w in words if w in stop]
    long = [w for w in words if len(w) > MAX_TOKEN_LENGTH]
    if long:
        said = (
            f"{_quoted(long)} {'is' if len(long) == 1 else 'are'} longer than {MAX_TOKEN_LENGTH} characters"
        )
        if common:
            said += f"; {_quoted(common)} {_common(common)}"
        return f"Nothing in your query is indexed: {said}. Add a shorter, more specific word."
    if len(common) == 1:
        return f"{_quoted(common)} is a very common word, which is not indexed. Add a more specific word."
    if common:
        return (
            f"Your query holds only very common words ({_quoted(common)}), which are not indexed. "
            "Add a more specific word."
        )
    return STOP_WORDS_MESSAGE  # no word is on the stop list or too long (never seen): the general answer


def _common(words: list[str]) -> str:
    return "is a very common word" if len(words) == 1 else "are very common words"


def _quoted(words: list[str]) -> str:
    """Up to _NAMED words in quotes, each cut at _SHOWN_CHARS."""
    shown = [w if len(w) <= _SHOWN_CHARS else w[:_SHOWN_CHARS] + "…" for w in words[:_NAMED]]
    return ", ".join(f"“{w}”" for w in shown) + (" …" if len(words) > _NAMED else "")
