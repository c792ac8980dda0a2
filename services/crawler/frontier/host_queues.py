"""Per-host back queues: politeness, concurrency, slow-down after errors, page caps.

Mercator's back queues, in memory for the hosts this process is crawling
(partitions make sure no other process crawls them). Each host has a FIFO
of leased URLs and at most ``per_host`` worker tasks draining it, so never
more than ``per_host`` requests are in flight to it. Request starts are
spaced by the host's delay: ``max(configured delay, robots Crawl-delay
capped)``, doubled after every retryable error (up to the cap) and halved
back after every success. Everything here is plain bookkeeping on a clock
the caller passes in, so it is tested without a network.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Generic, TypeVar

T = TypeVar("T")

MIN_ERROR_DELAY = 0.5  # seconds: the first slow-down of a host whose own delay is 0


@dataclass
class HostQueue(Generic[T]):
    """One host's waiting URLs and politeness state."""

    delay: float | None = None  # the polite delay (configured, or robots Crawl-delay capped)
    penalty: float = 0.0  # extra spacing after errors: doubles per error, halves per success
    next_at: float = 0.0  # clock time before which no request may start
    workers: int = 0  # tasks draining the queue
    pages: int | None = None  # pages requested so far (None: not loaded yet)
    trusted: int = 0  # acceptable pages in a row (HTML/PDF under the cap): HEAD can be skipped
    items: deque[T] = field(default_factory=deque)

    @property
    def spacing(self) -> float:
        return max(self.delay or 0.0, self.penalty)

    def reserve(self, now: float) -> float:
        """Claim the next start time; returns how long to wait before starting."""
        start = max(now, self.next_at)
        self.next_at = start + self.spacing
        return start - now

    def failed(self, cap: float) -> None:
        """A retryable error (5xx, 429, network): space requests out more."""
        self.penalty = min(cap, max(MIN_ERROR_DELAY, self.spacing * 2))

    def succeeded(self) -> None:
        self.penalty = self.penalty / 2 if self.penalty > MIN_ERROR_DELAY else 0.0


class HostScheduler(Generic[T]):
    """The back queues of all hosts this process is crawling."""

    def __init__(self, per_host: int, max_delay: float) -> None:
        self.per_host = max(1, per_host)
        self.max_delay = max_delay
        self.hosts: dict[str, HostQueue[T]] = {}

    def push(self, host: str, item: T) -> bool:
        """Queue ``item``; True when the host may take another worker task."""
        queue = self.hosts.setdefault(host, HostQueue())
        queue.items.append(item)
        if queue.workers < min(self.per_host, len(queue.items)):
            queue.workers += 1
            return True
        return False

    def pop(self, host: str) -> T | None:
        """The host's next item, or None: then the calling worker task ends."""
        queue = self.hosts[host]
        if queue.items:
            return queue.items.popleft()
        queue.workers -= 1
        return None

    def queue(self, host: str) -> HostQueue[T]:
        return self.hosts.setdefault(host, HostQueue())

    def forget_idle(self, now: float, keep: int = 10_000) -> None:
        """Drop idle hosts' state beyond ``keep`` (bounded memory on a wide crawl).

        Only hosts whose next start time has passed, so no delay is cut short;
        their page counts come back from the hosts table.
        """
        if len(self.hosts) <= keep:
            return
        idle = [h for h, q in self.hosts.items() if not q.items and not q.workers and q.next_at <= now]
        for host in idle:
            del self.hosts[host]
            if len(self.hosts) <= keep:
                break
