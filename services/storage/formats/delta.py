"""What a delta segment speaks for: the documents committed after the version it was built
on (issue 31's incremental index, docs/architecture.md "Segments searched side by side").

A delta is a segment of the ordinary contract (``segment``), built from the records of the
documents committed since its version's commit mark. Its postings use the global document
numbers (no translation when a version's segments are searched as one); its per-document
arrays have a row per document it *holds* (``rows``, below), so its bytes follow what it
holds, not the collection's size. Its meta's ``num_docs`` is the collection's at its build,
and it carries a ``delta`` object (``DeltaDocs``):

- ``holds``: the documents it speaks for, as ascending ``[start, end)`` ranges (new pages
  are numbered in commit order, so mostly one range; a recrawl adds its old number). An
  earlier segment's copy of such a document is superseded: never a result, never counted.
- ``removed``: documents a commit in its range removed (gone, noindex, purged host): hidden
  in every earlier segment of the version.
- ``base``: the base segment's blob name it was scored against (its collection statistics
  are the version's: ``services.indexing.delta_stats``).
- ``rows``: ``"held"`` when its per-document arrays have one row per held document, in
  ``holds`` order (``held_rows``), so a delta's bytes follow what it holds, not the
  collection's size; absent: one row per document number up to its ``num_docs``. Postings
  keep the global numbers either way.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np


def to_ranges(docs: np.ndarray) -> list[list[int]]:
    """Ascending unique doc numbers as ``[start, end)`` runs."""
    docs = np.unique(np.asarray(docs, dtype=np.int64))
    if not docs.shape[0]:
        return []
    breaks = np.flatnonzero(np.diff(docs) != 1) + 1
    starts = np.concatenate([[0], breaks])
    ends = np.concatenate([breaks, [docs.shape[0]]])
    return [[int(docs[a]), int(docs[b - 1]) + 1] for a, b in zip(starts.tolist(), ends.tolist(), strict=True)]


def from_ranges(ranges: list[list[int]] | list[tuple[int, int]]) -> np.ndarray:
    """The doc numbers (ascending, uint32) of ``[start, end)`` runs."""
    if not ranges:
        return np.zeros(0, dtype=np.uint32)
    return np.concatenate([np.arange(int(a), int(b), dtype=np.uint32) for a, b in ranges])


@dataclass(frozen=True)
class DeltaDocs:
    """The ``delta`` object of a delta segment's meta (module docstring)."""

    base: str
    holds: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint32))
    removed: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint32))
    rows_held: bool = False  # per-document rows are the held documents' (module docstring)

    def to_meta(self) -> dict[str, Any]:
        ranges = {"holds": to_ranges(self.holds), "removed": to_ranges(self.removed)}
        return {"delta": {"base": self.base, **ranges, **({"rows": "held"} if self.rows_held else {})}}

    def rows(self, docs: np.ndarray) -> np.ndarray:
        """The per-document rows of ``docs`` (documents it holds), int64."""
        docs = np.asarray(docs, dtype=np.int64)
        return np.searchsorted(self.holds, docs).astype(np.int64) if self.rows_held else docs

    @classmethod
    def from_meta(cls, meta: Mapping[str, Any]) -> DeltaDocs | None:
        """The delta's documents; None for a base segment (a full build's or a merge's)."""
        delta = meta.get("delta")
        if not delta:
            return None
        holds, removed = from_ranges(delta.get("holds", [])), from_ranges(delta.get("removed", []))
        return cls(str(delta["base"]), holds, removed, delta.get("rows") == "held")


def held_row_count(meta: Mapping[str, Any]) -> int | None:
    """How many per-document rows a delta with held rows has (None: one per document number),
    from its meta's ranges alone (the contract's check reads no arrays)."""
    delta = meta.get("delta") or {}
    if delta.get("rows") != "held":
        return None
    return sum(int(b) - int(a) for a, b in delta.get("holds", []))
