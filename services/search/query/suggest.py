"""Spelling help and completions from the words the index holds.

The index keeps stems ("bodi"), which people neither type nor want to read, so the
vocabulary is built of words as written: the index job counts, for every form written in
titles and bodies, the documents holding it, and the segment keeps the forms in two or more
(``vocab_*``: a form in one document only is as likely a typo as a word); the words of the
documents' titles are added, counted by their stem's document frequency (the only source
for a segment older than format 5). A correction always finds something.

* **Did you mean**: SymSpell (symmetric delete, the ``symspellpy`` library) finds, per
  query word the index does not hold, the closest vocabulary word within two edits,
  ties broken by document frequency; the service offers the corrected query only when it
  finds clearly more results (``clearly_better``).
* **Completions**: frequent phrases of the titles (two words in a row in at least two
  titles) that start with what was typed, then the vocabulary's words completing the last
  word; each list sorted, a prefix found by bisection, the most frequent first; the one- and
  two-letter word prefixes' answers are computed up front, so no request scans a large range.

Pure: the service hands in the titles and the index's terms.
"""

from __future__ import annotations

import bisect
import heapq
import re
from collections import Counter
from collections.abc import Callable, Iterable

from symspellpy import SymSpell, Verbosity

from services.text.analysis.analyze import CJK_CHAR, analyze

MAX_EDITS = 2
COMPLETIONS = 8
MIN_PHRASE_TITLES = 2
_PRECOMPUTED_PREFIX = 2
TITLE_WORDS_KEPT = 20  # the most frequent title words kept for the home page's examples
EXAMPLE_WORD_LETTERS = 4  # shorter words are mostly function words ("the", "of")
_WORD = re.compile(r"[^\W\d_]{2,30}")  # letters only: numbers and codes are not misspelled
# Edit distance over CJK characters (each a syllable or a morpheme, indexed as bigrams) is no
# spelling model: 図書室 is not a typo of 図書館. Such words (``CJK_CHAR``) are never corrected.


class Vocabulary:
    def __init__(
        self,
        counts: Counter[str],
        phrases: Counter[str] | None = None,
        title_words: list[tuple[str, int]] | None = None,
        titles: int = 0,
    ) -> None:
        self.counts = counts
        # The most frequent title words (titles holding each), for the home page's examples.
        self.title_words = title_words or []
        self.titles = titles
        self.words = sorted(counts)
        self.phrases = phrases or Counter()
        self._phrase_list = sorted(self.phrases)
        self._spell = SymSpell(max_dictionary_edit_distance=MAX_EDITS, prefix_length=7)
        for word, count in counts.items():
            self._spell.create_dictionary_entry(word, count)
        self._tops: dict[str, list[str]] = {}
        by_prefix: dict[str, list[tuple[int, str]]] = {}
        for word, count in counts.items():
            for n in range(1, min(_PRECOMPUTED_PREFIX, len(word)) + 1):
                by_prefix.setdefault(word[:n], []).append((count, word))
        for prefix, pairs in by_prefix.items():
            self._tops[prefix] = [w for _, w in heapq.nlargest(COMPLETIONS, pairs)]

    @classmethod
    def build(
        cls, titles: Iterable[str], df_of: Callable[[str], int], forms: Iterable[tuple[str, int]] = ()
    ) -> Vocabulary:
        """From the index's written forms (``forms``: form, documents holding it) and the
        document titles, whose words count by their stem's document frequency in the index
        (``df_of``: 0 when the index lacks it; such words are left out)."""
        counts: Counter[str] = Counter({f: n for f, n in forms if _WORD.fullmatch(f)})
        pairs: Counter[str] = Counter()
        in_titles: Counter[str] = Counter()
        titled = 0
        known: set[str] = set()  # words whose stem the index lacks are looked up once
        for title in titles:
            words = _WORD.findall(title.lower())
            titled += bool(words)
            in_titles.update({w for w in words if len(w) >= EXAMPLE_WORD_LETTERS})
            for word in words:
                if word in counts or word in known:
                    continue
                known.add(word)
                stems = analyze(word)
                freq = df_of(stems[0]) if len(stems) == 1 else 0
                if freq:
                    counts[word] = freq
            pairs.update({f"{a} {b}" for a, b in zip(words, words[1:], strict=False)})
        # Frequent phrases: two title words in a row, in at least MIN_PHRASE_TITLES titles,
        # both words the index holds (a name, a term of art: "boundary layer").
        phrases = Counter(
            {
                p: n
                for p, n in pairs.items()
                if n >= MIN_PHRASE_TITLES and all(w in counts for w in p.split(" "))
            }
        )
        tops = [(w, n) for w, n in in_titles.most_common(TITLE_WORDS_KEPT * 4) if w in counts]
        return cls(counts, phrases, tops[:TITLE_WORDS_KEPT], titled)

    def __len__(self) -> int:
        return len(self.words)

    def correct(self, word: str) -> str | None:
        """The vocabulary word closest to ``word`` (within two edits, the most frequent of
        the closest), or None when there is none or ``word`` is itself a word here."""
        low = word.lower()
        if low in self.counts or not _WORD.fullmatch(low) or CJK_CHAR.search(low):
            return None
        found = self._spell.lookup(low, Verbosity.CLOSEST, max_edit_distance=MAX_EDITS)
        best = max(found, key=lambda s: (-s.distance, s.count), default=None)
        return None if best is None else str(best.term)

    def complete(self, prefix: str, limit: int = COMPLETIONS) -> list[str]:
        """Up to ``limit`` words starting with ``prefix``, the most frequent first."""
        low = prefix.lower()
        if not low:
            return []
        if len(low) <= _PRECOMPUTED_PREFIX:
            return self._tops.get(low, [])[:limit]
        return _top(self.words, self.counts, low, limit)

    def complete_phrase(self, text: str, limit: int = COMPLETIONS) -> list[str]:
        """Frequent phrases starting with ``text`` (at least two letters), the most frequent first."""
        low = text.lower()
        return _top(self._phrase_list, self.phrases, low, limit) if len(low) >= 2 else []


_TOKEN = re.compile(r"\S+")


def _top(sorted_keys: list[str], counts: Counter[str], prefix: str, limit: int) -> list[str]:
    start = bisect.bisect_left(sorted_keys, prefix)
    end = bisect.bisect_left(sorted_keys, prefix + "\uffff", start)
    return heapq.nlargest(limit, sorted_keys[start:end], key=lambda k: (counts[k], k))


def corrected_query(query: str, vocabulary: Vocabulary, known: set[str]) -> str | None:
    """``query`` with each plain word the index does not hold (its stem not in ``known``)
    replaced by its correction; operators, phrases' quotes, exclusions and +requirements kept as typed.
    None when nothing changes."""
    changed = False

    def fix(match: re.Match[str]) -> str:
        nonlocal changed
        token = match.group(0)
        if ":" in token or token in ("OR", "NOT", "|"):
            return token
        core = token.strip("\"'-+")
        stems = analyze(core)
        if not core or not stems or all(s in known for s in stems):
            return token
        better = vocabulary.correct(core)
        if better is None:
            return token
        changed = True
        return token.replace(core, better)

    out = _TOKEN.sub(fix, query)
    return out if changed else None


def clearly_better(original_total: int, corrected_total: int) -> bool:
    """Offer a correction only when it finds clearly more: twice as many, and at least
    three more (a correction that finds one page where there were none is worth it too)."""
    if original_total == 0:
        return corrected_total > 0
    return corrected_total >= 2 * original_total and corrected_total >= original_total + 3


REPLACE_RATIO = 10  # the correction answers ten times as many documents in full, or the query none


def replaces(original_total: int, corrected_total: int) -> bool:
    """Whether the correction's results are shown instead of the query's ("Showing results
    for ..., search instead for ..."): the query as typed answers no document in full (a word
    the index lacks, or no document holding them all), or fewer than a tenth of what the
    correction answers. Otherwise the correction is only offered ("Did you mean")."""
    if corrected_total <= 0:
        return False
    return original_total == 0 or corrected_total >= REPLACE_RATIO * original_total
