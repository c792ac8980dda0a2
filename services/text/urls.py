"""URL normalization and identity.

w3lib's ``canonicalize_url`` (Scrapy's) does the hard part: percent-encoding,
dot segments, sorted query arguments, fragments. On top: lower-case host,
default ports dropped, tracking parameters removed, so that one page has one
``url_id`` however it was linked.

w3lib costs ~145 µs a URL and a page has ~20 links, so two shortcuts keep it
off the crawl's hot path: URLs that are already in normal form (lower-case
http(s), plain host, no default port, a path of unreserved characters without
dot segments, no query or fragment: most links on most sites) are returned as
they are after one regular-expression match, and the rest go through an LRU
cache (the same navigation links repeat on every page of a site).
"""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from w3lib.url import canonicalize_url

from services.text.errors import BadUrlError

_DEFAULT_PORTS = {"http": 80, "https": 443}
_TRACKING_PREFIXES = ("utm_",)
_TRACKING_PARAMS = frozenset({"gclid", "fbclid", "msclkid", "mc_cid", "mc_eid", "_ga", "yclid"})
MAX_URL_LENGTH = 2048  # longer URLs are almost always traps or session junk


# Already normal: scheme://host[:port]/path with unreserved path characters and
# no dot segment, empty segment, query or fragment. The port must not be the
# scheme's default (checked separately), and the host has no upper case.
_NORMAL = re.compile(
    r"(http|https)://[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*"
    r"(?::([1-9][0-9]{0,4}))?(?:/(?!\.\.?(?:/|$))[A-Za-z0-9_~.\-]+)*/"
    r"?"
)
_CACHE_SIZE = 1 << 16  # ~65k URLs: a few MB, bounded


def normalize_url(url: str) -> str:
    """The one normal form of ``url`` (raises ``BadUrlError`` for what we cannot crawl)."""
    match = _NORMAL.fullmatch(url)
    if match is not None and len(url) <= MAX_URL_LENGTH and url.count("/") >= 3:
        port = match.group(2)
        if port is None or (int(port) <= 65535 and int(port) != _DEFAULT_PORTS[match.group(1)]):
            return url
    return _normalize_cached(url)


@lru_cache(maxsize=_CACHE_SIZE)
def _normalize_cached(url: str) -> str:
    return _normalize_slow(url)


def _normalize_slow(url: str) -> str:
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.hostname:
        raise BadUrlError(f"not an absolute http(s) URL: {url!r}")
    try:
        port = parts.port
    except ValueError as exc:
        raise BadUrlError(f"bad port in URL {url!r}") from exc
    host = parts.hostname.lower().rstrip(".")
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    netloc = host if port in (None, _DEFAULT_PORTS[scheme]) else f"{host}:{port}"
    query = parts.query
    if query:
        pairs = [
            (k, v)
            for k, v in parse_qsl(query, keep_blank_values=True)
            if k.lower() not in _TRACKING_PARAMS and not k.lower().startswith(_TRACKING_PREFIXES)
        ]
        query = urlencode(pairs)
    rebuilt = urlunsplit((scheme, netloc, parts.path or "/", query, ""))
    normalized = canonicalize_url(rebuilt)
    if len(normalized) > MAX_URL_LENGTH:
        raise BadUrlError(f"URL longer than {MAX_URL_LENGTH} characters: {normalized[:80]}...")
    return normalized


def url_id(normalized_url: str) -> str:
    """Hex SHA-1 of the normalized URL: the document's key everywhere."""
    return hashlib.sha1(normalized_url.encode("utf-8")).hexdigest()


def in_scope(normalized_url: str, allowed_hosts: frozenset[str]) -> bool:
    """Whether the URL's host is one of ``allowed_hosts`` or below one (empty: all hosts)."""
    if not allowed_hosts:
        return True
    host = urlsplit(normalized_url).hostname or ""
    return any(host == h or host.endswith("." + h) for h in allowed_hosts)


def host_key(normalized_url: str) -> str:
    """``scheme://host[:port]``: the unit of politeness and robots.txt."""
    if normalized_url.startswith(("http://", "https://")):  # normal form: cut at the path's slash
        start = normalized_url.index("://") + 3
        end = normalized_url.find("/", start)
        netloc = normalized_url[start:] if end < 0 else normalized_url[start:end]
        if netloc and "@" not in netloc and "?" not in netloc and "#" not in netloc:  # no genexpr:
            # the committer calls this for every link it adds (~20 a page)
            return normalized_url[:start] + netloc
    parts = urlsplit(normalized_url)
    return f"{parts.scheme}://{parts.netloc}"
