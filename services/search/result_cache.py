"""A cache of whole answers: the same query, page and size on the same index version.

Web query logs repeat: a large share of queries were asked before (Baeza-Yates et al.,
"The impact of caching on search engines", SIGIR 2007, report about half), and an answer
costs far more to build (ranking, records, snippets, database reads) than to keep. Least
recently used entries go first; an entry also expires after a time, so that a page
recrawled since shows its new title and snippet without waiting for the next index. The
clock is injectable (tests never sleep). One cache per search worker process.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

V = TypeVar("V")


class ResultCache(Generic[V]):
    def __init__(self, size: int, seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.size = size
        self.seconds = seconds
        self.clock = clock
        self._entries: OrderedDict[Hashable, tuple[float, V]] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: Hashable) -> V | None:
        if self.size <= 0:
            return None
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or self.clock() - entry[0] > self.seconds:
                if entry is not None:
                    del self._entries[key]
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            return entry[1]

    def put(self, key: Hashable, value: V) -> None:
        if self.size <= 0:
            return
        with self._lock:
            self._entries[key] = (self.clock(), value)
            self._entries.move_to_end(key)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)
