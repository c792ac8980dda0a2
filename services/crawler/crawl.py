"""The crawl loop: lease batches, fetch politely, hand completed batches to the committer.

One asyncio task per host with queued URLs gives "at most one request per
host at a time" for free; a semaphore bounds requests in flight overall, and
each host waits ``max(crawl_delay, robots Crawl-delay capped)`` between its
requests. Batches complete out of order but reach the committer in lease
order (the ordered-commit ledger); the committer flushes when a block is full,
every ``FLUSH_INTERVAL`` seconds, and whenever the frontier has run dry (the
URLs it is holding back are all that is left to crawl).

After a redirect the document is stored under the normalized final URL
(unless that URL is a document already, then nothing is stored); the
requested URL's frontier row is simply done, and the target gets a done row
so it is never fetched under its own name.

Deliberately simple for now (a later issue deepens this into a Mercator-style
crawler): aiohttp follows redirects without asking robots.txt or the
politeness delay of the target host, failed URLs are not retried, politeness
state lives in this process only (two crawlers on one database could both ask
one host), and a slow host at the head of the batch queue holds back the
commit of later batches (``MAX_BATCHES`` bounds the memory this costs).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import time
from collections import Counter, deque
from dataclasses import dataclass, field

from services.config import Settings
from services.crawler import frontier
from services.crawler.committer import Committer, FetchedDoc, UrlResult
from services.crawler.fetch import fetch, make_session
from services.crawler.frontier import Lease, LeasedUrl, NewUrl
from services.crawler.parse import INDEXABLE, ParseError, accept_content_type, classify, parse_document
from services.crawler.robots import RobotsCache, RobotsRules, effective_delay
from services.crawler.urls import BadUrlError, in_scope, normalize_url
from services.storage.blobstore import open_blobstore
from services.storage.db import init_db, make_engine, session_factory

log = logging.getLogger(__name__)

LEASE_SECONDS = 600.0  # a crashed crawler's batches are handed out again after 10 minutes
RENEW_EVERY = 60.0  # ... so a live one renews its leases well before that
FLUSH_INTERVAL = 30.0  # at most this much fetched work is lost if the process dies
MAX_BATCHES = 8  # batches held in memory (fetched or being fetched) before leasing waits
SEED_PRIORITY = 1.0  # seeds go first, even when resuming a large frontier


@dataclass
class CrawlStats:
    """One run's totals; ``counters`` are the committed policy counters of this run."""

    pages: int = 0
    seconds: float = 0.0
    errors: int = 0
    bytes: int = 0
    counters: dict[str, int] = field(default_factory=dict)

    @property
    def pages_per_second(self) -> float:
        return self.pages / self.seconds if self.seconds > 0 else 0.0

    def summary(self) -> str:
        return f"crawled {self.pages} pages in {self.seconds:.1f} s ({self.pages_per_second:.1f} pages/s)"


@dataclass
class _Batch:
    lease: Lease
    results: dict[str, UrlResult] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        return len(self.results) == len(self.lease.entries)


def run_crawl(settings: Settings, seeds: list[str], *, max_pages: int | None = None,
              max_depth: int | None = None, progress: bool = True) -> CrawlStats:
    """Crawl from ``seeds`` until the frontier is exhausted or ``max_pages`` pages were fetched.

    ``None`` limits come from ``settings``; ``max_pages`` counts this run's
    requests for pages (robots.txt excluded). Running again on the same
    database continues where the last run stopped; nothing done is fetched again.
    """
    normalized = [normalize_url(seed) for seed in seeds]  # fail fast on a bad seed
    crawler = Crawler(
        settings,
        max_pages=settings.max_pages if max_pages is None else max_pages,
        max_depth=settings.max_depth if max_depth is None else max_depth,
        progress=progress,
    )
    return asyncio.run(crawler.run(normalized))


class Crawler:
    """One process's crawl: coordinator, fetchers and committer together."""

    def __init__(self, settings: Settings, *, max_pages: int, max_depth: int, progress: bool) -> None:
        self.settings = settings
        self.max_pages = max_pages
        self.max_depth = max_depth
        self.progress = progress
        self.engine = make_engine(settings.database_url)
        init_db(self.engine)
        self.sessions = session_factory(self.engine)
        self.committer = Committer(
            self.sessions, open_blobstore(settings.blob_url, settings.aws_endpoint_url),
            max_block_bytes=settings.block_max_bytes, max_block_docs=settings.block_max_docs,
        )
        self.robots = RobotsCache(self.sessions, settings.user_agent)
        self.batches: deque[_Batch] = deque()
        self.queues: dict[str, deque[tuple[_Batch, LeasedUrl]]] = {}
        self.workers: dict[str, asyncio.Task[None]] = {}
        self.next_at: dict[str, float] = {}  # loop time before which a host must not be asked
        self.delays: dict[str, float] = {}
        self.waiting = 0  # leased URLs not yet picked up by their host's worker
        self.pages = self.bytes = self.errors = 0
        self.counters: Counter[str] = Counter()
        self.worker_name = f"crawl-{id(self):x}"
        self.fatal: Exception | None = None  # what stopped a host worker: ends the crawl

    async def run(self, seeds: list[str]) -> CrawlStats:
        started = time.monotonic()
        seed_urls = [NewUrl(url, 0, SEED_PRIORITY) for url in seeds]
        await asyncio.to_thread(self._in_tx, frontier.add_urls, seed_urls, time.time())
        self.wake = asyncio.Event()
        self.slots = asyncio.Semaphore(max(1, self.settings.concurrency))
        self.http = make_session(self.settings.user_agent, self.settings.fetch_timeout,
                                 self.settings.concurrency)
        reporter = asyncio.create_task(self._report(started)) if self.progress else None
        try:
            await self._loop()
        finally:
            await self._shutdown(reporter)
        stats = CrawlStats(pages=self.pages, seconds=time.monotonic() - started, errors=self.errors,
                           bytes=self.bytes, counters=dict(self.counters))
        if self.progress:
            print(f"\r\x1b[K{stats.summary()}" if sys.stderr.isatty() else stats.summary(),
                  file=sys.stderr, flush=True)
        return stats

    async def _loop(self) -> None:
        dry = False  # the last lease found nothing: wait for a flush to add URLs
        last_flush = last_renew = time.monotonic()
        while True:
            self.wake.clear()  # cleared before looking, so no finished URL goes unnoticed
            if self.fatal is not None:
                raise self.fatal
            if not dry:
                dry = await self._fill()
            self._drain()
            now = time.monotonic()
            committer = self.committer
            if committer.pending and (committer.full or dry or self._budget() <= 0
                                      or now - last_flush > FLUSH_INTERVAL):
                flushed = await asyncio.to_thread(committer.flush)
                self.counters.update(flushed.counters)
                last_flush, dry = time.monotonic(), False
                continue
            if not self.batches and not committer.pending and (dry or self._budget() <= 0):
                return
            if now - last_renew > RENEW_EVERY and self.batches:
                seqs = [b.lease.seq for b in self.batches] + committer.seqs
                await asyncio.to_thread(self._in_tx, frontier.renew_leases, seqs,
                                        time.time() + LEASE_SECONDS)
                last_renew = now
            with contextlib.suppress(TimeoutError):  # wake at least every second
                await asyncio.wait_for(self.wake.wait(), timeout=1.0)

    def _budget(self) -> int:
        """Pages this run may still lease for."""
        return self.max_pages - self.pages - self.waiting

    async def _fill(self) -> bool:
        """Lease batches while memory allows; True when the frontier had nothing ready."""
        window = max(self.settings.batch_size, 4 * self.settings.concurrency)
        while len(self.batches) < MAX_BATCHES and self.waiting < window:
            limit = min(self.settings.batch_size, self._budget())
            lease = await asyncio.to_thread(self._in_tx, frontier.lease_batch, limit=limit,
                                            now=time.time(), lease_seconds=LEASE_SECONDS,
                                            max_depth=self.max_depth, worker=self.worker_name)
            if lease is None:
                return limit > 0
            self._dispatch(lease)
        return False

    def _dispatch(self, lease: Lease) -> None:
        batch = _Batch(lease)
        self.batches.append(batch)
        for entry in lease.entries:
            self.queues.setdefault(entry.host, deque()).append((batch, entry))
            self.waiting += 1
            if entry.host not in self.workers:
                self.workers[entry.host] = asyncio.create_task(self._host_worker(entry.host))

    def _drain(self) -> None:
        """Hand completed batches to the committer, strictly in lease order."""
        while self.batches and self.batches[0].complete:
            batch = self.batches.popleft()
            self.committer.add_batch(batch.lease.seq,
                                     [batch.results[e.url_id] for e in batch.lease.entries])

    async def _host_worker(self, host: str) -> None:
        """Visit one host's queued URLs one at a time; ends when its queue is empty.

        A surprise in one page (a parser bug, say) fails that URL only; anything
        else (the database gone) is handed to the main loop, which stops the crawl.
        """
        queue = self.queues[host]
        try:
            while queue:
                batch, entry = queue.popleft()
                self.waiting -= 1
                result = UrlResult(entry.url_id, entry.url, entry.depth, state="done")
                try:
                    await self._visit(host, entry, result)
                except (ValueError, LookupError, TypeError, UnicodeError) as exc:
                    log.exception("crawling %s failed", entry.url)
                    result.state, result.error = "failed", f"internal: {exc!r}"
                    result.counters["internal_error"] += 1
                    self.errors += 1
                batch.results[entry.url_id] = result
                self.wake.set()
        except Exception as exc:
            self.fatal = exc
            self.wake.set()
            raise
        finally:
            del self.workers[host]
            if not queue:
                self.queues.pop(host, None)

    async def _visit(self, host: str, entry: LeasedUrl, result: UrlResult) -> None:
        """Robots, budget, politeness, fetch and parse for one URL; fills ``result``."""
        if self.pages >= self.max_pages:
            result.state = "new"  # released: the next run fetches it
            return
        rules = await self._rules(host, result)
        if not rules.allowed(entry.url, self.settings.user_agent):
            if rules.unavailable:
                result.state, result.error = "failed", "robots_unavailable"
                self.errors += 1
            else:
                result.error = "robots_denied"
            result.counters[result.error] += 1
            return
        self.pages += 1
        result.counters["pages"] += 1
        await self._polite_wait(host)
        async with self.slots:
            fetched = await fetch(self.http, entry.url, max_bytes=self.settings.max_body_bytes,
                                  accept=accept_content_type)
        self.next_at[host] = asyncio.get_running_loop().time() + self.delays[host]
        self.bytes += len(fetched.body)
        counters = result.counters
        result.status = fetched.status
        if fetched.status is not None:
            counters[f"status_{fetched.status}"] += 1
        if fetched.error in ("too_large", "wrong_type"):
            result.error = fetched.error
            counters[fetched.error] += 1
            return
        if fetched.error is not None:
            result.state, result.error = "failed", f"{fetched.error}: {fetched.detail}"
            counters["fetch_error"] += 1
            counters[f"fetch_error_{fetched.error}"] += 1
            self.errors += 1
            return
        if not fetched.ok:
            result.error = f"http {fetched.status}"
            if fetched.status is not None and fetched.status >= 500:
                result.state = "failed"
                self.errors += 1
            return
        try:
            final = normalize_url(fetched.final_url)
        except BadUrlError:
            result.error = f"redirected to an uncrawlable URL {fetched.final_url}"
            counters["bad_redirect"] += 1
            return
        if final != entry.url:
            counters["redirect"] += 1
        if classify(fetched.content_type, fetched.body) not in INDEXABLE:
            result.error = "wrong_type"
            counters["wrong_type"] += 1
            return
        try:
            parsed = await asyncio.to_thread(parse_document, fetched, final)
        except ParseError as exc:
            result.error = f"parse: {exc}"
            counters["parse_error"] += 1
            self.errors += 1
            return
        scope = self.settings.allowed_host_set
        links = [link for link in parsed.links if in_scope(link.url, scope)]
        if len(links) < len(parsed.links):
            counters["out_of_scope"] += len(parsed.links) - len(links)
        if entry.depth + 1 <= self.max_depth:
            result.links = links
        elif links:
            counters["depth_limit"] += len(links)
        if parsed.noindex:
            counters["noindex"] += 1
            return
        result.doc = FetchedDoc(final, fetched.body, parsed, time.time(), fetched.status or 200)

    async def _rules(self, host: str, result: UrlResult) -> RobotsRules:
        """The host's robots rules; the first visit fetches robots.txt (one polite request)."""
        rules = await asyncio.to_thread(self.robots.cached, host, time.time())
        fetched_now = rules is None
        if rules is None:
            await self._polite_wait(host)
            async with self.slots:
                rules = await self.robots.fetch(self.http, host)
            result.counters["robots_fetched"] += 1
        if fetched_now or host not in self.delays:
            delay, clamped = effective_delay(rules, self.settings.user_agent,
                                             self.settings.crawl_delay, self.settings.max_crawl_delay)
            self.delays[host] = delay
            if clamped:
                result.counters["crawl_delay_clamped"] += 1
        if fetched_now:
            self.next_at[host] = asyncio.get_running_loop().time() + self.delays[host]
        return rules

    async def _polite_wait(self, host: str) -> None:
        wait = self.next_at.get(host, 0.0) - asyncio.get_running_loop().time()
        if wait > 0:
            await asyncio.sleep(wait)

    async def _shutdown(self, reporter: asyncio.Task[None] | None) -> None:
        """Stop workers; leases of unfinished batches expire at once, so the next run redoes them."""
        tasks = list(self.workers.values()) + ([reporter] if reporter else [])
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        seqs = [b.lease.seq for b in self.batches] + self.committer.seqs
        if seqs:
            try:
                await asyncio.to_thread(self._in_tx, frontier.renew_leases, seqs, 0.0)
            except Exception:  # noqa: BLE001 - keep the original error; the leases expire anyway
                log.warning("could not release leases %s; they expire in %d s", seqs, LEASE_SECONDS)
        await self.http.close()
        self.engine.dispose()

    def _in_tx(self, func, *args, **kwargs):  # noqa: ANN001, ANN202 - a thin transaction wrapper
        with self.sessions.begin() as session:
            return func(session, *args, **kwargs)

    async def _report(self, started: float) -> None:
        """The live progress line on stderr (rewritten in place on a terminal)."""
        tty = sys.stderr.isatty()
        last_line = 0.0
        while True:
            await asyncio.sleep(1.0)
            elapsed = time.monotonic() - started
            if not tty and elapsed - last_line < 10.0:
                continue
            last_line = elapsed
            states = await asyncio.to_thread(self._in_tx, frontier.count_by_state)
            queued = states.get("new", 0) + states.get("leased", 0)
            line = (f"{self.pages} pages  {self.pages / elapsed:.1f} pages/s  queued {queued}  "
                    f"errors {self.errors}  documents {self.counters['documents']}")
            print(f"\r\x1b[K{line}" if tty else line, end="" if tty else "\n",
                  file=sys.stderr, flush=True)
