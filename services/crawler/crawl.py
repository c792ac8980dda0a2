"""The crawl loop: lease batches, fetch politely, commit in the background.

The event loop leases batches of frontier URLs (this process's partitions
only) and hands every URL to its host's back queue (``frontier.host_queues``): at most
``per_host_concurrency`` requests to a host at a time, spaced by its delay,
and a semaphore bounds requests in flight overall. HTML is parsed inline on
the event loop (selectolax is fast; a thread hop per page costs more than the
parse), PDFs in a thread. Batches complete out of order but reach the
committer in lease order (the ordered-commit ledger); while fetching goes on,
one database thread writes the blocks and commits the previous flush, then
takes the next: flushes grow with the crawl rate instead of stalling it.

Resuming: a crawler's identity is its host name and partitions; a new
process with the same identity (after Ctrl-C or kill -9) first takes back
the batches its predecessor held, so nothing it leased waits for a lease to
expire. Every answered URL is in the write-ahead spool (``spool``) until its
batch is committed, so what the predecessor fetched but had not committed
is taken from the spool, not fetched again; only requests that were in
flight at the kill are repeated. What was committed is never fetched again
until its recrawl is due.

Archive batches (``crawler.archive``) are leased through the same ledger, read on a thread
of their own (one reader: reading and parsing records is CPU work the event loop should
not wait on) and handed to the committer in lease order among the URL batches. An archive
crawl (``web=False``) leases nothing else; a web crawl takes archive batches too.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from services.config import Settings
from services.crawler.cluster.identity_lock import identity_lock
from services.crawler.commit.committer import Committer, FlushResult, committer_options
from services.crawler.commit.spool import Spool, spool_dir
from services.crawler.commit.worker_flush import WorkerFlush
from services.crawler.context import Clock, DatabaseThread, PageBudget, VisitContext
from services.crawler.errors import CrawlerBusyError
from services.crawler.frontier import archive_batches, entries, leases
from services.crawler.frontier.dead_prefixes import LinkYield
from services.crawler.frontier.entries import SEED_PRIORITY, NewUrl, UrlState
from services.crawler.held_batches import LEASE_SECONDS, HeldBatches
from services.crawler.node import CrawlNode
from services.crawler.report.metrics import MetricsServer
from services.crawler.report.progress import (
    CrawlStats,
    Progress,
    progress_counters,
    report_progress,
    show,
)
from services.crawler.visit import Visitor
from services.crawler.web.client_session import make_session
from services.gc_thresholds import fewer_collections
from services.storage.blobs.blobstore import open_blobstore
from services.storage.sql.engines import make_engine, session_factory
from services.storage.sql.round_trips import RoundTrips
from services.storage.sql.schema import init_db
from services.text.urls import normalize_url

__all__ = ["CrawlStats", "CrawlerBusyError", "run_crawl"]

log = logging.getLogger(__name__)

RENEW_EVERY = 60.0  # a live crawler renews its leases (held_batches.LEASE_SECONDS) well before they expire
ARCHIVE_RETRY = 1.0  # seconds between looks for archive batches once none was left


def run_crawl(
    settings: Settings,
    seeds: list[str],
    *,
    max_pages: int | None = None,
    max_depth: int | None = None,
    progress: bool = True,
    clock: Clock = time.time,
    role: str = "crawler",
    identity: str | None = None,
    web: bool = True,
    archives: bool = True,
) -> CrawlStats:
    """Crawl from ``seeds`` until the frontier is exhausted or ``max_pages`` pages were fetched.

    ``role`` "crawler" commits its own batches (one machine); "worker" is a crawl
    cluster's worker: it acknowledges its batches to the cluster's committer
    (``commit.worker_flush``, ``cluster.ordered_commit``) and ends when the whole cluster has nothing left.
    ``identity`` names the worker (default: host and partitions); a restart under the
    same identity takes back its predecessor's batches and spool.

    ``None`` limits come from ``settings``; ``max_pages`` counts this run's
    requests for pages (robots.txt and sitemaps excluded). Running again on the
    same database continues where the last run stopped; nothing done is fetched
    again until its recrawl is due.

    ``archives``: registered archive bundles' batches are leased too; ``web`` False leases
    those only (``nimbus archive crawl``), and the run ends when none is left.
    """
    normalized = [normalize_url(seed) for seed in seeds]  # fail fast on a bad seed
    crawler = Crawler(
        settings,
        max_pages=settings.crawl.max_pages if max_pages is None else max_pages,
        max_depth=settings.crawl.max_depth if max_depth is None else max_depth,
        progress=progress,
        clock=clock,
        role=role,
        identity=identity,
        web=web,
        archives=archives,
    )
    with fewer_collections(), asyncio.Runner(loop_factory=_event_loop_factory()) as runner:
        return runner.run(crawler.run(normalized))


class Crawler:
    """One process's crawl: the coordinator over the batches it holds (``held_batches``), its
    node's heartbeat (``node``) and the committer, which flushes on a thread of its own."""

    def __init__(
        self,
        settings: Settings,
        *,
        max_pages: int,
        max_depth: int,
        progress: bool,
        clock: Clock = time.time,
        role: str = "crawler",
        identity: str | None = None,
        web: bool = True,
        archives: bool = True,
    ) -> None:
        if role not in ("crawler", "worker"):
            raise ValueError(f"a crawler's role is crawler or worker, not {role!r}")
        self.settings = settings
        self.role = role
        self.clock = clock
        self.budget = PageBudget(max_pages)
        self.max_depth = max_depth
        self.progress = progress
        self.engine = make_engine(settings.database_url, immediate=True)  # several crawlers may share it
        init_db(self.engine)
        self.round_trips = RoundTrips(self.engine)  # what a page costs the database
        self.sessions = session_factory(self.engine)
        self.transactions = threading.Lock()  # this process's transactions, one at a time
        self.yields = LinkYield()  # dead prefixes of our hosts: the visitor writes, the committer reads
        self.worker_name = identity or f"{socket.gethostname()}/{settings.crawl.partition_ids or 'all'}"
        self.committer = (WorkerFlush if role == "worker" else Committer)(
            self.sessions,
            open_blobstore(settings.blob_url, settings.aws_endpoint_url),
            **committer_options(settings),
            transactions=self.transactions,
            clock=clock,
            yields=self.yields,
        )
        if isinstance(self.committer, WorkerFlush):
            self.committer.worker = self.worker_name
        self.db = DatabaseThread(self.sessions, self.transactions)  # DB work, in order
        # Flushes on their own thread: a flush writes blocks for a while, and leases
        # queued behind it would leave the fetchers without work (one flush runs at a time).
        self.commits = ThreadPoolExecutor(max_workers=1, thread_name_prefix="nimbus-commit")
        self.counters: Counter[str] = Counter()
        # Heartbeats, the operator's control, the live workers and this one's partitions (node.py).
        self.node = CrawlNode(
            settings, self.db, role=role, worker_name=self.worker_name, clock=clock, snapshot=self.snapshot
        )
        self.flushing: asyncio.Future[FlushResult] | None = None
        self.spool = Spool(spool_dir(settings.var_dir, self.worker_name))
        self.web, self.archives = web, archives
        self.archive_dry = not archives  # the last archive lease found nothing
        self._archive_retry_at = 0.0
        # The leased batches, their host workers and the archive reader (held_batches.py).
        self.held = HeldBatches(
            settings,
            self.db,
            self.budget,
            self.committer,
            self.spool,
            clock=clock,
            max_depth=max_depth,
            worker_name=self.worker_name,
            web=web,
        )

    @property
    def pages(self) -> int:
        return self.budget.spent

    async def run(self, seeds: list[str]) -> CrawlStats:
        metrics = None
        if self.settings.crawl.metrics_port:
            metrics = MetricsServer(self.settings.crawl.metrics_port, self.snapshot, self.settings.host)
        try:
            return await self._run(seeds)
        finally:
            if metrics is not None:
                metrics.close()

    async def _run(self, seeds: list[str]) -> CrawlStats:
        started = time.monotonic()
        with identity_lock(self.settings.var_dir, self.worker_name, self.settings.crawl.partition_ids):
            released = await self.db.transaction(leases.release_worker, self.worker_name)
            if released:
                log.warning("took back %d batches of a stopped crawler (%s)", released, self.worker_name)
            self.held.recovered = self.spool.recover()
            seed_urls = [NewUrl(url, 0, SEED_PRIORITY) for url in seeds]
            await self.db.transaction(
                entries.add_urls, seed_urls, self.clock(), partitions=self.settings.crawl.partitions
            )
            self.wake = asyncio.Event()
            self.held.wake = self.wake
            self.node.started_at = self.clock()
            await self.node.beat("running")
            self.slots = asyncio.Semaphore(max(1, self.settings.crawl.concurrency))
            self.http = make_session(
                self.settings.crawl.user_agent,
                self.settings.crawl.fetch_timeout,
                self.settings.crawl.concurrency,
                connect_timeout=self.settings.crawl.connect_timeout,
                read_timeout=self.settings.crawl.read_timeout,
                limit_per_host=self.settings.crawl.per_host_concurrency,
                verify_tls=self.settings.crawl.verify_tls,
            )
            self.visitor = Visitor(
                VisitContext(
                    self.settings,
                    self.http,
                    self.held.hosts,
                    self.slots,
                    self.budget,
                    self.max_depth,
                    self.db,
                    self.clock,
                    self.yields,
                    lambda: self.node.control.blocked,
                )
            )
            self.held.visitor = self.visitor
            reporter = (
                asyncio.create_task(report_progress(started, self._progress, self._queued))
                if self.progress
                else None
            )
            try:
                await self._loop()
            finally:
                await self._shutdown(reporter)
        stats = CrawlStats(
            pages=self.pages,
            seconds=time.monotonic() - started,
            errors=self.held.errors,
            bytes=self.visitor.bytes,
            counters={
                **self.counters,
                "db_round_trips": self.round_trips.count,
                "archive_records": self.held.archive.records,
                "archive_bytes": self.held.archive.nbytes,
                **{f"archive_errors_{k}": n for k, n in self.held.archive.errors.items()},
            },
        )
        if self.progress:
            show(stats.summary(), final=True)
        return stats

    async def _loop(self) -> None:
        dry = False  # the last lease found nothing: wait for a flush to add URLs
        last_flush = last_renew = time.monotonic()
        while True:
            self.wake.clear()  # cleared before looking, so no finished URL goes unnoticed
            now_ = time.monotonic()
            if self.held.fatal is not None:
                raise self.held.fatal
            if self.node.control.stops(self.node.started_at):
                log.warning("stopping: `nimbus crawl stop` was asked; batches in flight are handed back")
                return
            if self.flushing is not None and self.flushing.done():
                self.counters.update(self.flushing.result().counters)  # raises a failed flush
                self.flushing, dry = None, False
            if not self.node.control.paused:  # paused: lease nothing, finish what is out
                if not dry:
                    dry = await self.held.fill(
                        partitions=self.node.partitions,
                        send_window=self.node.send_window,
                        flushing=self.flushing is not None,
                    )
                if self.archives and (not self.archive_dry or now_ > self._archive_retry_at):
                    self.archive_dry = await self.held.fill_archives(
                        partitions=self.node.partitions, send_window=self.node.send_window
                    )
                    self._archive_retry_at = now_ + ARCHIVE_RETRY
            self.held.drain()
            now = time.monotonic()
            committer = self.committer
            due = now - last_flush > self.settings.crawl.flush_interval
            if (
                self.flushing is None
                and committer.pending
                and (committer.full or dry or self.budget.leasable() <= 0 or due)
            ):
                self.flushing = self._start_flush()
                self.flushing.add_done_callback(lambda _f: self.wake.set())
                last_flush = now
                continue
            web_over = not self.web or dry or self.budget.leasable() <= 0
            if (
                not self.held.batches
                and not committer.pending
                and self.flushing is None
                and web_over
                and self.archive_dry
            ):
                web_left = self.web and self.budget.leasable() > 0
                if (web_left or self.archives) and await self.node.cluster_busy(self.wake, web=web_left):
                    dry = False
                    continue
                if not web_left or not await self._await_retries():
                    return
                dry = False
                continue
            await self.node.beat_if_due()
            if now - last_renew > RENEW_EVERY:
                seqs = [b.lease.seq for b in self.held.batches] + committer.seqs
                await self.db.transaction(leases.renew_leases, seqs, self.clock() + LEASE_SECONDS)
                self.held.hosts.forget_idle(asyncio.get_running_loop().time())
                kept = set(self.held.hosts.hosts)
                self.visitor.forget(kept)
                self.yields.forget(kept)
                last_renew = now
            with contextlib.suppress(TimeoutError):  # wake at least every second
                await asyncio.wait_for(self.wake.wait(), timeout=1.0)

    async def _await_retries(self) -> bool:
        """Sleep until the next retry is due if that is soon; False when nothing is waiting."""
        due = await self.db.transaction(
            entries.next_available, max_depth=self.max_depth, partitions=self.node.partitions
        )
        wait = None if due is None else due - self.clock()
        if wait is None or wait > self.retry_horizon:
            return False  # nothing left, or only far retries: the next run takes them
        await asyncio.sleep(max(0.0, wait) + 0.01)
        return True

    @property
    def retry_horizon(self) -> float:
        """The longest backoff this crawl waits for before ending (a Retry-After may ask more)."""
        crawl = self.settings.crawl
        return crawl.retry_backoff * 2 ** max(0, crawl.max_attempts - 1) * 1.25 + 1.0

    async def _shutdown(self, reporter: asyncio.Task[None] | None) -> None:
        """Stop workers, commit what is complete (flushed on stop), release the rest's leases."""
        tasks = list(self.held.workers) + ([reporter] if reporter else [])
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        try:
            if self.flushing is not None:
                self.counters.update((await self.flushing).counters)
                self.flushing = None
            self.held.drain()
            if self.committer.pending and self.held.fatal is None:
                flushed = await self._start_flush()
                self.counters.update(flushed.counters)
            seqs = [b.lease.seq for b in self.held.batches] + self.committer.seqs
            if seqs:
                await self.db.transaction(leases.renew_leases, seqs, 0.0)
        except Exception:  # keep the original error; the leases are taken back anyway
            log.warning(
                "could not commit or release on stop; a restart takes the batches back", exc_info=True
            )
        try:
            await self.node.beat("stopped")
        except Exception:
            log.warning("could not write the last heartbeat", exc_info=True)
        await self.http.close()
        self.held.reader.shutdown(wait=True)
        self.commits.shutdown(wait=True)
        self.db.shutdown()
        self.engine.dispose()
        self.spool.close()

    def snapshot(self) -> dict[str, Any]:
        """What this process has done and holds now: its heartbeat's counters and /metrics."""
        return {
            "pages": self.budget.spent,
            "bytes": self.visitor.bytes if hasattr(self, "visitor") else 0,
            "errors": self.held.errors,
            "leased_batches": len(self.held.batches),
            "waiting_urls": self.budget.waiting,
            "hosts": len(self.held.hosts.hosts),
            "documents": int(self.counters.get("documents", 0)),
            **{kind: int(n) for kind, n in self.held.kinds.items()},  # html, pdf, errors_<kind>
            "archive_records": self.held.archive.records,
            "archive_bytes": self.held.archive.nbytes,
            "fetch_latency": self.visitor.latency if hasattr(self, "visitor") else None,
            "committed": dict(self.counters),
        }

    def _start_flush(self) -> asyncio.Future[FlushResult]:
        """Hand the complete batches to the committer's thread; once the commit succeeded,
        the spool forgets their results (and deletes segments left with none)."""
        pending = self.committer.take()
        self.spool.rotate()
        future = asyncio.get_running_loop().run_in_executor(self.commits, self.committer.commit, pending)
        committed = [r.url_id for r in pending.results]

        def forget(done: asyncio.Future[FlushResult]) -> None:
            if not done.cancelled() and done.exception() is None:
                self.spool.committed(committed)

        future.add_done_callback(forget)
        return future

    def _progress(self) -> Progress:
        counters = progress_counters(self.counters, self.visitor.live_counters)
        held = self.held
        archive = held.archive if self.archives and (held.archive.records or not self.web) else None
        return Progress(self.pages, held.errors, self.visitor.bytes, counters, archive)

    async def _queued(self) -> int:
        """URLs waiting or out (the progress line's "queued"); archive records still to read."""
        states = await self.db.transaction(entries.count_by_state)
        if self.archives:
            self.held.archive.left = await self.db.transaction(archive_batches.records_left)
        return states.get(UrlState.NEW, 0) + states.get(UrlState.LEASED, 0)


def _event_loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's event loop (libuv, in C) where it is installed, as the search service runs
    under uvicorn: a few per cent of a crawled page's CPU less than asyncio's selector loop
    (docs/benchmarks.md). None: asyncio's own, where uvloop is missing."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop
