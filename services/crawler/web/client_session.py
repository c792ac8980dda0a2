"""The one aiohttp client session a crawl shares (connection pool, User-Agent, TLS) and the
time bounds of a fetch (``Timeouts``). The session's TLS context is kept beside it
(``SESSION_TLS``) for the requests ``lenient_http`` makes through ``http.client``.
"""

from __future__ import annotations

import ssl
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING

import aiohttp

from services.crawler.web.tls import crawler_tls

if TYPE_CHECKING:
    from services.config import Settings

# Only encodings zlib can stream with an output cap (brotli's API cannot bound one call's output).
ACCEPT_ENCODING = "gzip, deflate"


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
    SESSION_TLS[session] = tls
    return session


# The TLS context of each session, for the http.client path (aiohttp keeps its own private).
SESSION_TLS: weakref.WeakKeyDictionary[aiohttp.ClientSession, ssl.SSLContext] = weakref.WeakKeyDictionary()


def session_timeouts(session: aiohttp.ClientSession) -> Timeouts:
    """The bounds ``session`` was built with (``fetch`` re-applies them to every request)."""
    t = session.timeout
    total = t.total or 30.0
    return Timeouts(connect=t.sock_connect or t.connect or total, read=t.sock_read or total, total=total)
