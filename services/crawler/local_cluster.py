"""A whole crawl cluster on one machine: ``nimbus crawl --processes N``.

N worker processes and one committer process, sharing the database and the
blob store exactly as a cluster on many machines does, so commit work
shares no core's GIL with a fetch loop. This module wires the crawl
loop (``crawl``) and the committer role (``cluster.committer_role``); it is
the only place that starts either as a child process.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
import socket
import sys
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from services.config import Settings
from services.crawler.cluster.committer_role import run_committer
from services.crawler.cluster.partitions import child_settings, split_partitions
from services.crawler.errors import CrawlerError
from services.crawler.report.progress import CrawlStats
from services.storage.sql.engines import make_engine
from services.storage.sql.schema import init_db
from services.text.urls import normalize_url


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
_PRELOAD = ["services.crawler.local_cluster", "services.crawler.crawl"]


def _process_context() -> mp.context.ForkServerContext | mp.context.SpawnContext:
    """Children fork from a server process that has imported the crawler once (forkserver):
    spawned, each child would import it again, the largest part of its start
    (docs/benchmarks.md). The server holds no event loop, thread or connection, so the
    children start as clean as spawned ones. Spawn where there is no fork server (Windows)."""
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
    for seed in seeds:
        normalize_url(seed)  # fail fast, before any process starts
    engine = make_engine(settings.database_url)
    try:
        init_db(engine)  # once, here: children creating tables at the same moment would collide
    finally:
        engine.dispose()
    pages = settings.crawl.max_pages if max_pages is None else max_pages
    depth = settings.crawl.max_depth if max_depth is None else max_depth
    owned = settings.crawl.partition_list or list(range(settings.crawl.partitions))
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
                metrics_port=settings.crawl.metrics_port + workers if settings.crawl.metrics_port else 0
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
