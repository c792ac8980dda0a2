"""Tables derived from one index version (the spelling vocabulary, the documents' hosts),
built once per version and shared by every request; concurrent first requests wait for one
build, and a newer version replaces the older table."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

from services.search.retrieval.segment import SegmentIndex

T = TypeVar("T")


class PerVersion(Generic[T]):
    def __init__(self, build: Callable[[SegmentIndex], T]) -> None:
        self._build = build
        self._lock = threading.Lock()
        self._built: tuple[int, T] | None = None

    def get(self, index: SegmentIndex) -> T:
        with self._lock:
            if self._built is None or self._built[0] != index.version_id:
                self._built = (index.version_id, self._build(index))
            return self._built[1]

    def ready_for(self, index: SegmentIndex) -> bool:
        """Whether ``get(index)`` would answer at once, without building."""
        built = self._built
        return built is not None and built[0] == index.version_id
