"""The collection statistics a delta segment is scored with: the whole version's, not the
delta's own (``services.ranking.bm25f.CollectionStats`` says why). Pure: the segments are
given as their stored (memory-mapped) arrays.

- N: every document number of the collection (as a full build counts it, removed ones too).
- df of each of the delta's terms: the documents holding it in each earlier segment of the
  version (its dictionary's ``df``, looked up with ``storage.formats.term_lookup``), less
  that segment's copies of documents a later segment supersedes or removes (read from its
  forward index, which lists every term of a document), plus the delta's own.
- average field lengths: the base's lengths, each later segment's held documents overwritten
  by that segment's, removed documents 0, the new delta's last, over all N documents.

Without recrawls, removals or anchor text crossing between the delta and the rest, these
are exactly the statistics a full build over the same documents has (a test compares the
impacts); otherwise the anchor text a delta cannot know is the difference
(``services.indexing.delta_build``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from services.ranking.bm25f import FIELD_NAMES, CollectionStats, average_lengths
from services.storage.formats.delta import DeltaDocs
from services.storage.formats.forward_index import forward_lists
from services.storage.formats.term_lookup import term_ids


@dataclass(frozen=True)
class VersionPart:
    """One segment of the active version, as a delta's build reads it."""

    name: str
    arrays: Mapping[str, np.ndarray]  # as stored (``open_segment``), memory-mapped
    docs: DeltaDocs | None  # None: the base, which holds every document it numbers

    @property
    def num_docs(self) -> int:
        """Rows of its per-document arrays (a delta with held rows: its held documents)."""
        return int(self.arrays["doc_lengths"].shape[0])

    def rows(self, docs: np.ndarray) -> np.ndarray:
        """The per-document rows of ``docs`` (documents it holds)."""
        return np.asarray(docs, dtype=np.int64) if self.docs is None else self.docs.rows(docs)


def superseded(parts: Sequence[VersionPart], holds: np.ndarray, removed: np.ndarray) -> list[np.ndarray]:
    """For each part, the documents it holds that a later part (or the new delta: ``holds``,
    ``removed``) holds anew or removed: its copies no longer count."""
    later = np.union1d(np.asarray(holds, np.int64), np.asarray(removed, np.int64))
    out: list[np.ndarray] = [np.zeros(0, np.int64)] * len(parts)
    for i in reversed(range(len(parts))):
        part = parts[i]
        if part.docs is None:
            out[i] = later[later < part.num_docs]
        else:
            out[i] = np.intersect1d(later, part.docs.holds.astype(np.int64))
            later = np.union1d(later, np.union1d(part.docs.holds, part.docs.removed).astype(np.int64))
    return out


def delta_stats(
    parts: Sequence[VersionPart],
    num_docs: int,
    holds: np.ndarray,
    removed: np.ndarray,
    lengths: Mapping[int, Sequence[int]],
    terms: Sequence[bytes],
) -> tuple[CollectionStats, int]:
    """(The statistics of the version with the new delta in it, how many of ``terms`` no
    earlier segment has). ``parts``: the version's segments, base first; ``holds``,
    ``removed``, ``lengths`` (doc -> field lengths) and ``terms``: the new delta's."""
    gone = superseded(parts, holds, removed)
    other = np.zeros(len(terms), dtype=np.int64)
    known = np.zeros(len(terms), dtype=bool)
    for part, dead in zip(parts, gone, strict=True):
        a = part.arrays
        ids = term_ids(a["term_bytes"], a["term_offsets"], terms)
        hit = np.flatnonzero(ids >= 0)
        known[hit] = True
        counts = np.asarray(a["df"])[ids[hit]].astype(np.int64)
        if dead.shape[0] and hit.shape[0]:
            _, dead_terms, _ = forward_lists(a, part.rows(dead))
            uniq, per = np.unique(dead_terms, return_counts=True)
            at = np.minimum(np.searchsorted(uniq, ids[hit]), max(uniq.shape[0] - 1, 0))
            if uniq.shape[0]:
                counts -= np.where(uniq[at] == ids[hit], per[at], 0)
        other[hit] += counts
    other_df = {t: int(n) for t, n in zip(terms, other.tolist(), strict=True) if n}
    averages = tuple(average_lengths(list(all_lengths(parts, num_docs, holds, removed, lengths))))
    return CollectionStats(num_docs, averages, other_df), int((~known).sum())


def all_lengths(
    parts: Sequence[VersionPart],
    num_docs: int,
    holds: np.ndarray,
    removed: np.ndarray,
    lengths: Mapping[int, Sequence[int]],
) -> np.ndarray:
    """Every document's field lengths (fields x N, uint32) as the version with the new delta
    holds them: each document's from the last segment holding it, removed ones 0."""
    out = np.zeros((len(FIELD_NAMES), num_docs), dtype=np.uint32)
    for part in parts:
        a = part.arrays
        if part.docs is None:
            n = min(num_docs, part.num_docs)
            for f, name in enumerate(FIELD_NAMES):
                out[f, :n] = a[f"len_{name}"][:n]
            continue
        held = part.docs.holds.astype(np.int64)
        held = held[held < num_docs]
        rows = part.rows(held)
        for f, name in enumerate(FIELD_NAMES):
            out[f, held] = np.asarray(a[f"len_{name}"])[rows]
        out[:, _below(part.docs.removed, num_docs)] = 0
    out[:, _below(holds, num_docs)] = 0
    if lengths:
        docs = np.fromiter(lengths.keys(), dtype=np.int64, count=len(lengths))
        out[:, docs] = np.array(list(lengths.values()), dtype=np.uint32).T
    out[:, _below(removed, num_docs)] = 0
    return out


def _below(docs: np.ndarray, num_docs: int) -> np.ndarray:
    wide = np.asarray(docs, dtype=np.int64)
    return wide[wide < num_docs]
