"""The crawl cluster's roles as processes: the committer loop, and a whole cluster on one machine.

``run_committer`` is what ``nimbus crawl committer`` runs on each committer
instance: it beats like every node (role ``committer``, state ``running``
when elected, ``standby`` otherwise), holds or waits for the committer lease
(``election``), and while it holds it commits acknowledged batches in
sequence order (``ordered_commit``) and hands out again at once the batches
of workers that stopped beating. Every transaction is retried on a transient
fault (a lost connection, a deadlock), with backoff: a database failover
pauses the committer, it does not end it.

``run_local_cluster`` is ``nimbus crawl --processes N`` on one machine: N
worker processes and one committer process, so commit work no longer shares
a core's GIL with any fetch loop.
"""

from __future__ import annotations

import logging
import multiprocessing as mp
import os
import queue
import socket
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any, TypeVar

from sqlalchemy.orm import Session

from services.config import Settings
from services.crawler import election, fetch_batches, heartbeat
from services.crawler.committer import committer_options
from services.crawler.errors import CrawlerError, NotLeaderError
from services.crawler.heartbeat import Beat
from services.crawler.metrics import MetricsServer
from services.crawler.ordered_commit import OrderedCommitter
from services.crawler.progress import CrawlStats
from services.gc_thresholds import fewer_collections
from services.storage.blobstore import open_blobstore
from services.storage.db import init_db, is_transient, make_engine, retry_with_backoff, session_factory
from services.storage.errors import StorageError

log = logging.getLogger(__name__)

T = TypeVar("T")
LEASE_BEATS = 3  # the committer lease outlives this many missed beats before a standby takes it
IDLE_POLL = 0.2  # seconds between looks for acknowledged batches when there were none


class CommitterNode:
    """One committer process: elected or standing by (module docstring)."""

    def __init__(self, settings: Settings, *, clock: Callable[[], float] = time.time) -> None:
        self.settings = settings
        self.clock = clock
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
        return LEASE_BEATS * self.settings.heartbeat_seconds

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
                _live, dead = heartbeat.workers(session, now, self.settings.heartbeat_seconds)
                if fetch_batches.expire_leases_of(session, dead):
                    self.counters["leases_of_dead_workers"] += 1

        self._transaction(work, "committer heartbeat")

    def run(self, done: Callable[[], bool] | None = None) -> None:
        """Commit (or stand by) until stopped: ``nimbus crawl stop``, ``self.stop``, or, for a
        local cluster, ``done()`` (its workers have ended) with nothing acknowledged left."""
        metrics = None
        if self.settings.metrics_port:
            metrics = MetricsServer(self.settings.metrics_port, self.snapshot, self.settings.host)
        last_beat = -1e9
        try:
            while not self.stop.is_set():
                if time.monotonic() - last_beat >= self.settings.heartbeat_seconds:
                    self.beat()
                    last_beat = time.monotonic()
                    if self.control.stops(self.started_at):
                        log.warning("stopping: `nimbus crawl stop` was asked")
                        return
                if not self.term:
                    self.stop.wait(min(IDLE_POLL * 5, self.settings.heartbeat_seconds / 2))
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


def _acked(session: Session) -> int:
    """Acknowledged batches waiting for their turn."""
    return fetch_batches.outstanding(session).get("acked", 0)


def _in_transaction(sessions: Any, work: Callable[[Session], T]) -> T:
    with sessions.begin() as session:
        return work(session)


def run_committer(settings: Settings, *, done: Callable[[], bool] | None = None) -> Counter[str]:
    """``nimbus crawl committer``: one committer node until stopped; its counters."""
    node = CommitterNode(settings)
    with fewer_collections():
        node.run(done)
    return node.counters


def _worker(
    settings: Settings, seeds: list[str], max_pages: int, max_depth: int, identity: str, results: mp.Queue
) -> None:
    from services.crawler.crawl import run_crawl

    stats = run_crawl(
        settings,
        seeds,
        max_pages=max_pages,
        max_depth=max_depth,
        progress=False,
        role="worker",
        identity=identity,
    )
    results.put(stats)


def _committer(settings: Settings, workers_done: Any, results: mp.Queue) -> None:
    counters = run_committer(settings, done=workers_done.is_set)
    results.put(("committer", dict(counters)))


# What every child runs: imported once by the fork server, not once per child.
_PRELOAD = ["services.crawler.cluster", "services.crawler.crawl"]


def _process_context() -> mp.context.ForkServerContext | mp.context.SpawnContext:
    """Children fork from a server process that has imported the crawler once (forkserver):
    spawned, each child imported it again, about a CPU second a process. The server holds no
    event loop, thread or connection, so the children start as clean as spawned ones. Spawn
    where there is no fork server (Windows)."""
    if "forkserver" not in mp.get_all_start_methods():
        return mp.context.SpawnContext()
    ctx = mp.context.ForkServerContext()
    ctx.set_forkserver_preload(_PRELOAD)
    return ctx


def _stop_fork_server(ctx: mp.context.BaseContext) -> None:
    """End and reap the fork server once the children are joined: its children's CPU time is
    then counted in ours (``time``, ``wait4``), as spawned children's is. ``_stop`` is private
    (CPython's own tests use it); without it the server just ends with this process. The
    server is the process's one: run one local cluster at a time (as ``nimbus crawl`` does)."""
    if ctx.get_start_method() != "forkserver":
        return
    from multiprocessing import forkserver

    stop = getattr(forkserver._forkserver, "_stop", None)
    if callable(stop):
        stop()


def _as_parent(parent: tuple[dict[str, str], str], target: Callable[..., None], *args: Any) -> None:
    """Run ``target`` with this process's environment and directory at the cluster's start: a
    fork server's children inherit the server's, from when it first started (boto3, say,
    reads credentials from the environment)."""
    environ, cwd = parent
    os.environ.clear()
    os.environ.update(environ)
    os.chdir(cwd)
    target(*args)


def run_local_cluster(
    settings: Settings,
    seeds: list[str],
    workers: int,
    *,
    max_pages: int | None = None,
    max_depth: int | None = None,
    progress: bool = True,
) -> CrawlStats:
    """``workers`` worker processes and one committer process on this machine, sharing the
    database and blob store as a cluster on many machines does; the summed statistics."""
    from services.crawler.processes import child_settings, split_partitions
    from services.text.urls import normalize_url

    for seed in seeds:
        normalize_url(seed)  # fail fast, before any process starts
    engine = make_engine(settings.database_url)
    try:
        init_db(engine)  # once, here: children creating tables at the same moment would collide
    finally:
        engine.dispose()
    pages = settings.max_pages if max_pages is None else max_pages
    depth = settings.max_depth if max_depth is None else max_depth
    owned = settings.partition_list or list(range(settings.partitions))
    shares = split_partitions(owned, workers)
    budgets = [pages // workers + (1 if i < pages % workers else 0) for i in range(workers)]
    ctx = _process_context()
    parent = (dict(os.environ), os.getcwd())  # what a spawned child would have inherited
    results: mp.Queue = ctx.Queue()
    workers_done = ctx.Event()
    host = socket.gethostname()
    started = time.monotonic()
    committer = ctx.Process(
        target=_as_parent,
        name="nimbus-committer",
        args=(
            parent,
            _committer,
            settings.with_overrides(
                metrics_port=settings.metrics_port + workers if settings.metrics_port else 0
            ),
            workers_done,
            results,
        ),
    )
    committer.start()
    children = [
        ctx.Process(
            target=_as_parent,
            name=f"nimbus-worker-{i}",
            args=(
                parent,
                _worker,
                child_settings(settings, share, workers, i),
                seeds,
                budget,
                depth,
                f"{host}/worker-{i}",
                results,
            ),
        )
        for i, (share, budget) in enumerate(zip(shares, budgets, strict=True))
    ]
    for child in children:
        child.start()
    collected: list[CrawlStats] = []
    committed: dict[str, int] = {}
    last_report = started
    try:
        while len(collected) < len(children) or committer.is_alive() and not committed:
            if len(collected) == len(children):
                workers_done.set()
            try:
                item = results.get(timeout=1.0)
            except queue.Empty:
                dead = [c for c in [*children, committer] if not c.is_alive() and c.exitcode not in (0, None)]
                if dead:
                    raise CrawlerError(
                        f"crawl process {dead[0].name} failed with exit code "
                        f"{dead[0].exitcode}; its error is printed above"
                    ) from None
                if not committer.is_alive() and len(collected) == len(children):
                    break
            else:
                if isinstance(item, tuple):
                    committed = item[1]
                else:
                    collected.append(item)
            now = time.monotonic()
            if progress and now - last_report >= 10.0:
                print(
                    f"{len(collected)}/{len(children)} workers done, {now - started:.0f} s",
                    file=sys.stderr,
                    flush=True,
                )
                last_report = now
    except BaseException:
        for child in [*children, committer]:
            child.terminate()
        raise
    for child in [*children, committer]:
        child.join()
    _stop_fork_server(ctx)
    counters: Counter[str] = Counter()
    for stats in collected:
        counters.update(stats.counters)
    counters["documents"] = committed.get("documents", 0)  # the committer's, not the workers'
    counters["batches_committed"] = committed.get("batches_committed", 0)
    total = CrawlStats(
        pages=sum(s.pages for s in collected),
        seconds=time.monotonic() - started,
        errors=sum(s.errors for s in collected),
        bytes=sum(s.bytes for s in collected),
        counters=dict(counters),
    )
    if progress:
        print(total.summary(), file=sys.stderr, flush=True)
    return total
