"""What each host and path prefix has answered so far: the crawl budget goes to live pages first.

On an old site most links are dead, and they are not spread evenly: a removed section
(``/old/``), a ``/cgi-bin/`` that is gone, a host that no longer exists. Every link on a page
starts with the same priority, so without this the page cap is spent on a link list of 404s
before the live pages one level deeper are reached. This is the crawl-time version of what
Heritrix's per-queue budgets and Nutch's fetch-status scoring do: keep a tally of live and dead
answers per host, per first path segment and per directory, and rank a URL whose most specific
tallied prefix is mostly dead behind every URL with no such evidence.

The tally lives in the crawl process that owns the host (partitions make that one process), so
it sees every answer the host gives. It is used twice: the committer caps the priority of links
it adds into a dead prefix, and a visit that finds its URL's prefix has turned out dead since the
URL was queued puts it back at the capped priority without spending a request (a lazy
re-prioritization: links queued before the evidence existed are not rewritten in bulk).

Pure bookkeeping, no I/O: tested without servers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

MIN_EVIDENCE = 3  # answers a prefix needs before it is judged
MIN_DEAD = 3  # a prefix is "mostly dead" only after this many dead answers ...
# ... and when its smoothed live share is below this: at least three answers in four dead. A
# live section with a stray missing page per page is half dead and must not sink with /old/.
DEAD_SHARE = 0.25
SCALE = 4.0  # priority points per halving of the live share (hub priorities are 0..~10)
# Every cap is below this: a crawler with work in flight leases nothing under it, since the
# links that work will add may be live; dead-prefix URLs wait until the crawl is otherwise idle.
CAPPED_BELOW = SCALE * math.log2(DEAD_SHARE)

# 4xx that speak of the server's load, not of the URL; every other 4xx (gone, broken, forbidden)
# is a request that yielded no page.
_LOAD_4XX = frozenset({408, 429})
# Fetch errors that say no server is there: web.fetch_errors.FetchError's CONNECT and DNS, by
# value, since the frontier does not read the web (a unit test pins the two together).
UNREACHABLE = frozenset({"connect", "dns"})


def is_dead(status: int | None, error: str | None) -> bool | None:
    """True: no page there (404, 410, 403, other 4xx, connection refused or DNS failure); False: it
    answered (2xx, 3xx); None: says nothing about the URL (5xx, 408, 429, timeouts: the server's load)."""
    if status is None:
        return True if error in UNREACHABLE else None
    if 200 <= status < 400:
        return False
    if 400 <= status < 500:
        return None if status in _LOAD_4XX else True
    return None


@dataclass(slots=True)
class Tally:
    live: int = 0
    dead: int = 0

    def cap(self) -> float | None:
        """The highest priority a URL under this prefix keeps, or None when the prefix is not
        mostly dead. Laplace-smoothed live share, so a few answers never give an extreme."""
        if self.live + self.dead < MIN_EVIDENCE or self.dead < MIN_DEAD:
            return None
        share = (self.live + 1) / (self.live + self.dead + 2)
        return SCALE * math.log2(share) if share < DEAD_SHARE else None


def prefixes(url: str) -> tuple[str, str, str]:
    """(directory, first path segment, host) keys of a normalized absolute URL, most specific first.

    String slicing, not urlsplit: the committer asks this for every link it adds.
    """
    start = url.find("//")
    slash = url.find("/", start + 2 if start >= 0 else 0)
    if slash < 0:
        return url + "/", url + "/", url
    host = url[:slash]
    end = len(url)
    for mark in "?#":
        at = url.find(mark, slash)
        if 0 <= at < end:
            end = at
    directory = url[: url.rfind("/", slash, end) + 1]
    second = url.find("/", slash + 1, end)
    first = url[: second + 1] if second >= 0 else host + "/"
    return directory, first, host


class LinkYield:
    """Live and dead answers per host, first path segment and directory."""

    def __init__(self) -> None:
        self.tallies: dict[str, Tally] = {}

    def record(self, url: str, dead: bool | None) -> None:
        if dead is None:
            return
        directory, first, host = prefixes(url)
        for key in {directory, first, host}:
            tally = self.tallies.get(key)
            if tally is None:
                tally = self.tallies[key] = Tally()
            if dead:
                tally.dead += 1
            else:
                tally.live += 1

    def cap(self, url: str) -> float | None:
        """The priority cap of ``url``: its most specific prefix with enough answers decides."""
        tallies = self.tallies
        if not tallies:
            return None
        # A prefix's dead answers are among its host's: a host with fewer than MIN_DEAD has no
        # capped prefix, and most links go to such hosts, whose prefix lookups this spares
        # (docs/performance-notes.md).
        start = url.find("//")
        slash = url.find("/", start + 2 if start >= 0 else 0)
        host = tallies.get(url if slash < 0 else url[:slash])
        if host is None or host.dead < MIN_DEAD:
            return None
        for key in prefixes(url):
            tally = tallies.get(key)
            if tally is not None and tally.live + tally.dead >= MIN_EVIDENCE:
                return tally.cap()
        return None

    def defers(self, url: str, priority: float) -> float | None:
        """The priority a queued URL should go back to unfetched, or None to fetch it now: only
        when its prefix's cap is a whole halving (``SCALE``) below where it waits, so a URL
        already sunk with its prefix is not put back again each time one more answer arrives."""
        cap = self.cap(url)
        return cap if cap is not None and priority > cap + SCALE else None

    def limit(self, url: str, priority: float) -> float:
        """``priority``, lowered to the cap of ``url``'s prefix when that is mostly dead."""
        cap = self.cap(url)
        return priority if cap is None or priority <= cap else cap

    def forget(self, hosts: set[str]) -> None:
        """Keep tallies only for ``hosts`` (bounded memory on a wide crawl; a host's tallies
        are relearned from its next answers)."""
        self.tallies = {k: t for k, t in self.tallies.items() if prefixes(k)[2] in hosts}
