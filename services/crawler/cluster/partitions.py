"""Several worker processes on one machine, each owning a share of the host partitions
(``local_cluster.run_local_cluster`` starts them, with a committer process).

One Python process saturates one core (fetching, parsing and the event loop
share the GIL), so a machine with more cores runs more processes. They share
the database and the blob store exactly as crawlers on several machines do:
hosts hash into partitions, each process leases only its own (so politeness
state never has to be shared); the committer numbers their documents. Children
fork from a fork server that has only imported the crawler (no forked event
loops, threads or database connections).
"""

from __future__ import annotations

from services.config import Settings


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
        concurrency=max(1, settings.crawl.concurrency // processes),
        metrics_port=settings.crawl.metrics_port + index if settings.crawl.metrics_port else 0,
    )
