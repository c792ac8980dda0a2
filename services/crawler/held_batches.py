"""The batches a crawler process holds, from their lease to the committer.

Leased while memory allows (``MAX_BATCHES`` batches, ``LEASE_AHEAD`` URLs waiting for their
host, ``MAX_HELD_BYTES`` of fetched bodies not yet committed; ``ARCHIVE_AHEAD`` archive
batches), a URL batch's entries go to their hosts' back queues (``frontier.host_queues``),
each host's queue visited by a task of its own; an archive batch is read on a thread of its
own (reading and parsing records is CPU work the event loop should not wait on). A URL the
spool recovered from a killed predecessor is not requested again. Batches complete out of
order and are handed to the committer strictly in lease order (``drain``). What the work
met is tallied here for the heartbeat: pages by type, errors by kind, archive figures.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter, deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from services.config import Settings
from services.crawler.archive.reading import BundleCache, read_leased
from services.crawler.commit.committer import Committer
from services.crawler.commit.results import UrlResult
from services.crawler.commit.spool import Spool
from services.crawler.context import Clock, DatabaseThread, PageBudget
from services.crawler.frontier import archive_batches, leases
from services.crawler.frontier.archive_batches import Reading
from services.crawler.frontier.dead_prefixes import CAPPED_BELOW
from services.crawler.frontier.entries import UrlState
from services.crawler.frontier.host_queues import HostScheduler
from services.crawler.frontier.leases import Lease, LeasedUrl
from services.crawler.report.progress import ArchiveFigures
from services.crawler.visit import Visitor

log = logging.getLogger(__name__)

LEASE_SECONDS = 600.0  # a crashed crawler's batches are handed out again after 10 minutes
MAX_BATCHES = 256  # batches held in memory (fetched or being fetched) before leasing waits
LEASE_AHEAD = 4096  # leased URLs waiting for their host: a few seconds of work, to ride out a flush
MAX_HELD_BYTES = 256 * 1024 * 1024  # fetched bodies held for the committer before leasing waits
ARCHIVE_AHEAD = 2  # archive batches held (being read or waiting for their turn): one reader thread


@dataclass
class HeldBatch:
    """A leased batch and the results of its URLs (or its archive records) so far."""

    lease: Lease
    results: dict[str, UrlResult] = field(default_factory=dict)
    read: bool = False  # an archive batch: its records are read (``results`` holds them all)

    @property
    def complete(self) -> bool:
        if self.lease.archive is not None:
            return self.read
        return len(self.results) == len(self.lease.entries)

    def ordered(self) -> list[UrlResult]:
        """The results in lease order (an archive batch's in record order)."""
        if self.lease.archive is not None:
            return list(self.results.values())
        return [self.results[e.url_id] for e in self.lease.entries]


class HeldBatches:
    """A process's leased batches in lease order, the tasks that visit their URLs host by host
    and the thread that reads their archive records (module docstring)."""

    def __init__(
        self,
        settings: Settings,
        db: DatabaseThread,
        budget: PageBudget,
        committer: Committer,
        spool: Spool,
        *,
        clock: Clock,
        max_depth: int,
        worker_name: str,
        web: bool,
    ) -> None:
        self.settings = settings
        self.db = db
        self.budget = budget
        self.committer = committer
        self.spool = spool
        self.clock = clock
        self.max_depth = max_depth
        self.worker_name = worker_name
        self.web = web
        self.batches: deque[HeldBatch] = deque()
        self.hosts: HostScheduler[tuple[HeldBatch, LeasedUrl]] = HostScheduler(
            settings.crawl.per_host_concurrency, settings.crawl.max_crawl_delay
        )
        self.workers: set[asyncio.Task[None]] = set()
        self.errors = 0
        self.kinds: Counter[str] = Counter()  # documents by type, errors by kind (_tally)
        self.fatal: BaseException | None = None  # what stopped a host worker: ends the crawl
        self.recovered: dict[str, UrlResult] = {}  # answered before a kill, not yet committed
        self.bundles = BundleCache(settings.aws_endpoint_url)
        self.reader = ThreadPoolExecutor(max_workers=1, thread_name_prefix="nimbus-archive")
        self.archive = ArchiveFigures()  # what this process read of archives
        # Set by the crawl once its loop runs: the visitor, and the event that wakes the loop.
        self.visitor: Visitor
        self.wake: asyncio.Event

    async def fill(self, *, partitions: list[int] | None, send_window: int | None, flushing: bool) -> bool:
        """Lease batches while memory allows; True when the frontier had nothing ready."""
        if not self.web:
            return True
        window = max(self.settings.crawl.batch_size, LEASE_AHEAD, 4 * self.settings.crawl.concurrency)
        size = self.settings.crawl.batch_size
        while (
            len(self.batches) < MAX_BATCHES
            and self.budget.waiting < window
            and self.committer.buffered_bytes < MAX_HELD_BYTES
        ):
            budget = self.budget.leasable()
            wanted = min(MAX_BATCHES - len(self.batches), -(-(window - self.budget.waiting) // size))
            # With work in flight, the links it will add may be live: leave the URLs of dead
            # prefixes until the crawl is otherwise idle (frontier/dead_prefixes.py), or they
            # spend the budget while new live links wait for their commit.
            busy = bool(self.batches or self.committer.pending or flushing)
            leased = await self.db.transaction(
                leases.lease_batches,
                batches=wanted,
                limit=size,
                budget=budget,
                now=self.clock(),
                lease_seconds=LEASE_SECONDS,
                max_depth=self.max_depth,
                worker=self.worker_name,
                partitions=partitions,
                min_priority=CAPPED_BELOW if busy else None,
                window=send_window,
            )
            for lease in leased:
                self.dispatch(lease)
            if not leased:
                return budget > 0
        return False

    async def fill_archives(self, *, partitions: list[int] | None, send_window: int | None) -> bool:
        """Lease archive batches while fewer than ``ARCHIVE_AHEAD`` are held; True when none
        was left to lease."""
        held = sum(b.lease.archive is not None for b in self.batches)
        wanted = ARCHIVE_AHEAD - held
        if wanted <= 0 or self.committer.buffered_bytes >= MAX_HELD_BYTES:
            return False
        leased = await self.db.transaction(
            leases.lease_batches,
            batches=0,
            limit=0,
            budget=0,
            now=self.clock(),
            lease_seconds=LEASE_SECONDS,
            max_depth=self.max_depth,
            worker=self.worker_name,
            partitions=partitions,
            window=send_window,
            archives=wanted,
            web=False,
        )
        for lease in leased:
            self.dispatch(lease)
        return not leased and held == 0

    def dispatch(self, lease: Lease) -> None:
        """Hold a leased batch: its URLs to their hosts' queues (a result the spool recovered
        taken as it is), or an archive batch to the reader thread."""
        batch = HeldBatch(lease)
        self.batches.append(batch)
        if lease.archive is not None:
            self._read_archive(batch)
            return
        for entry in lease.entries:
            spooled = self.recovered.pop(entry.url_id, None)
            if spooled is not None:  # answered before a kill: no second request
                spooled.counters["recovered_from_spool"] += 1  # committed with the result
                batch.results[entry.url_id] = spooled
                self.wake.set()
                continue
            self.budget.waiting += 1
            if self.hosts.push(entry.host, (batch, entry)):
                task = asyncio.create_task(self._host_worker(entry.host))
                self.workers.add(task)
                task.add_done_callback(self.workers.discard)

    def _read_archive(self, batch: HeldBatch) -> None:
        """Read an archive batch on the reader thread; its results complete the batch."""
        work = batch.lease.archive
        if work is None:
            return
        loop = asyncio.get_running_loop()

        async def read() -> None:
            try:
                results, reading = await loop.run_in_executor(
                    self.reader, read_leased, work, self.bundles, self.settings
                )
                await self.db.transaction(archive_batches.record_reading, work.batch_id, reading)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # an unreadable bundle or object: stop, the lease goes back
                log.exception("reading archive batch %d (%s) failed", work.batch_id, work.batch.file)
                self.fatal = exc
                self.wake.set()
                return
            self._tally_archive(reading)
            batch.results = {r.url_id: r for r in results}
            batch.read = True
            self.wake.set()

        task = asyncio.create_task(read())
        self.workers.add(task)
        task.add_done_callback(self.workers.discard)

    def _tally_archive(self, reading: Reading) -> None:
        self.archive.records += reading.records
        self.archive.nbytes += reading.bytes
        for kind, n in reading.kinds.items():
            if kind.startswith("error."):
                self.archive.errors[kind.removeprefix("error.")] += n
                self.errors += n
                self.kinds["errors_archive_" + kind.removeprefix("error.")] += n

    def drain(self) -> None:
        """Hand completed batches to the committer, strictly in lease order."""
        while self.batches and self.batches[0].complete:
            batch = self.batches.popleft()
            self.committer.add_batch(batch.lease.seq, batch.ordered())

    async def _host_worker(self, host: str) -> None:
        """Visit one host's queued URLs; ends when its queue is empty.

        A surprise in one page (a parser bug, say) fails that URL only; anything
        else (the database gone) is handed to the main loop, which stops the crawl.
        """
        try:
            while (item := self.hosts.pop(host)) is not None:
                batch, entry = item
                self.budget.waiting -= 1
                result = UrlResult(
                    entry.url_id, entry.url, entry.depth, state=UrlState.DONE, interval=entry.interval
                )
                try:
                    await self.visitor.visit(host, entry, result)
                except (ValueError, LookupError, TypeError, UnicodeError, AttributeError) as exc:
                    log.exception("crawling %s failed", entry.url)
                    result.state, result.error = UrlState.FAILED, f"internal: {exc!r}"
                    result.counters["internal_error"] += 1
                if result.state == UrlState.FAILED or result.retry_at is not None:
                    self.errors += 1
                self._tally(result)
                if _spooled(result):
                    self.spool.append(result)
                batch.results[entry.url_id] = result
                self.wake.set()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.fatal = exc
            self.wake.set()
            raise

    def _tally(self, result: UrlResult) -> None:
        """Pages by type and errors by kind, for the heartbeat (the operator's per-node view)."""
        if result.doc is not None:
            self.kinds[result.doc.parsed.content_type.name.lower()] += 1
        if result.status is not None and result.status >= 400:
            self.kinds[f"errors_http_{result.status}"] += 1
        for name, count in result.counters.items():
            if name.startswith("fetch_error_"):
                self.kinds["errors_" + name.removeprefix("fetch_error_")] += count


def _spooled(result: UrlResult) -> bool:
    """Whether a result is worth keeping across a kill: it came from a request (not a
    URL released unfetched because the page budget ran out)."""
    return not (result.state == UrlState.NEW and result.retry_at is None)
