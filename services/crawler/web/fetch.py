"""One HTTP request with aiohttp, bounded in time and size, never raising.

Every failure becomes a ``FetchResult`` with an ``error`` kind (``fetch_errors``) that
the crawler turns into a counter (``fetch_error_timeout``, ``too_large``, ...), so
one bad host can never stop a crawl. Redirects are not followed here: a 3xx
yields ``redirect_to`` (normalized), and the crawler makes the target its own
frontier entry, so robots.txt, politeness and URL dedup apply to it too (and
a redirect loop ends at the first URL seen twice). The one redirect asked again
here is one to the URL itself (a cookie check), once.

Failures are recorded on the result (``fetch_result.fail``); reading the status, headers
and body is ``response``'s, the shared client session ``client_session``'s.
"""

from __future__ import annotations

import asyncio
import http.client
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Protocol

import aiohttp

from services.crawler.web.client_session import ACCEPT_ENCODING, SESSION_TLS, Timeouts, session_timeouts
from services.crawler.web.fetch_errors import FetchError
from services.crawler.web.fetch_result import FetchResult, fail
from services.crawler.web.lenient_http import lenient_get
from services.crawler.web.response import content_length, read_response, read_status, too_large_or_wrong_type
from services.crawler.web.tls import crawler_tls
from services.text.errors import BadUrlError
from services.text.extract.content_encoding import compressed
from services.text.urls import normalize_url

_CHUNK = 64 * 1024


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
    bounds = timeouts or session_timeouts(session)
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
        fail(
            result,
            FetchError.TIMEOUT,
            f"no complete response from {url} within the time limits "
            f"(connect {bounds.connect:g} s, read {bounds.read:g} s, "
            f"total {bounds.total:g} s)",
        )
    except aiohttp.InvalidURL as exc:
        fail(result, FetchError.BAD_URL, f"{url}: {exc}")
    except (aiohttp.ClientPayloadError, aiohttp.ServerDisconnectedError, asyncio.IncompleteReadError) as exc:
        fail(
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
        fail(result, kind, f"{url}: {type(exc).__name__}: {exc}")
    except aiohttp.ClientSSLError as exc:  # before ClientConnectionError, its base class
        fail(
            result, FetchError.TLS, f"{url}: {type(exc).__name__}: {exc} (NIMBUS_VERIFY_TLS=false reaches it)"
        )
    except (aiohttp.ClientConnectionError, OSError) as exc:
        fail(result, FetchError.CONNECT, f"{url}: {type(exc).__name__}: {exc}")
    except (aiohttp.ClientError, ValueError) as exc:
        fail(result, FetchError.HTTP, f"{url}: {type(exc).__name__}: {exc}")
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
            tls = SESSION_TLS.get(session) or crawler_tls(verify=True)
            response = await asyncio.to_thread(
                lenient_get, url, headers, max_bytes, bounds.read, time.monotonic() + bounds.total, tls
            )
    except TimeoutError:
        fail(
            result,
            FetchError.TIMEOUT,
            f"{refused}; read leniently: no complete response within {bounds.total:g} s",
        )
        return result
    except (OSError, http.client.HTTPException, ValueError) as exc:
        fail(result, FetchError.HTTP, f"{refused}; read leniently: {type(exc).__name__}: {exc}")
        return result
    # No declared length: the cap is applied as the held bytes are decoded, as when streaming.
    await read_response(response, None, _chunks(response.raw_body), result, max_bytes, accept)
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
            read_status(resp, result)
            length = content_length(resp)
            # Compressed bodies declare their compressed length: only a declared
            # identity length is a reliable lower bound of what we would hold.
            if compressed(resp.headers.get("Content-Encoding", "")):
                length = None
            return not too_large_or_wrong_type(result, length, max_bytes, accept)
        if 300 <= resp.status < 400 or resp.status == 429 or (resp.status >= 500 and resp.status != 501):
            read_status(resp, result)  # the GET would say the same; spare the server
            return False
        return True  # 405, 501 and other 4xx: some servers mishandle HEAD; GET decides


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
        await read_response(resp, content_length(resp), received, result, max_bytes, accept)
