"""The crawl cluster's committer role: one elected committer, standbys behind it.

``run_committer`` is what ``nimbus crawl committer`` runs on each committer
instance: it beats like every node (role ``committer``, state ``running``
when elected, ``standby`` otherwise), holds or waits for the committer lease
(``election``), and while it holds it commits acknowledged batches in
sequence order (``ordered_commit``) and hands out again at once the batches
of workers that stopped beating. Every transaction is retried on a transient
fault (a lost connection, a deadlock), with backoff: a database failover
pauses the committer, it does not end it.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any, TypeVar

from sqlalchemy.orm import Session

from services.cloudwatch import CRAWL_PAUSED, PAGES_COMMITTED, Datum, MetricsPublisher, metrics_publisher
from services.config import Settings
from services.crawler.cluster import election, heartbeat
from services.crawler.cluster.heartbeat import Beat
from services.crawler.cluster.ordered_commit import OrderedCommitter
from services.crawler.commit.committer import committer_options
from services.crawler.errors import NotLeaderError
from services.crawler.frontier import leases, ledger
from services.crawler.report.metrics import MetricsServer
from services.gc_thresholds import fewer_collections
from services.storage.blobs.blobstore import open_blobstore
from services.storage.errors import StorageError
from services.storage.sql.engines import make_engine, session_factory
from services.storage.sql.retry import is_transient, retry_with_backoff
from services.storage.sql.schema import init_db

log = logging.getLogger(__name__)

T = TypeVar("T")
LEASE_BEATS = 3  # the committer lease outlives this many missed beats before a standby takes it
IDLE_POLL = 0.2  # seconds between looks for acknowledged batches when there were none
PAGES_EVERY = 60.0  # PagesCommitted: one data point a minute (the crawl-stalled alarm's period)


class PagesMeter:
    """PagesCommitted, which the stack's "crawl stalled" alarm reads: the pages the elected
    committer committed since its previous data point, every ``every`` seconds, 0 included,
    so a stalled crawl shows as 0 and not as missing data.

    While the operator has paused the crawl (a paused crawl commits nothing on purpose) the
    elected committer says so instead, a CrawlPaused data point of 1 each interval: the alarm
    reads "pages, or 1 while paused", so a pause is no stall, while silence (no committer
    elected, or none alive) still is. Nothing is published while this committer stands by.
    Counting starts afresh when standing by or a pause ends. The data points leave from the
    publisher's own thread: CloudWatch never holds up a commit."""

    def __init__(self, publisher: MetricsPublisher, every: float = PAGES_EVERY) -> None:
        self.publisher = publisher
        self.every = every
        self.since: float | None = None  # start of the interval being counted; None: not counting
        self.base = 0  # the committer's pages counter at ``since``
        self.paused_since: float | None = None  # start of the paused interval being reported

    def tick(self, now: float, pages: int, *, elected: bool, paused: bool) -> None:
        """Called from the commit loop: ``pages`` is the committer's running total."""
        if not elected or paused:
            self.since = None
        if not elected or not paused:
            self.paused_since = None
        if not elected:
            return
        if paused:
            if self.paused_since is None or now - self.paused_since >= self.every:
                self.publisher.publish_soon(Datum(CRAWL_PAUSED, 1))
                self.paused_since = now
        elif self.since is None:
            self.since, self.base = now, pages
        elif now - self.since >= self.every:
            self.publisher.publish_soon(Datum(PAGES_COMMITTED, pages - self.base))
            self.since, self.base = now, pages

    def flush(self, pages: int) -> None:
        """At a stop: the pages of the interval under way, if it counted any."""
        if self.since is not None and pages > self.base:
            self.publisher.publish_soon(Datum(PAGES_COMMITTED, pages - self.base))
            self.since, self.base = None, pages


class CommitterNode:
    """One committer process: elected or standing by (module docstring)."""

    def __init__(
        self,
        settings: Settings,
        *,
        clock: Callable[[], float] = time.time,
        metrics: MetricsPublisher | None = None,
    ) -> None:
        self.settings = settings
        self.clock = clock
        self.metrics = metrics if metrics is not None else metrics_publisher(settings)
        self.pages_meter = PagesMeter(self.metrics)
        self.engine = make_engine(settings.database_url)
        init_db(self.engine)
        self.sessions = session_factory(self.engine)
        self.committer = OrderedCommitter(
            self.sessions,
            open_blobstore(settings.blob_url, settings.aws_endpoint_url),
            **committer_options(settings),
            clock=clock,
        )
        self.node_id = heartbeat.node_id(f"{socket.gethostname()}/committer")
        self.committer.me = self.node_id
        self.term: int | None = None
        self.started_at = clock()
        self.counters: Counter[str] = Counter()
        self.control = heartbeat.Control()
        self.waiting = 0  # acknowledged batches not yet committed, as of the last beat
        self.stop = threading.Event()

    @property
    def ttl(self) -> float:
        return LEASE_BEATS * self.settings.crawl.heartbeat_seconds

    def snapshot(self) -> dict[str, Any]:
        """The heartbeat's counters and /metrics (the same names as a crawler's where they mean
        the same: ``documents``, ``pages``, ``committed``)."""
        return {
            "pages": self.counters["pages"],
            "documents": self.counters["documents"],
            "batches_committed": self.counters["batches_committed"],
            "acked_waiting": self.waiting,
            "term": self.term or 0,
            "errors": self.counters["transient_errors"],
            "committed": dict(self.counters),
        }

    def _transaction(self, work: Callable[[Session], T], what: str) -> T:
        return self._retrying(lambda: _in_transaction(self.sessions, work), what)

    def _retrying(self, work: Callable[[], T], what: str) -> T:
        """``work()`` until it works, through transient faults; a stop ends the waiting."""

        def count(_exc: BaseException) -> None:
            self.counters["transient_errors"] += 1

        return retry_with_backoff(
            work,
            what=what,
            retry_on=lambda exc: (
                (is_transient(exc) or isinstance(exc, StorageError)) and not self.stop.is_set()
            ),
            wait=self.stop.wait,
            on_retry=count,
        )

    def beat(self, state: str | None = None) -> None:
        """Renew or seek the lease, beat, read the operator's word; the leader also hands out
        again the batches of workers that stopped beating."""
        now = self.clock()

        def work(session: Session) -> None:
            was = self.term
            self.term = election.acquire(session, election.COMMITTER, self.node_id, now, self.ttl)
            if self.term and self.term != was:  # newly elected: learn what the crawl has finished
                self.committer.finished.load(session)
            self.committer.term = self.term or 0
            self.waiting = _acked(session)
            shown = state or ("running" if self.term else "standby")
            counters = {k: v for k, v in self.snapshot().items() if isinstance(v, int)}
            beat = Beat(self.node_id, "committer", self.started_at, now, shown, counters)
            self.control = heartbeat.beat_and_read(session, beat)
            if self.term:
                _live, dead = heartbeat.workers(session, now, self.settings.crawl.heartbeat_seconds)
                if leases.expire_leases_of(session, dead):
                    self.counters["leases_of_dead_workers"] += 1

        self._transaction(work, "committer heartbeat")

    def run(self, done: Callable[[], bool] | None = None) -> None:
        """Commit (or stand by) until stopped: ``nimbus crawl stop``, ``self.stop``, or, for a
        local cluster, ``done()`` (its workers have ended) with nothing acknowledged left."""
        metrics = None
        if self.settings.crawl.metrics_port:
            metrics = MetricsServer(self.settings.crawl.metrics_port, self.snapshot, self.settings.host)
        last_beat = -1e9
        try:
            while not self.stop.is_set():
                if time.monotonic() - last_beat >= self.settings.crawl.heartbeat_seconds:
                    self.beat()
                    last_beat = time.monotonic()
                    if self.control.stops(self.started_at):
                        log.warning("stopping: `nimbus crawl stop` was asked")
                        return
                self.pages_meter.tick(
                    self.clock(), self.counters["pages"], elected=bool(self.term), paused=self.control.paused
                )
                if not self.term:
                    self.stop.wait(min(IDLE_POLL * 5, self.settings.crawl.heartbeat_seconds / 2))
                    continue
                try:
                    result = self._retrying(self.committer.commit_next, "committing")
                except NotLeaderError as exc:
                    log.warning("%s", exc)
                    self.term = None
                    continue
                self.counters.update(result.counters)
                if result.seqs or result.sent_back:
                    continue
                if done is not None and done():
                    self.waiting = self._transaction(_acked, "reading the ledger")
                    if not self.waiting:
                        return
                self.stop.wait(IDLE_POLL)
        finally:
            self.pages_meter.flush(self.counters["pages"])
            try:
                self._transaction(
                    lambda s: election.release(s, election.COMMITTER, self.node_id), "releasing the lease"
                )
                self.beat("stopped")
            except Exception:
                log.warning("could not release the committer lease; it expires by itself", exc_info=True)
            if metrics is not None:
                metrics.close()
            self.engine.dispose()
            self.metrics.drain(10.0)  # the last data point, on its way (seconds at most)


def _acked(session: Session) -> int:
    """Acknowledged batches waiting for their turn."""
    return ledger.outstanding(session).get(ledger.BatchState.ACKED, 0)


def _in_transaction(sessions: Any, work: Callable[[Session], T]) -> T:
    with sessions.begin() as session:
        return work(session)


def run_committer(settings: Settings, *, done: Callable[[], bool] | None = None) -> Counter[str]:
    """``nimbus crawl committer``: one committer node until stopped; its counters."""
    node = CommitterNode(settings)
    with fewer_collections():
        node.run(done)
    return node.counters
