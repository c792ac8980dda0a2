"""What a visit needs from the crawl that runs it: the seam between coordinator and visitor.

The coordinator (``crawl``) leases batches, owns the HTTP session and the
host queues, and commits; the visitor (``visit``) fetches and judges one URL.
The visitor sees only this context, never the coordinator, so a crawl role
that runs visits elsewhere (a worker process that hands its results to a
committer on another machine) builds the same context around its own loop,
and a test builds one around a scripted web (``fetch``) and clock.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Concatenate, ParamSpec, TypeVar

import aiohttp
from sqlalchemy.orm import Session, sessionmaker

from services.config import Settings
from services.crawler.frontier.dead_prefixes import LinkYield
from services.crawler.frontier.host_queues import HostScheduler
from services.crawler.web.fetch import Fetch, fetch
from services.storage.sql.retry import is_transient, retry_transaction

# Wall-clock seconds (``time.time``) for everything that is compared with stored times: lease
# expiry, recrawl due dates, robots.txt freshness. Injected so tests move time instead of
# sleeping through it; waits on the event loop keep their own monotonic clock.
Clock = Callable[[], float]

P = ParamSpec("P")
T = TypeVar("T")

DB_ATTEMPTS = 5  # tries of a transaction that lost a lock conflict to another crawler process


class PageBudget:
    """The pages this run may request, and where they went: the one place the limit lives.

    ``spent`` counts page requests made (robots.txt and sitemaps excluded);
    ``waiting`` counts URLs leased but not yet picked up by their host's
    worker, which will spend from the budget when they are. Leasing stops at
    ``leasable() <= 0``; a visit stops at ``exhausted``.
    """

    def __init__(self, limit: int) -> None:
        if limit < 0:
            raise ValueError(f"a page budget cannot be negative ({limit})")
        self.limit = limit
        self.spent = 0
        self.waiting = 0

    @property
    def exhausted(self) -> bool:
        return self.spent >= self.limit

    def spend(self) -> None:
        self.spent += 1

    def leasable(self) -> int:
        """URLs this run may still lease: the limit less what is spent or already waiting."""
        return self.limit - self.spent - self.waiting


class DatabaseThread:
    """Database work off the event loop, one piece at a time, in the order it was asked for.

    ``transaction`` runs ``func(session, ...)`` in one transaction (run again when
    another crawler process won a lock conflict and the database rolled it back);
    ``call`` runs a function that manages its own sessions. ``transactions`` is
    held around every transaction this process runs (the committer's thread takes
    it too), so one process's transactions never interleave: on MySQL,
    interleaved, they deadlock each other.
    """

    def __init__(
        self,
        sessions: sessionmaker[Session],
        transactions: threading.Lock | None = None,
        *,
        attempts: int = DB_ATTEMPTS,
    ) -> None:
        self.sessions = sessions
        self.transactions = transactions or threading.Lock()
        self.attempts = attempts
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="nimbus-db")

    async def transaction(
        self, func: Callable[Concatenate[Session, P], T], *args: P.args, **kwargs: P.kwargs
    ) -> T:
        def work(session: Session) -> T:
            return func(session, *args, **kwargs)

        return await self.call(self.run_transaction, work, getattr(func, "__name__", "transaction"))

    async def call(self, func: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, partial(func, *args, **kwargs))

    def run_transaction(self, work: Callable[[Session], T], what: str = "transaction") -> T:
        """``work(session)`` in one transaction, in the calling thread (``what`` names it in
        the log when it is run again)."""

        def once() -> T:
            with self.transactions, self.sessions.begin() as session:
                return work(session)

        # Lock conflicts and lost connections (a failover, a killed connection): the
        # transaction never committed, so running it again is right.
        return retry_transaction(once, attempts=self.attempts, what=what, retry_on=is_transient)

    def shutdown(self) -> None:
        self._executor.shutdown(wait=True)


@dataclass
class VisitContext:
    """Everything a ``Visitor`` uses: settings and limits, the shared HTTP session and the one
    function every request of a visit goes through (pages, robots.txt, sitemaps, soft-404
    probes), the host queues (politeness state), the request slots, the page budget and the
    database."""

    settings: Settings
    http: aiohttp.ClientSession
    hosts: HostScheduler[Any]
    slots: asyncio.Semaphore  # requests in flight, all hosts together
    budget: PageBudget
    max_depth: int
    db: DatabaseThread
    clock: Clock = time.time
    yields: LinkYield = field(default_factory=LinkYield)  # dead prefixes (frontier/dead_prefixes.py)
    # The operator's blocked hosts as of the crawl's last heartbeat (heartbeat.Control).
    blocked: Callable[[], frozenset[str]] = frozenset
    fetch: Fetch = fetch  # web.fetch.fetch; a test's scripted web
