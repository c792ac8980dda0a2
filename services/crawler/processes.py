"""Several crawler processes on one machine, each owning a share of the host partitions.

One Python process saturates one core (fetching, parsing and the event loop
share the GIL), so a machine with more cores runs more processes. They share
the database and the blob store exactly as crawlers on several machines do:
hosts hash into partitions, each process leases only its own (so politeness
state never has to be shared), and committers reserve their doc numbers under
the commit lock (so no number is taken twice). Children are spawned fresh (no forked event
loops or database connections).
"""

from __future__ import annotations

import multiprocessing as mp
import queue
import sys
import time
from collections import Counter

from services.config import Settings
from services.crawler.errors import CrawlerError
from services.crawler.progress import CrawlStats


def split_partitions(partitions: list[int], processes: int) -> list[list[int]]:
    """``partitions`` cut into ``processes`` contiguous, non-empty shares."""
    if not 1 <= processes <= len(partitions):
        raise ValueError(f"{processes} processes need between 1 and {len(partitions)} partitions each")
    size, extra = divmod(len(partitions), processes)
    shares, start = [], 0
    for i in range(processes):
        end = start + size + (1 if i < extra else 0)
        shares.append(partitions[start:end])
        start = end
    return shares


def child_settings(settings: Settings, share: list[int], processes: int, index: int = 0) -> Settings:
    """One child's settings: its partitions, its part of the concurrency, its metrics port
    (``NIMBUS_METRICS_PORT`` + its index, so each process answers on its own)."""
    return settings.with_overrides(
        partition_ids=",".join(str(p) for p in share),
        concurrency=max(1, settings.concurrency // processes),
        metrics_port=settings.metrics_port + index if settings.metrics_port else 0,
    )


def _child(settings: Settings, seeds: list[str], max_pages: int, max_depth: int, results: mp.Queue) -> None:
    from services.crawler.crawl import run_crawl

    stats = run_crawl(settings, seeds, max_pages=max_pages, max_depth=max_depth, progress=False)
    results.put(stats)


def run_crawl_processes(
    settings: Settings,
    seeds: list[str],
    processes: int,
    *,
    max_pages: int | None = None,
    max_depth: int | None = None,
    progress: bool = True,
) -> CrawlStats:
    """Crawl with ``processes`` children; returns the summed statistics.

    ``max_pages`` is split evenly: a child whose hosts run dry stops early and
    its budget is not handed to the others.
    """
    from services.storage.db import init_db, make_engine
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
    shares = split_partitions(owned, processes)
    budgets = [pages // processes + (1 if i < pages % processes else 0) for i in range(processes)]
    ctx = mp.get_context("spawn")
    results: mp.Queue = ctx.Queue()
    started = time.monotonic()
    children = [
        ctx.Process(
            target=_child,
            name=f"nimbus-crawl-{i}",
            args=(child_settings(settings, share, processes, i), seeds, budget, depth, results),
        )
        for i, (share, budget) in enumerate(zip(shares, budgets, strict=True))
    ]
    for child in children:
        child.start()
    collected: list[CrawlStats] = []
    last_report = started
    while len(collected) < len(children):
        try:
            collected.append(results.get(timeout=1.0))
        except queue.Empty:
            dead = [c for c in children if not c.is_alive() and c.exitcode not in (0, None)]
            if dead:
                for child in children:
                    child.terminate()
                raise CrawlerError(
                    f"crawler process {dead[0].name} failed with exit code "
                    f"{dead[0].exitcode}; its error is printed above"
                ) from None
        now = time.monotonic()
        if progress and now - last_report >= 10.0:
            print(
                f"{len(collected)}/{len(children)} crawler processes done, {now - started:.0f} s",
                file=sys.stderr,
                flush=True,
            )
            last_report = now
    for child in children:
        child.join()
    counters: Counter[str] = Counter()
    for stats in collected:
        counters.update(stats.counters)
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
