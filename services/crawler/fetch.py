"""One HTTP GET with aiohttp, bounded in time and size, never raising.

Every failure becomes a ``FetchResult`` with a short ``error`` kind that the
crawler turns into a counter (``fetch_error_timeout``, ``too_large``, ...), so
one bad host can never stop a crawl. The body cap is enforced while streaming
(after decompression, so a gzip bomb is cut off too), not after the fact.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

import aiohttp

MAX_REDIRECTS = 5  # Scrapy's and browsers' limits are higher; five covers http->https->www->/
_CHUNK = 64 * 1024


@dataclass
class FetchResult:
    """What one GET produced.

    ``final_url`` differs from ``url`` after redirects. ``error`` is ``None`` on
    success (any HTTP status) or one of: ``timeout``, ``connect``, ``redirects``,
    ``bad_url``, ``http`` (protocol trouble), ``too_large`` (``body`` then holds
    the first ``max_bytes`` bytes), ``wrong_type`` (body not read).
    """

    url: str
    final_url: str
    status: int | None = None
    content_type: str = ""
    body: bytes = b""
    error: str | None = None
    detail: str = ""

    @property
    def ok(self) -> bool:
        """A 2xx response whose body was read completely."""
        return self.error is None and self.status is not None and 200 <= self.status < 300


def make_session(user_agent: str, timeout: float, concurrency: int) -> aiohttp.ClientSession:
    """The one client session a crawl shares (connection pool, User-Agent, timeouts)."""
    return aiohttp.ClientSession(
        headers={"User-Agent": user_agent},
        timeout=aiohttp.ClientTimeout(total=timeout, sock_connect=min(timeout, 10.0)),
        connector=aiohttp.TCPConnector(limit=max(1, concurrency), ttl_dns_cache=300),
    )


async def fetch(
    session: aiohttp.ClientSession,
    url: str,
    *,
    max_bytes: int,
    accept: Callable[[str], bool] | None = None,
) -> FetchResult:
    """GET ``url``; read the body only for 2xx responses whose Content-Type ``accept`` allows.

    Non-2xx bodies are never read: the crawler only needs their status.
    """
    result = FetchResult(url=url, final_url=url)
    try:
        async with session.get(url, max_redirects=MAX_REDIRECTS) as resp:
            result.final_url = str(resp.url)
            result.status = resp.status
            result.content_type = resp.headers.get("Content-Type", "")
            if not 200 <= resp.status < 300:
                return result
            if accept is not None and not accept(result.content_type):
                result.error = "wrong_type"
                return result
            if resp.content_length is not None and resp.content_length > max_bytes:
                result.error = "too_large"
                result.detail = f"Content-Length {resp.content_length} > {max_bytes}"
                return result
            chunks: list[bytes] = []
            size = 0
            async for chunk in resp.content.iter_chunked(_CHUNK):
                chunks.append(chunk)
                size += len(chunk)
                if size > max_bytes:
                    result.error = "too_large"
                    result.detail = f"body exceeds {max_bytes} bytes"
                    result.body = b"".join(chunks)[:max_bytes]
                    return result
            result.body = b"".join(chunks)
    except TimeoutError:
        result.error, result.detail = "timeout", f"no complete response from {url}"
    except aiohttp.TooManyRedirects as exc:
        result.error, result.detail = "redirects", f"more than {MAX_REDIRECTS} redirects ({exc})"
    except aiohttp.InvalidURL as exc:
        result.error, result.detail = "bad_url", str(exc)
    except (aiohttp.ClientConnectionError, OSError) as exc:
        result.error, result.detail = "connect", f"{type(exc).__name__}: {exc}"
    except (aiohttp.ClientError, asyncio.IncompleteReadError, ValueError) as exc:
        result.error, result.detail = "http", f"{type(exc).__name__}: {exc}"
    return result
