"""What a response says and how much of it is kept: status and headers into a
``FetchResult`` (redirect target, Retry-After, X-Robots-Tag, Refresh), then a 2xx body of a
wanted type, decoded here (``content_encoding.ContentDecoder``) and capped at ``max_bytes``
decoded bytes, so that a gzip bomb never grows past the cap in memory. Shared by aiohttp's
responses and ``lenient_http``'s.
"""

from __future__ import annotations

import time
import zlib
from collections.abc import AsyncIterator, Callable
from email.utils import parsedate_to_datetime
from urllib.parse import urljoin

import aiohttp

from services.crawler.web.fetch_errors import FetchError
from services.crawler.web.fetch_result import FetchResult, fail
from services.crawler.web.lenient_http import LenientResponse
from services.text.errors import BadUrlError
from services.text.extract.charset import header_charset
from services.text.extract.content_encoding import ContentDecoder, compressed
from services.text.urls import header_href, normalize_url


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


def read_status(resp: aiohttp.ClientResponse | LenientResponse, result: FetchResult) -> None:
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


def too_large_or_wrong_type(
    result: FetchResult, length: int | None, max_bytes: int, accept: Callable[[str], bool] | None
) -> bool:
    """Whether the body is unwanted (``accept`` refuses its type) or declared too large
    (``length``), with the reason in ``result``."""
    if accept is not None and not accept(result.content_type):
        result.error = FetchError.WRONG_TYPE
        result.detail = f"{result.url}: Content-Type {result.content_type!r}"
        return True
    if length is not None and length > max_bytes:
        result.error = FetchError.TOO_LARGE
        result.detail = f"{result.url}: Content-Length {length} > {max_bytes}"
        return True
    return False


def content_length(resp: aiohttp.ClientResponse) -> int | None:
    """The declared Content-Length, None when missing or not a number."""
    raw = resp.headers.get("Content-Length", "")
    return int(raw) if raw.strip().isdigit() else None


async def read_response(
    resp: aiohttp.ClientResponse | LenientResponse,
    length: int | None,
    received: AsyncIterator[bytes],
    result: FetchResult,
    max_bytes: int,
    accept: Callable[[str], bool] | None,
) -> None:
    """Status and headers into ``result``, then a 2xx body of a wanted type, decoded and
    capped (``length``: the declared Content-Length, trusted only without an encoding)."""
    read_status(resp, result)
    if not 200 <= resp.status < 300:
        return
    encoding = resp.headers.get("Content-Encoding", "")
    if too_large_or_wrong_type(result, None if compressed(encoding) else length, max_bytes, accept):
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
        fail(result, FetchError.CLOSED, f"{result.url}: compressed body ends before its end marker")
        return
    result.body = b"".join(chunks)
