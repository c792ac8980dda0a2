"""The operator examples the home page shows, taken from the index being served.

Fixed examples ("site:nasa.gov", "intitle:wing") find nothing on most indexes, the demo's
included; a visitor who tries one learns only that the engine seems broken. So each index
version gets its own: the host with the most documents, words of its titles (a word in
several titles but not most of them, so ``intitle:`` narrows), and a phrase that titles
repeat. Candidates are tried in order by the caller (``works``) and the first that finds
something is kept. Pure: the service hands in the hosts, title words and the check.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

DEFAULT_PORTS = (":80", ":443")


@dataclass(frozen=True)
class OperatorExamples:
    """Queries that find something in this index ("" when no candidate did)."""

    phrase: str = ""  # '"boundary layer"'
    any_word: str = ""  # "wing OR lift"
    without: str = ""  # "wing -lift"
    site: str = ""  # "site:nasa.gov"
    in_title: str = ""  # "intitle:wing"

    def shown(self) -> list[str]:
        """The examples found, in the home page's order."""
        return [q for q in (self.phrase, self.any_word, self.without, self.site, self.in_title) if q]


def operator_examples(
    hosts: Sequence[tuple[str, int]],
    title_words: Sequence[tuple[str, int]],
    phrases: Sequence[str],
    titles: int,
    works: Callable[[str], bool],
) -> OperatorExamples:
    """``hosts``: ("host:port", documents), most first; ``title_words``: (word, titles holding
    it), most first; ``phrases``: frequent title phrases, most first; ``titles``: how many
    documents have a title; ``works``: whether a query finds something."""

    def first(candidates: list[str]) -> str:
        return next((q for q in candidates if works(q)), "")

    # A word in at most half of the titles narrows; one in every title ("Wikipedia") does not.
    narrowing = [w for w, n in title_words if n <= max(1, titles // 2)] or [w for w, _ in title_words]
    words = narrowing[:6]
    pairs = [(a, b) for i, a in enumerate(words) for b in words[i + 1 :]]
    return OperatorExamples(
        phrase=first([f'"{p}"' for p in phrases[:5]]),
        any_word=first([f"{a} OR {b}" for a, b in pairs[:5]]),
        without=first([f"{a} -{b}" for a, b in pairs[:5]]),
        site=first([f"site:{_shown_host(h)}" for h, _ in hosts[:3]]),
        in_title=first([f"intitle:{w}" for w in words[:5]]),
    )


def _shown_host(host: str) -> str:
    """A host as a person types it: the scheme's default port left out."""
    for port in DEFAULT_PORTS:
        if host.endswith(port):
            return host[: -len(port)]
    return host
