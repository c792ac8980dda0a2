"""Tables derived from one index version (the spelling vocabulary, the documents' hosts),
built once per version and shared by every request; concurrent first requests wait for one
build, and a newer version replaces the older table.

A version that only adds delta segments to the one a table was built for (the indexer
publishes one every ``NIMBUS_UPDATE_EVERY`` seconds) need not rebuild it from every
document: ``carry`` derives the new table from the old and the new deltas (what they hold),
so the cost of a delta here follows the delta, not the collection. A new base (a merge, a
full build) builds afresh.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from services.search.retrieval.segment import SegmentIndex

T = TypeVar("T")

# (the table built for the previous version, the new version, the index of its first new
# part: the deltas from there on are what it adds) -> the new version's table
Carry = Callable[[T, SegmentIndex, int], T]


@dataclass(frozen=True)
class _Built(Generic[T]):
    version_id: int
    segments: Sequence[str]
    value: T


class PerVersion(Generic[T]):
    def __init__(self, build: Callable[[SegmentIndex], T], carry: Carry[T] | None = None) -> None:
        self._build = build
        self._carry = carry
        self._lock = threading.Lock()
        self._built: _Built[T] | None = None

    def get(self, index: SegmentIndex) -> T:
        with self._lock:
            built = self._built
            if built is None or built.version_id != index.version_id:
                segments = index.segments
                old = built.segments if built is not None else ()
                if (
                    built is not None
                    and self._carry is not None
                    and len(segments) > len(old)
                    and list(segments[: len(old)]) == list(old)
                ):
                    value = self._carry(built.value, index, len(old))
                else:
                    value = self._build(index)
                self._built = built = _Built(index.version_id, list(segments), value)
            return built.value

    def ready_for(self, index: SegmentIndex) -> bool:
        """Whether ``get(index)`` would answer at once, without building."""
        built = self._built
        return built is not None and built.version_id == index.version_id
