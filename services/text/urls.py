"""URL normalization and identity.

Only RFC 3986's semantics-preserving normalizations (section 6.2.2), so the
server always receives a URL it knows: lower-case scheme and host, the
default port dropped, dot segments removed, percent-encodings in upper case,
encoded unreserved characters decoded, characters a URI cannot hold
(spaces, non-ASCII) percent-encoded as UTF-8 the way browsers send them, and
the fragment dropped. Nothing else is rewritten: ``%20`` stays ``%20`` (not
``+``), ``/`` and ``;`` in a query stay as written, query parameters keep their
order (sorting is not provably safe: some servers read them positionally).
The deliberate exceptions are the removal of well-known click-tracking
parameters (``utm_*``, ``gclid``, ``fbclid``, ...), which by their purpose never
change the page, and of session identifiers (``;jsessionid=``, ``PHPSESSID``,
``osCsid``, ASP's ``ASPSESSIONIDxxxxxxxx``, ColdFusion's ``CFID``+``CFTOKEN``):
a server that cannot keep its session in a cookie writes a new one into every
link of every page it serves, so one site becomes an endless supply of "new"
URLs of the same pages (the crawler trap Heritrix's ``StripSessionIDs`` and
Nutch's ``regex-normalize.xml`` remove the same way). A session parameter is
removed only when its value looks like a generated token (16 or more letters,
digits, ``-_.``), so a short ``sid=3`` that names a thing stays. The parameters
around them are kept byte for byte.

The full normalization is costly next to a link's other work and a page has ~20 links,
so two shortcuts keep it off the crawl's hot path: an LRU cache in front of everything
(the same navigation links repeat on every page of a site; a hit is far cheaper than even
the fast path), and URLs that are already in normal form (lower-case http(s), plain host,
no default port, a path of unreserved characters without dot segments, no query or
fragment: most links on most sites) are returned as they are after one
regular-expression match.
"""

from __future__ import annotations

import hashlib
import ipaddress
import re
from functools import lru_cache
from urllib.parse import unquote, unquote_plus, urlsplit

from services.text.errors import BadUrlError

_DEFAULT_PORTS = {"http": 80, "https": 443}
_TRACKING_PREFIXES = ("utm_",)
_TRACKING_PARAMS = frozenset({"gclid", "fbclid", "msclkid", "mc_cid", "mc_eid", "_ga", "yclid"})
MAX_URL_LENGTH = 2048  # longer URLs are almost always traps or session junk
MAX_HOST_CHARS = 253  # DNS's limit on a name
# Session identifiers (names lower-cased): Java servlets, PHP, osCommerce, Zen Cart, and
# the generic names; ASP's cookie is ASPSESSIONID plus eight letters.
_SESSION_PARAMS = frozenset(
    {"jsessionid", "phpsessid", "sid", "sessionid", "session_id", "sessid", "oscsid", "zenid"}
)
_ASP_SESSION = re.compile(r"aspsessionid[a-z]{8}")
_SESSION_TOKEN = re.compile(r"[0-9A-Za-z][0-9A-Za-z_.\-]{15,}")
_COLDFUSION = ("cfid", "cftoken")  # removed together: alone, either may be something else
# A servlet's session in the path: ";jsessionid=TOKEN" after the last segment it belongs to.
_PATH_SESSION = re.compile(r";(?:jsessionid|phpsessid)=([^;/?]*)", re.IGNORECASE)


# Already normal: scheme://host[:port]/path with unreserved path characters and
# no dot segment, empty segment, query or fragment. The port must not be the
# scheme's default (checked separately), and the host has no upper case, labels of at most
# 63 characters and no IDNA label (``xn--``: checked on the slow path); a host that ends in
# a digit must be an IPv4 address (checked separately).
_FAST_LABEL = r"(?!xn--)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
_NORMAL = re.compile(
    rf"(http|https)://({_FAST_LABEL}(?:\.{_FAST_LABEL})*)"
    r"(?::([1-9][0-9]{0,4}))?(?:/(?!\.\.?(?:/|$))[A-Za-z0-9_~.\-]+)*/"
    r"?"
)
_CACHE_SIZE = 1 << 16  # ~65k URLs: bounded memory (with their keys: docs/performance-notes.md)


@lru_cache(maxsize=_CACHE_SIZE)
def normalize_url(url: str) -> str:
    """The one normal form of ``url``, or ``BadUrlError`` (and no other error) for what we
    cannot crawl, with a message that names the URL and what is wrong with it: every URL an
    operator or a page gives passes here once (``checked_host`` says what a host may be)."""
    match = _NORMAL.fullmatch(url)
    if match is not None and len(url) <= MAX_URL_LENGTH and url.count("/") >= 3:
        host, port = match.group(2), match.group(3)
        if (port is None or (int(port) <= 65535 and int(port) != _DEFAULT_PORTS[match.group(1)])) and (
            len(host) <= MAX_HOST_CHARS and (not host[-1].isdigit() or _ipv4_ok(host))
        ):
            return url
    return _normalize_slow(url)


def _ipv4_ok(host: str) -> bool:
    """Whether a host that ends in a digit is a dotted IPv4 address (else the slow path says why)."""
    octets = host.split(".")
    return len(octets) == 4 and all(o.isdigit() and int(o) <= 255 for o in octets)


def _normalize_slow(url: str) -> str:
    if len(url) > MAX_URL_LENGTH:  # before any parsing: junk is not worth the work
        raise BadUrlError(f"URL longer than {MAX_URL_LENGTH} characters: {shown_url(url)}")
    try:
        parts = urlsplit(url.strip())
    except ValueError as exc:  # "Invalid IPv6 URL", "An IPv4 address cannot be in brackets", ...
        raise BadUrlError(f"bad IPv6 address in URL {shown_url(url)} ({exc})") from exc
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS:
        raise BadUrlError(f"not an absolute http(s) URL: {shown_url(url)}")
    host = checked_host(parts.netloc.rpartition("@")[2], url)
    port = _checked_port(parts.netloc.rpartition("@")[2], url)
    netloc = host if port in (None, _DEFAULT_PORTS[scheme]) else f"{host}:{port}"
    path = remove_dot_segments(_percent_normalized(parts.path or "/"))
    if ";" in path:
        path = _without_path_session(path)
    query = _without_tracking(_percent_normalized(parts.query)) if parts.query else ""
    normalized = f"{scheme}://{netloc}{path or '/'}" + (f"?{query}" if query else "")
    if len(normalized) > MAX_URL_LENGTH:
        raise BadUrlError(f"URL longer than {MAX_URL_LENGTH} characters: {shown_url(normalized)}")
    return normalized


def shown_url(text: str) -> str:
    """``text`` as an error message names it: quoted, control characters escaped, cut at 80."""
    return repr(text if len(text) <= 80 else text[:80] + "...")


_LABEL = re.compile(r"[a-z0-9_-]{1,63}")  # as browsers accept them: "_" and edge "-" included
_NUMERIC = re.compile(r"[0-9.]+")


def checked_host(netloc: str, url: str) -> str:
    """The host of ``netloc`` (``host[:port]``, no user info) in normal form, or ``BadUrlError``.

    As the WHATWG URL standard reads a host: percent-decoded, then an IPv6 literal must be an
    IPv6 address (no zone: browsers refuse one), a numeric name an IPv4 address, and any other
    name lower case and IDNA (non-ASCII labels to ``xn--``; an ``xn--`` label must decode to
    non-ASCII text without control characters). Labels are 1 to 63 letters, digits, ``-``
    or ``_`` and the name at most 253 characters: a space, ``<`` or a control character is in
    no host."""
    if netloc.startswith("["):
        literal = netloc[1 : netloc.find("]")] if "]" in netloc else netloc[1:]
        try:
            return f"[{_ipv6(literal)}]"
        except ValueError as exc:
            raise BadUrlError(f"bad IPv6 address in URL {shown_url(url)} ({exc})") from exc
    host = netloc.rsplit(":", 1)[0] if ":" in netloc else netloc
    if "%" in host:
        host = unquote(host, errors="strict") if _decodable(host) else host
    host = host.lower().rstrip(".")
    if not host:
        raise BadUrlError(f"no host in URL {shown_url(url)}")
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError as exc:
            raise BadUrlError(f"bad host name in URL {shown_url(url)}: not valid IDNA ({exc})") from exc
    if len(host) > MAX_HOST_CHARS:
        raise BadUrlError(f"bad host name in URL {shown_url(url)}: longer than {MAX_HOST_CHARS} characters")
    for label in host.split("."):
        if not _LABEL.fullmatch(label):
            raise BadUrlError(
                f"bad host name in URL {shown_url(url)}: labels are 1 to 63 letters, digits, - or _"
            )
        if label.startswith("xn--") and not _a_label_ok(label):
            raise BadUrlError(f"bad host name in URL {shown_url(url)}: {label!r} is not valid IDNA")
    if _NUMERIC.fullmatch(host):
        try:
            ipaddress.IPv4Address(host)
        except ValueError as exc:
            raise BadUrlError(f"bad host name in URL {shown_url(url)}: not an IPv4 address") from exc
    return host


def _ipv6(literal: str) -> str:
    """An IPv6 literal as written (lower case), if it is an address without a zone."""
    if "%" in literal:
        raise ValueError("a zone identifier is no part of a URL's host")
    ipaddress.IPv6Address(literal)
    return literal.lower()


def _decodable(text: str) -> bool:
    try:
        unquote(text, errors="strict")
    except UnicodeDecodeError:
        return False
    return True


def _a_label_ok(label: str) -> bool:
    """An ``xn--`` label that decodes (Punycode) to non-ASCII text without control characters."""
    try:
        decoded = label[4:].encode("ascii").decode("punycode")
    except UnicodeError:
        return False
    return bool(decoded) and not decoded.isascii() and decoded.isprintable()


def _checked_port(netloc: str, url: str) -> int | None:
    """The port of ``host[:port]`` (after an IPv6 literal's ``]``), or ``BadUrlError``: 1 to
    65535 in plain digits (no sign, no space)."""
    after = netloc[netloc.find("]") + 1 :] if netloc.startswith("[") else netloc
    if ":" not in after:
        if after and netloc.startswith("["):  # "[::1]junk"
            raise BadUrlError(f"bad IPv6 address in URL {shown_url(url)}: text after its ']'")
        return None
    text = after.rsplit(":", 1)[1]
    if text == "":
        return None  # "http://x.org:/": the scheme's default, as browsers read it
    if not (text.isascii() and text.isdigit()) or not 0 < int(text) <= 65535:
        raise BadUrlError(f"bad port in URL {shown_url(url)}: give 1 to 65535")
    return int(text)


_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_KEPT = _UNRESERVED | frozenset(":/?#[]@!$&'()*+,;=")  # RFC 3986 reserved + unreserved
_HEX = frozenset("0123456789abcdefABCDEF")


def _percent_normalized(component: str) -> str:
    """RFC 3986 6.2.2.1-2: ``%xx`` in upper case, unreserved ones decoded; characters a URI
    cannot hold (space, non-ASCII, a ``%`` not starting an escape) encoded as UTF-8 bytes."""
    out: list[str] = []
    i, n = 0, len(component)
    while i < n:
        ch = component[i]
        if ch == "%" and i + 2 < n and component[i + 1] in _HEX and component[i + 2] in _HEX:
            decoded = chr(int(component[i + 1 : i + 3], 16))
            out.append(decoded if decoded in _UNRESERVED else "%" + component[i + 1 : i + 3].upper())
            i += 3
            continue
        if ch in _KEPT:
            out.append(ch)
        else:
            out.extend(f"%{b:02X}" for b in ch.encode("utf-8"))
        i += 1
    return "".join(out)


def remove_dot_segments(path: str) -> str:
    """RFC 3986 section 5.2.4, as written there."""
    if "." not in path:
        return path
    output: list[str] = []
    while path:
        if path.startswith("../"):
            path = path[3:]
        elif path.startswith("./") or path.startswith("/./"):
            path = path[2:]
        elif path == "/.":
            path = "/"
        elif path.startswith("/../"):
            path = path[3:]
            if output:
                output.pop()
        elif path == "/..":
            path = "/"
            if output:
                output.pop()
        elif path in {".", ".."}:
            path = ""
        else:
            start = 1 if path.startswith("/") else 0
            cut = path.find("/", start)
            segment, path = (path, "") if cut < 0 else (path[:cut], path[cut:])
            output.append(segment)
    return "".join(output)


def _without_tracking(query: str) -> str:
    """The query without click-tracking parameters and session identifiers; every other
    parameter as written, in order."""
    pairs = query.split("&")
    keys = [unquote_plus(pair.split("=", 1)[0]).lower() for pair in pairs]
    coldfusion = all(name in keys for name in _COLDFUSION)
    kept = []
    for pair, key in zip(pairs, keys, strict=True):
        if key in _TRACKING_PARAMS or key.startswith(_TRACKING_PREFIXES):
            continue
        if coldfusion and key in _COLDFUSION:
            continue
        if (key in _SESSION_PARAMS or _ASP_SESSION.fullmatch(key)) and _SESSION_TOKEN.fullmatch(
            unquote_plus(pair.partition("=")[2])
        ):
            continue
        kept.append(pair)
    return "&".join(kept)


def _without_path_session(path: str) -> str:
    """The path without a servlet's ``;jsessionid=TOKEN`` (a short value is no session)."""
    return _PATH_SESSION.sub(lambda m: "" if _SESSION_TOKEN.fullmatch(m.group(1)) else m.group(0), path)


_C0_AND_SPACE = "".join(chr(c) for c in range(0x21))
_TAB_OR_NEWLINE = str.maketrans("", "", "\t\n\r")
_QUERY_OR_FRAGMENT = re.compile(r"[?#]")


def browser_href(href: str) -> str:
    """A link target as browsers read it (the WHATWG URL standard), before resolving it.

    Leading and trailing spaces and control characters go, tabs and newlines go from
    anywhere (long hrefs wrapped across lines), and a backslash before the query is a
    slash, as http(s) URLs read it: ``..\\docs\\page.htm`` from an old IIS site
    leads where a browser goes, not to a dead ``..%5Cdocs%5Cpage.htm``."""
    href = href.strip(_C0_AND_SPACE)
    if "\t" in href or "\n" in href or "\r" in href:
        href = href.translate(_TAB_OR_NEWLINE)
    if "\\" in href:
        end = _QUERY_OR_FRAGMENT.search(href)
        cut = end.start() if end is not None else len(href)
        href = href[:cut].replace("\\", "/") + href[cut:]
    return href


def header_href(value: str) -> str:
    """A URL from an HTTP header (``Location``) as browsers read it: ``browser_href``, with
    the bytes that were not UTF-8 (kept as ``surrogateescape`` characters, as aiohttp reads
    headers) percent-encoded as sent: ``/caf\\xe9.html`` from a Latin-1 server becomes
    ``/caf%E9.html``, the file the server has, where decoding it as text could only guess."""
    if not value.isascii():
        value = "".join(f"%{ord(ch) - 0xDC00:02X}" if "\udc80" <= ch <= "\udcff" else ch for ch in value)
    return browser_href(value)


def url_id(normalized_url: str) -> str:
    """Hex SHA-1 of the normalized URL: the document's key everywhere."""
    return hashlib.sha1(normalized_url.encode("utf-8")).hexdigest()


MAX_PATH_SEGMENTS = 20  # Heritrix's TooManyPathSegmentsDecideRule default
_REPEATS = 3  # a segment this often in one path: a loop of relative links


def trap_path(normalized_url: str) -> bool:
    """Whether the URL's path is the shape of a crawler trap rather than of a page.

    A relative link on a page that a server answers at any depth (``href="docs/"`` on
    ``/docs/``, a catch-all handler, a mis-set ``<base>``) makes ``/docs/docs/docs/...``,
    every level a "new" URL of the same page. The rules are mature crawlers': a path of more
    than ``MAX_PATH_SEGMENTS`` segments (Heritrix), or one segment three times in it (Nutch's
    ``regex-urlfilter`` and Heritrix's ``PathologicalPathDecideRule`` catch the same loops).
    Pure and cheap: most URLs have too few slashes to be asked at all."""
    if normalized_url.count("/") < 3 + _REPEATS:  # scheme's two, the path's first, the repeats
        return False
    path = normalized_url.split("?", 1)[0].split("/")[3:]
    if len(path) > MAX_PATH_SEGMENTS:
        return True
    seen: dict[str, int] = {}
    for segment in path:
        if segment:
            count = seen[segment] = seen.get(segment, 0) + 1
            if count >= _REPEATS:
                return True
    return False


_HOST_NAME = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*")


def bare_host(value: str) -> str:
    """The host name an operator means by ``value`` ("Example.COM", "http://example.com/x",
    "bücher.example."): lower case, IDNA, no port or trailing dot; ``BadUrlError`` when it
    names none. IPv4 addresses are host names here too."""
    text = value.strip()
    if "://" in text:
        try:
            text = urlsplit(text).hostname or ""
        except ValueError as exc:
            raise BadUrlError(f"not a host name or URL: {shown_url(value)}") from exc
    host = text.lower().rstrip(".")
    if host and not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError as exc:
            raise BadUrlError(f"not a host name: {shown_url(value)}") from exc
    if (
        len(host) > MAX_HOST_CHARS
        or not _HOST_NAME.fullmatch(host)
        or any(label.startswith("xn--") and not _a_label_ok(label) for label in host.split("."))
    ):
        raise BadUrlError(f"not a host name: {shown_url(value)} (give example.org or http://example.org/)")
    return host


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
