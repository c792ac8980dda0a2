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
from collections import Counter, deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.orm import Session

from services.config import Settings
from services.crawler.archive.reading import BundleCache, read_leased
from services.crawler.cluster import heartbeat
from services.crawler.cluster.heartbeat import Beat
from services.crawler.cluster.identity_lock import identity_lock
from services.crawler.commit.committer import Committer, FlushResult, UrlResult, committer_options
from services.crawler.commit.spool import Spool, spool_dir
from services.crawler.commit.worker_flush import WorkerFlush
from services.crawler.context import Clock, DatabaseThread, PageBudget, VisitContext
from services.crawler.errors import CrawlerBusyError
from services.crawler.frontier import archive_batches, entries, leases, ledger
from services.crawler.frontier.archive_batches import Reading
from services.crawler.frontier.dead_prefixes import CAPPED_BELOW, LinkYield
from services.crawler.frontier.entries import SEED_PRIORITY, NewUrl, UrlState
from services.crawler.frontier.host_queues import HostScheduler
from services.crawler.frontier.leases import Lease, LeasedUrl
from services.crawler.report.metrics import MetricsServer
from services.crawler.report.progress import (
    ArchiveFigures,
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

LEASE_SECONDS = 600.0  # a crashed crawler's batches are handed out again after 10 minutes
RENEW_EVERY = 60.0  # ... so a live one renews its leases well before that
MAX_BATCHES = 256  # batches held in memory (fetched or being fetched) before leasing waits
LEASE_AHEAD = 4096  # leased URLs waiting for their host: a few seconds of work, to ride out a flush
MAX_HELD_BYTES = 256 * 1024 * 1024  # fetched bodies held for the committer before leasing waits
ARCHIVE_AHEAD = 2  # archive batches held (being read or waiting for their turn): one reader thread
ARCHIVE_RETRY = 1.0  # seconds between looks for archive batches once none was left


@dataclass
class _Batch:
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
    """One process's crawl: coordinator, fetchers and committer together."""

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
        self.partitions = settings.crawl.partition_list
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
        # A worker with no partitions of its own shares them with the live workers, anew at
        # every beat; the send window grows with them (heartbeat.share, leases.lease_batches).
        self.dynamic_partitions = role == "worker" and not settings.crawl.partition_ids
        self.window: int | None = settings.crawl.send_window if role == "worker" else None
        self.db = DatabaseThread(self.sessions, self.transactions)  # DB work, in order
        # Flushes on their own thread: a flush writes blocks for a while, and leases
        # queued behind it would leave the fetchers without work (one flush runs at a time).
        self.commits = ThreadPoolExecutor(max_workers=1, thread_name_prefix="nimbus-commit")
        self.batches: deque[_Batch] = deque()
        self.hosts: HostScheduler[tuple[_Batch, LeasedUrl]] = HostScheduler(
            settings.crawl.per_host_concurrency, settings.crawl.max_crawl_delay
        )
        self.workers: set[asyncio.Task[None]] = set()
        self.errors = 0
        self.kinds: Counter[str] = Counter()  # documents by type, errors by kind (_tally)
        self.counters: Counter[str] = Counter()
        self.node_id = heartbeat.node_id(self.worker_name)
        self.started_at = clock()
        self.control = heartbeat.Control()  # the operator's last word, read at every beat
        self.live_workers = 1  # a cluster's live workers, as of the last beat
        self._last_beat_at = 0.0
        self._last_wait_note = time.monotonic()
        self.fatal: BaseException | None = None  # what stopped a host worker: ends the crawl
        self.flushing: asyncio.Future[FlushResult] | None = None
        self.spool = Spool(spool_dir(settings.var_dir, self.worker_name))
        self.recovered: dict[str, UrlResult] = {}  # answered before a kill, not yet committed
        self.web, self.archives = web, archives
        self.bundles = BundleCache(settings.aws_endpoint_url)
        self.reader = ThreadPoolExecutor(max_workers=1, thread_name_prefix="nimbus-archive")
        self.archive = ArchiveFigures()  # what this process read of archives
        self.archive_dry = not archives  # the last archive lease found nothing
        self._archive_retry_at = 0.0

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
            self.recovered = self.spool.recover()
            seed_urls = [NewUrl(url, 0, SEED_PRIORITY) for url in seeds]
            await self.db.transaction(
                entries.add_urls, seed_urls, self.clock(), partitions=self.settings.crawl.partitions
            )
            self.wake = asyncio.Event()
            self.started_at = self.clock()
            await self._beat("running")
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
                    self.hosts,
                    self.slots,
                    self.budget,
                    self.max_depth,
                    self.db,
                    self.clock,
                    self.yields,
                    lambda: self.control.blocked,
                )
            )
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
            errors=self.errors,
            bytes=self.visitor.bytes,
            counters={
                **self.counters,
                "db_round_trips": self.round_trips.count,
                "archive_records": self.archive.records,
                "archive_bytes": self.archive.nbytes,
                **{f"archive_errors_{k}": n for k, n in self.archive.errors.items()},
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
            if self.fatal is not None:
                raise self.fatal
            if self.control.stops(self.started_at):
                log.warning("stopping: `nimbus crawl stop` was asked; batches in flight are handed back")
                return
            if self.flushing is not None and self.flushing.done():
                self.counters.update(self.flushing.result().counters)  # raises a failed flush
                self.flushing, dry = None, False
            if not self.control.paused:  # paused: lease nothing, finish what is out
                if not dry:
                    dry = await self._fill()
                if self.archives and (not self.archive_dry or now_ > self._archive_retry_at):
                    self.archive_dry = await self._fill_archives()
                    self._archive_retry_at = now_ + ARCHIVE_RETRY
            self._drain()
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
                not self.batches
                and not committer.pending
                and self.flushing is None
                and web_over
                and self.archive_dry
            ):
                web_left = self.web and self.budget.leasable() > 0
                if (web_left or self.archives) and await self._cluster_busy(web=web_left):
                    dry = False
                    continue
                if not web_left or not await self._await_retries():
                    return
                dry = False
                continue
            await self._beat_if_due()
            if now - last_renew > RENEW_EVERY:
                seqs = [b.lease.seq for b in self.batches] + committer.seqs
                await self.db.transaction(leases.renew_leases, seqs, self.clock() + LEASE_SECONDS)
                self.hosts.forget_idle(asyncio.get_running_loop().time())
                kept = set(self.hosts.hosts)
                self.visitor.forget(kept)
                self.yields.forget(kept)
                last_renew = now
            with contextlib.suppress(TimeoutError):  # wake at least every second
                await asyncio.wait_for(self.wake.wait(), timeout=1.0)

    async def _cluster_busy(self, *, web: bool = True) -> bool:
        """A worker out of work waits while the cluster has batches out: committing them
        adds the URLs it will fetch next, and a batch whose worker died is handed out again
        (``web`` False: archive batches only). Checked every half second."""
        if self.role != "worker":
            return False
        out = await self.db.transaction(ledger.outstanding, archives_only=not web)
        if not out:
            return False
        now = time.monotonic()
        if now - self._last_wait_note > 30.0:  # say why a worker sits idle
            self._last_wait_note = now
            log.warning(
                "worker idle: %d batches acknowledged and %d leased wait for the committer "
                "(is a `nimbus crawl committer` running against this database?)",
                out.get(ledger.BatchState.ACKED, 0),
                out.get(ledger.BatchState.LEASED, 0),
            )
        await self._beat_if_due()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.wake.wait(), timeout=0.5)
        return not self.control.stops(self.started_at)

    async def _await_retries(self) -> bool:
        """Sleep until the next retry is due if that is soon; False when nothing is waiting."""
        due = await self.db.transaction(
            entries.next_available, max_depth=self.max_depth, partitions=self.partitions
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

    async def _fill(self) -> bool:
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
            busy = bool(self.batches or self.committer.pending or self.flushing is not None)
            leased = await self.db.transaction(
                leases.lease_batches,
                batches=wanted,
                limit=size,
                budget=budget,
                now=self.clock(),
                lease_seconds=LEASE_SECONDS,
                max_depth=self.max_depth,
                worker=self.worker_name,
                partitions=self.partitions,
                min_priority=CAPPED_BELOW if busy else None,
                window=None if self.window is None else self.window * max(1, self.live_workers),
            )
            for lease in leased:
                self._dispatch(lease)
            if not leased:
                return budget > 0
        return False

    async def _fill_archives(self) -> bool:
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
            partitions=self.partitions,
            window=None if self.window is None else self.window * max(1, self.live_workers),
            archives=wanted,
            web=False,
        )
        for lease in leased:
            self._dispatch(lease)
        return not leased and held == 0

    def _dispatch(self, lease: Lease) -> None:
        batch = _Batch(lease)
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

    def _read_archive(self, batch: _Batch) -> None:
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

    def _drain(self) -> None:
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

    async def _shutdown(self, reporter: asyncio.Task[None] | None) -> None:
        """Stop workers, commit what is complete (flushed on stop), release the rest's leases."""
        tasks = list(self.workers) + ([reporter] if reporter else [])
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        try:
            if self.flushing is not None:
                self.counters.update((await self.flushing).counters)
                self.flushing = None
            self._drain()
            if self.committer.pending and self.fatal is None:
                flushed = await self._start_flush()
                self.counters.update(flushed.counters)
            seqs = [b.lease.seq for b in self.batches] + self.committer.seqs
            if seqs:
                await self.db.transaction(leases.renew_leases, seqs, 0.0)
        except Exception:  # keep the original error; the leases are taken back anyway
            log.warning(
                "could not commit or release on stop; a restart takes the batches back", exc_info=True
            )
        try:
            await self._beat("stopped")
        except Exception:
            log.warning("could not write the last heartbeat", exc_info=True)
        await self.http.close()
        self.reader.shutdown(wait=True)
        self.commits.shutdown(wait=True)
        self.db.shutdown()
        self.engine.dispose()
        self.spool.close()

    def snapshot(self) -> dict[str, Any]:
        """What this process has done and holds now: its heartbeat's counters and /metrics."""
        return {
            "pages": self.budget.spent,
            "bytes": self.visitor.bytes if hasattr(self, "visitor") else 0,
            "errors": self.errors,
            "leased_batches": len(self.batches),
            "waiting_urls": self.budget.waiting,
            "hosts": len(self.hosts.hosts),
            "documents": int(self.counters.get("documents", 0)),
            **{kind: int(n) for kind, n in self.kinds.items()},  # html, pdf, errors_<kind>
            "archive_records": self.archive.records,
            "archive_bytes": self.archive.nbytes,
            "fetch_latency": self.visitor.latency if hasattr(self, "visitor") else None,
            "committed": dict(self.counters),
        }

    async def _beat_if_due(self) -> None:
        """Beat when the last beat (from wherever it came) is a heartbeat interval old."""
        if time.monotonic() - self._last_beat_at > self.settings.crawl.heartbeat_seconds:
            await self._beat("paused" if self.control.paused else "running")

    async def _beat(self, state: str) -> None:
        """This process's heartbeat row (heartbeat.py): what an operator sees of it."""
        counters = {k: v for k, v in self.snapshot().items() if isinstance(v, int)}
        now = self.clock()
        self._last_beat_at = time.monotonic()
        beat = Beat(self.node_id, self.role, self.started_at, now, state, counters)
        if self.role != "worker":
            self.control = await self.db.transaction(heartbeat.beat_and_read, beat)
            return

        def beat_and_look(session: Session) -> tuple[heartbeat.Control, list[str]]:
            control = heartbeat.beat_and_read(session, beat)
            return control, heartbeat.workers(session, now, self.settings.crawl.heartbeat_seconds)[0]

        self.control, live = await self.db.transaction(beat_and_look)
        self.live_workers = len(live)
        if self.dynamic_partitions:
            self.partitions = heartbeat.share(live, self.worker_name, self.settings.crawl.partitions)

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
        archive = self.archive if self.archives and (self.archive.records or not self.web) else None
        return Progress(self.pages, self.errors, self.visitor.bytes, counters, archive)

    async def _queued(self) -> int:
        """URLs waiting or out (the progress line's "queued"); archive records still to read."""
        states = await self.db.transaction(entries.count_by_state)
        if self.archives:
            self.archive.left = await self.db.transaction(archive_batches.records_left)
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


def _spooled(result: UrlResult) -> bool:
    """Whether a result is worth keeping across a kill: it came from a request (not a
    URL released unfetched because the page budget ran out)."""
    return not (result.state == UrlState.NEW and result.retry_at is None)
