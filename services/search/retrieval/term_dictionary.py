"""A segment's term dictionary: its terms in UTF-8 byte order, ``term_bytes`` cut at
``term_offsets`` (``services.storage.formats.segment``), read where they are mapped.

A term is found by ``bisect`` (in C) over every ``TERM_SAMPLE``-th term held in memory, then
a binary search of one block of the map. A search over the whole map takes a slice per
step, several times the cost (docs/performance-notes.md); the sample keeps 1/64 of the
terms in memory.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from functools import cached_property

import numpy as np

TERM_SAMPLE = 64  # terms per block of the in-memory sample of the dictionary (term_id)


@dataclass(frozen=True)
class TermDictionary:
    offsets: np.ndarray  # term t is blob[offsets[t]:offsets[t + 1]]
    blob: np.ndarray  # uint8, the terms' UTF-8 one after another

    def term(self, term_id: int) -> str:
        start, end = int(self.offsets[term_id]), int(self.offsets[term_id + 1])
        return self.blob[start:end].tobytes().decode("utf-8")

    def term_id(self, term: str) -> int | None:
        """The id of ``term``; None when the dictionary lacks it."""
        key = term.encode("utf-8")
        block = bisect.bisect_right(self.sample, key) - 1
        if block < 0:
            return None
        first = block * TERM_SAMPLE
        offsets = self.offsets[first : first + TERM_SAMPLE + 1].tolist()
        base = offsets[0]
        text = self.blob[base : offsets[-1]].tobytes()
        lo, hi = 0, len(offsets) - 1
        while lo < hi:
            mid = (lo + hi) // 2
            probe = text[offsets[mid] - base : offsets[mid + 1] - base]
            if probe < key:
                lo = mid + 1
            elif probe > key:
                hi = mid
            else:
                return first + mid
        return None

    @cached_property
    def sample(self) -> list[bytes]:
        """Every ``TERM_SAMPLE``-th term (the first of each block), as bytes."""
        starts = self.offsets[:-1][::TERM_SAMPLE].tolist()
        ends = self.offsets[1:][::TERM_SAMPLE].tolist()
        return [self.blob[a:b].tobytes() for a, b in zip(starts, ends, strict=True)]
