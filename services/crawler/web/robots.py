"""robots.txt: fetched once per host, parsed with Protego, cached in the hosts table.

RFC 9309 decides what a missing or failing robots.txt means: a 4xx response
allows everything, a 5xx or no answer at all disallows everything (the site
may be down or overloaded; crawling it anyway is what gets crawlers banned).
429 Too Many Requests counts as a server error here, as Google treats it.
Such hosts are retried after ``UNAVAILABLE_TTL`` rather than a day.

Redirects of robots.txt are followed here (up to five hops, RFC 9309
2.3.1.2), since ``fetch`` itself never follows them. A 2xx body that is not
robots.txt at all (an HTML error page, binary noise) parses to no rules, so
everything is allowed, and ``garbage`` says so for the crawler's counter.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

import aiohttp
from protego import Protego
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from services.crawler.web.fetch import Fetch, fetch
from services.crawler.web.fetch_errors import RETRYABLE_ERRORS, FetchError
from services.crawler.web.fetch_result import FetchResult
from services.storage.sql.models import Host

ROBOTS_MAX_BYTES = 512 * 1024  # RFC 9309: parse at least the first 500 KiB
ROBOTS_TTL = 24 * 3600.0  # RFC 9309: do not use a cached copy for more than 24 hours
UNAVAILABLE_TTL = 600.0  # a failing robots.txt is asked again after 10 minutes
ROBOTS_MAX_REDIRECTS = 5  # RFC 9309 2.3.1.2: follow at least five consecutive redirects
_UNREADABLE = frozenset({FetchError.HTTP, FetchError.DECODE})  # an answer, but not one we can read
# A line any robots.txt parser would recognise (RFC 9309 plus the common extensions).
_DIRECTIVE = re.compile(
    r"^[ \t]*(user-agent|allow|disallow|crawl-delay|sitemap|request-rate|visit-time|host)[ \t]*[: \t]",
    re.I | re.M,
)


@dataclass
class RobotsRules:
    """The robots policy of one host. ``status`` 0 means robots.txt was unreachable."""

    status: int
    text: str = ""
    fetched_at: float = 0.0

    @property
    def unavailable(self) -> bool:
        return self.status in (0, 429) or self.status >= 500

    @property
    def ttl(self) -> float:
        return UNAVAILABLE_TTL if self.unavailable else ROBOTS_TTL

    @cached_property
    def garbage(self) -> bool:
        """A 2xx body with text but not one robots.txt directive (an HTML page, binary noise)."""
        return 200 <= self.status < 300 and bool(self.text.strip()) and not _DIRECTIVE.search(self.text)

    @property
    def sitemaps(self) -> list[str]:
        """Sitemap URLs named by robots.txt (absolute as written; relative ones are left to the caller)."""
        parser = self.parser
        return [] if parser is None else [url.strip() for url in parser.sitemaps if url.strip()]

    @cached_property
    def parser(self) -> Protego | None:
        if 200 <= self.status < 300:
            return Protego.parse(self.text)
        return None

    def allowed(self, url: str, user_agent: str) -> bool:
        if self.unavailable:
            return False
        parser = self.parser
        return True if parser is None else parser.can_fetch(url, user_agent)

    def crawl_delay(self, user_agent: str) -> float | None:
        """Seconds between requests the site asks for: its ``Crawl-delay``, or what its
        ``Request-rate`` (``1/10s``: one request per ten seconds, the older extension some
        sites still write instead) comes to; the larger when both are given."""
        parser = self.parser
        if parser is None:
            return None
        delay = parser.crawl_delay(user_agent)
        rate = parser.request_rate(user_agent)
        if rate is not None and rate.requests > 0:
            spacing = rate.seconds / rate.requests
            delay = spacing if delay is None else max(delay, spacing)
        return delay


def rules_from_fetch(result: FetchResult, now: float) -> RobotsRules:
    """Pure: turn the robots.txt fetch into rules (RFC 9309's status table).

    No answer, a failure a page fetch would retry, or a body that cannot be read is
    "unreachable" (disallow, asked again after ``UNAVAILABLE_TTL``): parsing what arrived
    of a cut or garbled file could allow what its lost lines disallow."""
    if result.status is None or result.error in RETRYABLE_ERRORS or result.error in _UNREADABLE:
        return RobotsRules(status=0, fetched_at=now)  # unreachable, or cut off mid-body
    status = result.status
    if 200 <= status < 300:
        # A too-large file is cut at the cap, which RFC 9309 explicitly allows.
        text = result.body.decode("utf-8", "replace").removeprefix("\ufeff")
        return RobotsRules(status=status, text=text, fetched_at=now)
    if 300 <= status < 400:  # more than ROBOTS_MAX_REDIRECTS redirects, or a broken one: missing
        return RobotsRules(status=404, fetched_at=now)
    return RobotsRules(status=status, fetched_at=now)


def effective_delay(rules: RobotsRules, user_agent: str, base: float, cap: float) -> tuple[float, bool]:
    """Seconds between requests to a host, and whether robots.txt asked for more than ``cap``.

    The larger of our own delay and the site's Crawl-delay, which is capped so
    that one site cannot stall a crawl (a delay of a day is not unheard of).
    """
    asked = rules.crawl_delay(user_agent) or 0.0
    return max(base, min(asked, cap)), asked > cap


def robots_url(host: str) -> str:
    return f"{host}/robots.txt"


async def fetch_robots(http: aiohttp.ClientSession, host: str, *, fetch: Fetch = fetch) -> FetchResult:
    """GET ``host``'s robots.txt, following up to ``ROBOTS_MAX_REDIRECTS`` redirects (to any host)."""
    url = robots_url(host)
    seen = {url}
    result = await fetch(http, url, max_bytes=ROBOTS_MAX_BYTES)
    for _ in range(ROBOTS_MAX_REDIRECTS):
        target = result.redirect_to
        if target is None or target in seen:
            break
        seen.add(target)
        result = await fetch(http, target, max_bytes=ROBOTS_MAX_BYTES)
    return result


class RobotsCache:
    """Rules per host: memory first, then the hosts table, then the network.

    The crawler calls ``rules_for`` from inside the host's politeness slot, so
    two fetches of one robots.txt never race within a process. ``fetch`` makes its requests.
    """

    def __init__(
        self,
        sessions: sessionmaker[Session],
        user_agent: str,
        clock: Callable[[], float] = time.time,
        *,
        fetch: Fetch = fetch,
    ) -> None:
        self.sessions = sessions
        self.clock = clock
        self.user_agent = user_agent
        self._fetch = fetch
        self._memory: dict[str, RobotsRules] = {}

    def cached(self, host: str, now: float) -> RobotsRules | None:
        """Rules still fresh in memory or in the database, without any request."""
        rules = self._memory.get(host)
        if rules is None:
            rules = self._load(host)
        if rules is None or now - rules.fetched_at > rules.ttl:
            return None
        self._memory[host] = rules
        return rules

    async def fetch(self, http: aiohttp.ClientSession, host: str) -> RobotsRules:
        """Download, parse and store robots.txt for ``host`` (one request, more after redirects)."""
        result = await fetch_robots(http, host, fetch=self._fetch)
        rules = rules_from_fetch(result, self.clock())
        await asyncio.to_thread(self._store, host, rules)
        self._memory[host] = rules
        return rules

    def _load(self, host: str) -> RobotsRules | None:
        with self.sessions() as session:
            row = session.get(Host, host)
            if row is None or row.robots_fetched_at is None or row.robots_status is None:
                return None
            return RobotsRules(row.robots_status, row.robots_txt or "", row.robots_fetched_at)

    def _store(self, host: str, rules: RobotsRules) -> None:
        # Two crawler processes may store one host's robots.txt at once (a
        # batch taken over after a lease expired): the loser of the insert
        # race updates the winner's row instead of failing the crawl.
        for attempt in range(2):
            try:
                with self.sessions.begin() as session:
                    row = session.get(Host, host, with_for_update=True)
                    if row is None:
                        row = Host(host=host, next_fetch_at=0.0, pages=0)
                        session.add(row)
                    row.robots_txt = rules.text
                    row.robots_status = rules.status
                    row.robots_fetched_at = rules.fetched_at
                    row.crawl_delay = rules.crawl_delay(self.user_agent)
                return
            except IntegrityError:
                if attempt:
                    raise
