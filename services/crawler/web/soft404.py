"""Soft 404s: pages that answer 200 but say "not found", the same for any missing path.

The standard probe (Bar-Yossef et al., "Sic transit gloria telae", WWW 2004;
what Heritrix and Nutch users script): ask each host once for a path that
cannot exist; if it answers 200, its text is the host's "not found" page, and
any page of that host whose words are nearly the same is one too. The words
of the requested path are removed from both sides first: error pages often
echo the URL they could not find.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

_WORDS = re.compile(r"\w+")
SIMILAR = 0.9  # word-set Jaccard at or above which a page is the host's "not found" page


@dataclass(frozen=True)
class NotFoundPage:
    """The host's answer to a path that cannot exist, as a set of words (empty: a real 404)."""

    words: frozenset[str]


def probe_path() -> str:
    """A path no site has: random, and plainly ours in a server's log."""
    return f"/nimbus-soft404-probe-{secrets.token_hex(8)}.html"


def words_of(text: str, url: str) -> frozenset[str]:
    """The page's words, less the words of its own URL's path and query."""
    parts = urlsplit(url)
    echoed = set(_WORDS.findall(unquote(f"{parts.path} {parts.query}").lower()))
    return frozenset(w for w in _WORDS.findall(text.lower()) if w not in echoed)


def is_soft_404(page_words: frozenset[str], not_found: NotFoundPage | None) -> bool:
    if not_found is None or not not_found.words or not page_words:
        return False
    union = len(page_words | not_found.words)
    return len(page_words & not_found.words) / union >= SIMILAR
