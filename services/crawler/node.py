"""This crawler process as a node of the crawl: its heartbeat and the cluster around it.

Every beat writes the process's row (``cluster.heartbeat``: what an operator sees of it) and
reads back the operator's last word (pause, stop, blocked hosts). A cluster's worker also
reads which workers are live: a worker with no partitions of its own takes its share of
them anew at every beat, and the send window grows with the workers; a worker out of work
waits while the cluster has batches out (``cluster_busy``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any

from sqlalchemy.orm import Session

from services.config import Settings
from services.crawler.cluster import heartbeat
from services.crawler.cluster.heartbeat import Beat
from services.crawler.context import Clock, DatabaseThread
from services.crawler.frontier import ledger

log = logging.getLogger(__name__)


class CrawlNode:
    """The heartbeat and cluster view of one crawler process (module docstring)."""

    def __init__(
        self,
        settings: Settings,
        db: DatabaseThread,
        *,
        role: str,
        worker_name: str,
        clock: Clock,
        snapshot: Callable[[], dict[str, Any]],
    ) -> None:
        self.settings = settings
        self.db = db
        self.role = role
        self.worker_name = worker_name
        self.clock = clock
        self.snapshot = snapshot  # the process's counters, written with every beat
        self.partitions = settings.crawl.partition_list
        # A worker with no partitions of its own shares them with the live workers, anew at
        # every beat; the send window grows with them (heartbeat.share, leases.lease_batches).
        self.dynamic_partitions = role == "worker" and not settings.crawl.partition_ids
        self.window: int | None = settings.crawl.send_window if role == "worker" else None
        self.node_id = heartbeat.node_id(worker_name)
        self.started_at = clock()
        self.control = heartbeat.Control()  # the operator's last word, read at every beat
        self.live_workers = 1  # a cluster's live workers, as of the last beat
        self._last_beat_at = 0.0
        self._last_wait_note = time.monotonic()

    @property
    def send_window(self) -> int | None:
        """A worker's send window times the live workers (``leases.lease_batches``); None: a
        single-process crawler's, unbounded."""
        return None if self.window is None else self.window * max(1, self.live_workers)

    async def beat_if_due(self) -> None:
        """Beat when the last beat (from wherever it came) is a heartbeat interval old."""
        if time.monotonic() - self._last_beat_at > self.settings.crawl.heartbeat_seconds:
            await self.beat("paused" if self.control.paused else "running")

    async def beat(self, state: str) -> None:
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

    async def cluster_busy(self, wake: asyncio.Event, *, web: bool = True) -> bool:
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
        await self.beat_if_due()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(wake.wait(), timeout=0.5)
        return not self.control.stops(self.started_at)
