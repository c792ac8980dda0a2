"""One HTTP request with aiohttp, bounded in time and size, never raising.

Every failure becomes a ``FetchResult`` with an ``error`` kind (``fetch_errors``) that
the crawler turns into a counter (``fetch_error_timeout``, ``too_large``, ...), so
one bad host can never stop a crawl. Redirects are not followed here: a 3xx
yields ``redirect_to`` (normalized), and the crawler makes the target its own
frontier entry, so robots.txt, politeness and URL dedup apply to it too (and
a redirect loop ends at the first URL seen twice). The one redirect asked again
here is one to the URL itself (a cookie check), once.

Bodies are decompressed here (``content_encoding.ContentDecoder``), not by
aiohttp, so that a gzip bomb never grows past ``max_bytes`` in memory: the cap
counts decoded bytes, because that is what a parser would have to hold.
"""

from __future__ import annotations

import asyncio
import http.client
import socket
import ssl
import time
import weakref
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Protocol
from urllib.parse import urljoin

import aiohttp

from services.crawler.web.fetch_errors import RETRYABLE_ERRORS, FetchError, is_retryable
from services.crawler.web.lenient_http import LenientResponse, lenient_get
from services.crawler.web.tls import crawler_tls
from services.text.errors import BadUrlError
from services.text.extract.charset import header_charset
from services.text.extract.content_encoding import ContentDecoder, compressed
from services.text.urls import header_href, normalize_url

if TYPE_CHECKING:
    from services.config import Settings

_CHUNK = 64 * 1024
# Only encodings zlib can stream with an output cap (brotli's API cannot bound one call's output).
ACCEPT_ENCODING = "gzip, deflate"


@dataclass
class FetchResult:
    """What one request produced.

    ``error`` is ``None`` on success (any HTTP status) or the ``FetchError`` that ended
    it; after ``too_large``, ``body`` holds the first ``max_bytes`` bytes (nothing when HEAD
    or the Content-Length told), after ``wrong_type`` it was not read.
    ``final_url`` is always ``url``, since redirects are not followed here; it is
    kept for the parser, which resolves relative links against it.
    """

    url: str
    final_url: str
    status: int | None = None
    content_type: str = ""
    body: bytes = b""
    error: FetchError | None = None
    detail: str = ""
    redirect_to: str | None = None  # normalized absolute target of a 3xx
    retry_after: float | None = None  # seconds asked by Retry-After on 429/503
    charset: str | None = None  # charset declared by the Content-Type header
    head_status: int | None = None  # status of the HEAD pre-check, when one ran
    robots_tag: tuple[
        str, ...
    ] = ()  # the X-Robots-Tag header's values (text/robots_directives.py reads them)
    refresh: str = ""  # the Refresh header ("0; url=/new"), which browsers obey as a meta refresh

    @property
    def ok(self) -> bool:
        """A 2xx response whose body was read completely."""
        return self.error is None and self.status is not None and 200 <= self.status < 300

    @property
    def retryable(self) -> bool:
        """Worth another attempt later (5xx, 429, timeouts, network trouble): ``is_retryable``."""
        return is_retryable(self.status, self.error)


@dataclass(frozen=True)
class Timeouts:
    """Seconds: to connect, between two reads (a stalled server), and for the whole fetch (a slow drip)."""

    connect: float = 10.0
    read: float = 20.0
    total: float = 30.0

    @classmethod
    def from_settings(cls, settings: Settings) -> Timeouts:
        """From ``settings.crawl``'s ``connect_timeout``, ``read_timeout`` and ``fetch_timeout``."""
        crawl = settings.crawl
        return cls(connect=crawl.connect_timeout, read=crawl.read_timeout, total=crawl.fetch_timeout)

    def client_timeout(self) -> aiohttp.ClientTimeout:
        return aiohttp.ClientTimeout(total=self.total, sock_connect=self.connect, sock_read=self.read)


class Fetch(Protocol):
    """The shape of ``fetch``. What the visitor, robots.txt and sitemaps request through is
    passed in as one of these, so a test can script the web they see."""

    def __call__(
        self,
        session: aiohttp.ClientSession,
        url: str,
        *,
        max_bytes: int,
        accept: Callable[[str], bool] | None = None,
        head_first: bool = False,
        timeouts: Timeouts | None = None,
    ) -> Awaitable[FetchResult]: ...


def make_session(
    user_agent: str,
    timeout: float,
    concurrency: int,
    *,
    connect_timeout: float | None = None,
    read_timeout: float | None = None,
    limit_per_host: int = 0,
    verify_tls: bool = False,
) -> aiohttp.ClientSession:
    """The one client session a crawl shares (connection pool, User-Agent, timeouts, TLS).

    ``timeout`` is the total per fetch; ``fetch`` re-applies the same bounds
    itself, so a session built elsewhere is still safe. ``verify_tls``: see ``tls.py``.
    """
    tls = crawler_tls(verify_tls)
    timeouts = Timeouts(
        connect=connect_timeout if connect_timeout is not None else min(timeout, 10.0),
        read=read_timeout if read_timeout is not None else timeout,
        total=timeout,
    )
    session = aiohttp.ClientSession(
        headers={"User-Agent": user_agent, "Accept-Encoding": ACCEPT_ENCODING},
        timeout=timeouts.client_timeout(),
        auto_decompress=False,
        connector=aiohttp.TCPConnector(
            limit=max(1, concurrency), limit_per_host=limit_per_host, ttl_dns_cache=300, ssl=tls
        ),
    )
    _SESSION_TLS[session] = tls
    return session


# The TLS context of each session, for the http.client path (aiohttp keeps its own private).
_SESSION_TLS: weakref.WeakKeyDictionary[aiohttp.ClientSession, ssl.SSLContext] = weakref.WeakKeyDictionary()


def parse_retry_after(value: str | None, now: float) -> float | None:
    """Retry-After as seconds from ``now``: delta-seconds or an HTTP-date (RFC 9110 10.2.3).

    A date in the past means "now" (0); anything unreadable is ``None``, so the
    crawler falls back to its own backoff.
    """
    if not value or not value.strip():
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # RFC 9110 dates are GMT; a zone-less parse means the same
        return None
    return max(0.0, when.timestamp() - now)


def redirect_target(url: str, location: str | None) -> tuple[str | None, str]:
    """(normalized absolute target, "") or (None, why it is unusable)."""
    if not location or not location.strip():
        return None, f"redirect from {url} has no Location header"
    try:
        return normalize_url(urljoin(url, header_href(location))), ""
    except (BadUrlError, ValueError) as exc:
        return None, f"redirect from {url} to {location!r} is not crawlable: {exc}"


async def fetch(
    session: aiohttp.ClientSession,
    url: str,
    *,
    max_bytes: int,
    accept: Callable[[str], bool] | None = None,
    head_first: bool = False,
    timeouts: Timeouts | None = None,
) -> FetchResult:
    """GET ``url`` (after a HEAD when ``head_first``); never follows redirects, never raises.

    The body is read only for 2xx responses whose Content-Type ``accept``
    allows: the crawler needs only the status of the others. With
    ``head_first``, a HEAD answering with a Content-Length over ``max_bytes``
    or an unwanted type saves the GET; servers that refuse HEAD (405, 501) or
    answer it with another error are asked with GET.
    """
    result = FetchResult(url=url, final_url=url)
    bounds = timeouts or _session_timeouts(session)
    try:
        async with asyncio.timeout(bounds.total):
            if not head_first or await _head(session, url, result, max_bytes, accept, bounds):
                await _get(session, url, result, max_bytes, accept, bounds)
            if _redirects_to_itself(result):
                # A cookie check (set a cookie, send the client back to the same page) or a
                # session parameter the normal form removes: asked once more, with the cookies
                # the answer set, as a browser does. A second time is a loop.
                result = FetchResult(url=url, final_url=url)
                await _get(session, url, result, max_bytes, accept, bounds)
                if _redirects_to_itself(result):
                    result.redirect_to = None
                    result.error, result.detail = FetchError.BAD_REDIRECT, f"{url} redirects to itself, twice"
    except TimeoutError:
        _fail(
            result,
            FetchError.TIMEOUT,
            f"no complete response from {url} within the time limits "
            f"(connect {bounds.connect:g} s, read {bounds.read:g} s, "
            f"total {bounds.total:g} s)",
        )
    except aiohttp.InvalidURL as exc:
        _fail(result, FetchError.BAD_URL, f"{url}: {exc}")
    except (aiohttp.ClientPayloadError, aiohttp.ServerDisconnectedError, asyncio.IncompleteReadError) as exc:
        _fail(
            result,
            FetchError.CLOSED,
            f"{url}: connection closed before the body ended ({type(exc).__name__}: {exc})",
        )
    except aiohttp.ClientResponseError as exc:  # malformed status line or headers
        result = await _ask_leniently(
            session, url, max_bytes, accept, bounds, f"{url}: bad HTTP response ({exc.status} {exc.message})"
        )
    except aiohttp.ClientConnectorDNSError as exc:  # before ClientConnectionError, its base class
        kind = FetchError.DNS if _no_such_name(exc.os_error) else FetchError.CONNECT
        _fail(result, kind, f"{url}: {type(exc).__name__}: {exc}")
    except aiohttp.ClientSSLError as exc:  # before ClientConnectionError, its base class
        _fail(
            result, FetchError.TLS, f"{url}: {type(exc).__name__}: {exc} (NIMBUS_VERIFY_TLS=false reaches it)"
        )
    except (aiohttp.ClientConnectionError, OSError) as exc:
        _fail(result, FetchError.CONNECT, f"{url}: {type(exc).__name__}: {exc}")
    except (aiohttp.ClientError, ValueError) as exc:
        _fail(result, FetchError.HTTP, f"{url}: {type(exc).__name__}: {exc}")
    return result


async def _ask_leniently(
    session: aiohttp.ClientSession,
    url: str,
    max_bytes: int,
    accept: Callable[[str], bool] | None,
    bounds: Timeouts,
    refused: str,
) -> FetchResult:
    """The same GET through ``http.client``, which reads what aiohttp's parser refused
    (``lenient_http``); ``refused`` (aiohttp's complaint) stays the error when that fails too."""
    result = FetchResult(url=url, final_url=url)
    headers = {"User-Agent": session.headers.get("User-Agent", ""), "Accept-Encoding": ACCEPT_ENCODING}
    try:
        async with asyncio.timeout(bounds.total):
            tls = _SESSION_TLS.get(session) or crawler_tls(verify=True)
            response = await asyncio.to_thread(
                lenient_get, url, headers, max_bytes, bounds.read, time.monotonic() + bounds.total, tls
            )
    except TimeoutError:
        _fail(
            result,
            FetchError.TIMEOUT,
            f"{refused}; read leniently: no complete response within {bounds.total:g} s",
        )
        return result
    except (OSError, http.client.HTTPException, ValueError) as exc:
        _fail(result, FetchError.HTTP, f"{refused}; read leniently: {type(exc).__name__}: {exc}")
        return result
    # No declared length: the cap is applied as the held bytes are decoded, as when streaming.
    await _read_response(response, None, _chunks(response.raw_body), result, max_bytes, accept)
    return result


async def _chunks(data: bytes) -> AsyncIterator[bytes]:
    for start in range(0, len(data), _CHUNK):
        yield data[start : start + _CHUNK]


def _no_such_name(error: OSError) -> bool:
    """Whether a lookup failed because the name does not exist (NXDOMAIN: a dead domain,
    which minutes do not revive) rather than for now (no answer, a server failure)."""
    permanent = {socket.EAI_NONAME, getattr(socket, "EAI_NODATA", socket.EAI_NONAME)}
    return isinstance(error, socket.gaierror) and error.errno in permanent


def _redirects_to_itself(result: FetchResult) -> bool:
    if result.redirect_to is None:
        return False
    try:
        return result.redirect_to == normalize_url(result.url)
    except BadUrlError:  # a robots.txt or sitemap URL fetched as given
        return False


def _fail(result: FetchResult, kind: FetchError, detail: str) -> None:
    result.error, result.detail = kind, detail
    if kind in RETRYABLE_ERRORS:
        result.body = b""  # a partial body must never be stored as the page


def _session_timeouts(session: aiohttp.ClientSession) -> Timeouts:
    t = session.timeout
    total = t.total or 30.0
    return Timeouts(connect=t.sock_connect or t.connect or total, read=t.sock_read or total, total=total)


def _read_status(resp: aiohttp.ClientResponse | LenientResponse, result: FetchResult) -> None:
    """Status-level facts shared by HEAD and GET: redirect target, retry advice."""
    result.status = resp.status
    result.content_type = resp.headers.get("Content-Type", "")
    result.charset = header_charset(result.content_type)
    if "X-Robots-Tag" in resp.headers:
        result.robots_tag = tuple(resp.headers.getall("X-Robots-Tag"))
    if "Refresh" in resp.headers:
        result.refresh = resp.headers["Refresh"]
    if 300 <= resp.status < 400 and resp.status != 304:
        result.redirect_to, why = redirect_target(result.url, resp.headers.get("Location"))
        if result.redirect_to is None:
            result.error, result.detail = FetchError.BAD_REDIRECT, why
    if resp.status in (429, 503):
        result.retry_after = parse_retry_after(resp.headers.get("Retry-After"), time.time())


def _too_large_or_wrong_type(
    result: FetchResult, length: int | None, max_bytes: int, accept: Callable[[str], bool] | None
) -> bool:
    if accept is not None and not accept(result.content_type):
        result.error = FetchError.WRONG_TYPE
        result.detail = f"{result.url}: Content-Type {result.content_type!r}"
        return True
    if length is not None and length > max_bytes:
        result.error = FetchError.TOO_LARGE
        result.detail = f"{result.url}: Content-Length {length} > {max_bytes}"
        return True
    return False


async def _head(
    session: aiohttp.ClientSession,
    url: str,
    result: FetchResult,
    max_bytes: int,
    accept: Callable[[str], bool] | None,
    bounds: Timeouts,
) -> bool:
    """The HEAD pre-check; True when a GET should follow."""
    try:
        return await _head_response(session, url, result, max_bytes, accept, bounds)
    except aiohttp.ClientResponseError:  # a garbled HEAD answer: some servers botch HEAD only
        return True


async def _head_response(
    session: aiohttp.ClientSession,
    url: str,
    result: FetchResult,
    max_bytes: int,
    accept: Callable[[str], bool] | None,
    bounds: Timeouts,
) -> bool:
    async with session.head(url, allow_redirects=False, timeout=bounds.client_timeout()) as resp:
        result.head_status = resp.status
        if 200 <= resp.status < 300:
            _read_status(resp, result)
            length = _content_length(resp)
            # Compressed bodies declare their compressed length: only a declared
            # identity length is a reliable lower bound of what we would hold.
            if compressed(resp.headers.get("Content-Encoding", "")):
                length = None
            return not _too_large_or_wrong_type(result, length, max_bytes, accept)
        if 300 <= resp.status < 400 or resp.status == 429 or (resp.status >= 500 and resp.status != 501):
            _read_status(resp, result)  # the GET would say the same; spare the server
            return False
        return True  # 405, 501 and other 4xx: some servers mishandle HEAD; GET decides


def _content_length(resp: aiohttp.ClientResponse) -> int | None:
    raw = resp.headers.get("Content-Length", "")
    return int(raw) if raw.strip().isdigit() else None


async def _get(
    session: aiohttp.ClientSession,
    url: str,
    result: FetchResult,
    max_bytes: int,
    accept: Callable[[str], bool] | None,
    bounds: Timeouts,
) -> None:
    async with session.get(
        url,
        allow_redirects=False,
        timeout=bounds.client_timeout(),
        auto_decompress=False,
        headers={"Accept-Encoding": ACCEPT_ENCODING},
    ) as resp:
        received = resp.content.iter_chunked(_CHUNK)
        await _read_response(resp, _content_length(resp), received, result, max_bytes, accept)


async def _read_response(
    resp: aiohttp.ClientResponse | LenientResponse,
    length: int | None,
    received: AsyncIterator[bytes],
    result: FetchResult,
    max_bytes: int,
    accept: Callable[[str], bool] | None,
) -> None:
    """Status and headers into ``result``, then a 2xx body of a wanted type, decoded and
    capped (``length``: the declared Content-Length, trusted only without an encoding)."""
    _read_status(resp, result)
    if not 200 <= resp.status < 300:
        return
    encoding = resp.headers.get("Content-Encoding", "")
    if _too_large_or_wrong_type(result, None if compressed(encoding) else length, max_bytes, accept):
        return
    try:
        decoder = ContentDecoder(encoding)
    except ValueError as exc:
        result.error, result.detail = FetchError.DECODE, f"{result.url}: {exc}"
        return
    await _read_body(received, result, decoder, max_bytes)


async def _read_body(
    received: AsyncIterator[bytes], result: FetchResult, decoder: ContentDecoder, max_bytes: int
) -> None:
    """Stream the body, decoded, into memory; stop one byte past ``max_bytes``."""
    chunks: list[bytes] = []
    size = 0
    try:
        async for chunk in received:
            data = decoder.feed(chunk, max_bytes - size)
            while data:
                chunks.append(data)
                size += len(data)
                if size > max_bytes:
                    result.error = FetchError.TOO_LARGE
                    result.detail = f"{result.url}: body exceeds {max_bytes} bytes (decoded)"
                    result.body = b"".join(chunks)[:max_bytes]
                    return
                data = decoder.more(max_bytes - size)
    except zlib.error as exc:
        result.error, result.detail = FetchError.DECODE, f"{result.url}: corrupt compressed body ({exc})"
        return
    if not decoder.complete:
        _fail(result, FetchError.CLOSED, f"{result.url}: compressed body ends before its end marker")
        return
    result.body = b"".join(chunks)
