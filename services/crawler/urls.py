"""URL normalization and identity.

w3lib's ``canonicalize_url`` (Scrapy's) does the hard part: percent-encoding,
dot segments, sorted query arguments, fragments. On top: lower-case host,
default ports dropped, tracking parameters removed, so that one page has one
``url_id`` however it was linked.
"""

from __future__ import annotations

import hashlib
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from w3lib.url import canonicalize_url

_DEFAULT_PORTS = {"http": 80, "https": 443}
_TRACKING_PREFIXES = ("utm_",)
_TRACKING_PARAMS = frozenset({"gclid", "fbclid", "msclkid", "mc_cid", "mc_eid", "_ga", "yclid"})
MAX_URL_LENGTH = 2048  # longer URLs are almost always traps or session junk


class BadUrlError(ValueError):
    """Not an absolute http(s) URL we can crawl."""


def normalize_url(url: str) -> str:
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
        pairs = [(k, v) for k, v in parse_qsl(query, keep_blank_values=True)
                 if k.lower() not in _TRACKING_PARAMS and not k.lower().startswith(_TRACKING_PREFIXES)]
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
    parts = urlsplit(normalized_url)
    return f"{parts.scheme}://{parts.netloc}"
