"""Robots directives (noindex, nofollow, noarchive, ...), from ``<meta name=robots>`` and
from the ``X-Robots-Tag`` response header: one vocabulary, read in one place.

A PDF has no ``<meta name=robots>``, so its server says ``noindex`` in a header
instead; Google, Bing and Yandex read it, and a site that relies on it expects
every search engine to. A header value may be addressed to one crawler
(``X-Robots-Tag: otherbot: noindex, nofollow``): then it binds only the
crawler whose User-Agent product token that is; without a name it binds all.
Pure: text in, directives out.
"""

from __future__ import annotations

from collections.abc import Iterable

# Directives written "name: value", whose colon does not name a crawler.
_VALUED = frozenset({"unavailable_after", "max-snippet", "max-image-preview", "max-video-preview"})
NOINDEX = frozenset({"noindex", "none"})
NOFOLLOW = frozenset({"nofollow", "none"})
NOARCHIVE = frozenset({"noarchive", "nocache"})  # "nocache": Bing's word for it


def meta_directives(content: str) -> frozenset[str]:
    """The directives (lower case) of a ``<meta name=robots content=...>``."""
    return frozenset(d.strip() for d in content.lower().split(",") if d.strip())


def robots_tag_directives(values: Iterable[str], user_agent: str) -> frozenset[str]:
    """The directives (lower case) of the ``X-Robots-Tag`` header ``values`` that bind the
    crawler sending ``user_agent``: unaddressed ones and those addressed to its product token."""
    agent = user_agent.split("/", 1)[0].strip().lower()
    directives: set[str] = set()
    for value in values:
        addressee = ""  # everyone, until a "name:" prefix says otherwise
        for part in value.split(","):
            name, colon, rest = part.partition(":")
            name = name.strip().lower()
            if colon and name not in _VALUED and rest.strip():
                addressee = name
                name = rest.partition(":")[0].strip().lower()
            if name and addressee in ("", agent):
                directives.add(name)
    return frozenset(directives)
