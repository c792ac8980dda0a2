"""What a version of several segments (``segment_set.SegmentSet``) is built from, once per
version in the holder's thread: which segment owns each document, one space of term ids,
and the per-document and per-term tables the search code reads directly. Pure."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from services.search.retrieval.segment import SegmentIndex
from services.storage.formats.delta import DeltaDocs
from services.storage.formats.term_lookup import term_ids

# Per-document arrays the search code reads directly (``SegmentIndex.arrays``), and what a
# document no segment holds gets.
PER_DOC = (
    "len_title",
    "len_body",
    "len_anchor",
    "len_url",
    "len_meta",
    "len_nav",
    "doc_lengths",
    "near_dup_of",
    "pagerank",
    "out_counts",
    "url_kind",
)


def base_term_ids(base: SegmentIndex, delta: SegmentIndex) -> np.ndarray:
    """Each of ``delta``'s term ids' id in ``base`` (-1: a term new to it). Once per pair
    (``index_holder`` keeps them): the delta's terms looked up together, block by block."""
    offsets = delta.arrays["term_offsets"].tolist()
    blob = delta.arrays["term_bytes"].tobytes()
    keys = [blob[offsets[i] : offsets[i + 1]] for i in range(len(offsets) - 1)]
    return term_ids(base.arrays["term_bytes"], base.arrays["term_offsets"], keys)


@dataclass(frozen=True)
class Ownership:
    """Which part owns each document (the newest holding it; -1: none), what each part holds
    that a later one holds again (ascending), and what the deltas removed and no later one
    holds again."""

    owner: np.ndarray  # int8 per document number
    superseded: tuple[np.ndarray, ...]
    removed: np.ndarray  # uint32, ascending


def ownership(parts: Sequence[SegmentIndex], docs_of: Sequence[DeltaDocs | None]) -> Ownership:
    """``parts``: the base, then the deltas oldest first (``docs_of``: what each delta holds)."""
    # A delta's meta says how many document numbers it knew; its rows may be fewer.
    num_docs = max(int(p.meta.get("num_docs", p.num_docs)) for p in parts)
    owner = np.full(num_docs, -1, dtype=np.int8)
    owner[: parts[0].num_docs] = 0
    superseded: list[list[np.ndarray]] = [[] for _ in parts]
    gone = np.zeros(0, dtype=np.int64)  # removed by a delta, not held again by a later one
    for p, docs in enumerate(docs_of):
        if docs is None:
            continue
        held = docs.holds[docs.holds < num_docs].astype(np.int64)
        earlier = owner[held]
        for q in np.unique(earlier[earlier >= 0]).tolist():
            superseded[q].append(held[earlier == q])
        owner[held] = p
        gone = np.union1d(np.setdiff1d(gone, held), docs.removed.astype(np.int64))
    ascending = tuple(
        np.sort(np.concatenate(g)).astype(np.uint32) if g else np.zeros(0, np.uint32) for g in superseded
    )
    return Ownership(owner, ascending, gone.astype(np.uint32))


@dataclass(frozen=True)
class TermMaps:
    """The set's term ids: the base's, then each term only deltas hold, once."""

    to_set: tuple[np.ndarray, ...]  # per part: its term id -> the set's
    to_part: tuple[Mapping[int, int], ...]  # per part (index 0 unused): the set's id -> its
    extra_terms: tuple[str, ...]
    extra_ids: Mapping[str, int]
    num_terms: int


def term_maps(
    base: SegmentIndex, deltas: Sequence[SegmentIndex], base_ids: Mapping[str, np.ndarray] | None
) -> TermMaps:
    """``base_ids``: ``base_term_ids`` of deltas already mapped (by segment name)."""
    base_terms = base.num_terms
    to_set: list[np.ndarray] = [np.arange(base_terms, dtype=np.int64)]
    to_part: list[Mapping[int, int]] = [{}]
    extra_terms: list[str] = []
    extra_ids: dict[str, int] = {}
    for delta in deltas:
        known = base_ids.get(delta.segment) if base_ids is not None else None
        ids = (known if known is not None else base_term_ids(base, delta)).copy()
        for local in np.flatnonzero(ids < 0).tolist():
            term = delta.term(local)
            if term not in extra_ids:
                extra_ids[term] = base_terms + len(extra_terms)
                extra_terms.append(term)
            ids[local] = extra_ids[term]
        to_set.append(ids)
        to_part.append(dict(zip(ids.tolist(), range(ids.shape[0]), strict=True)))
    num_terms = base_terms + len(extra_terms)
    return TermMaps(tuple(to_set), tuple(to_part), tuple(extra_terms), extra_ids, num_terms)


def combined_arrays(
    parts: Sequence[SegmentIndex],
    docs_of: Sequence[DeltaDocs | None],
    owner: np.ndarray,
    to_set: Sequence[np.ndarray],
    num_terms: int,
) -> dict[str, np.ndarray]:
    """The per-document arrays (each document's from its part) and the per-term ones the
    search code reads (df summed, the largest impact bound)."""
    base = parts[0]
    num_docs = int(owner.shape[0])
    out: dict[str, np.ndarray] = {}
    held_by = [np.flatnonzero(owner == p) for p in range(len(parts))]
    for name in PER_DOC:
        have = base.arrays[name]
        if name == "near_dup_of":
            combined = np.arange(num_docs, dtype=have.dtype)
        else:
            combined = np.zeros(num_docs, dtype=have.dtype)
        combined[: have.shape[0]] = have
        for p in range(1, len(parts)):
            docs = docs_of[p]
            rows = held_by[p] if docs is None else docs.rows(held_by[p])
            combined[held_by[p]] = parts[p].arrays[name][rows]
        out[name] = combined
    df = np.zeros(num_terms, dtype=np.uint32)
    bound = np.zeros(num_terms, dtype=np.float32)
    for p, part in enumerate(parts):
        ids = to_set[p]
        np.add.at(df, ids, part.arrays["df"])
        np.maximum.at(bound, ids, part.arrays["max_impact"])
    out["df"] = df
    out["max_impact"] = bound
    return out


def combined_meta(parts: Sequence[SegmentIndex]) -> dict[str, Any]:
    """The base's meta with the newest part's commit mark and every part's languages."""
    meta = dict(parts[0].meta)
    newest = parts[-1].meta
    for key in ("through_seq", "pending_seqs"):
        if key in newest:
            meta[key] = newest[key]
    languages: Counter[str] = Counter()
    for part in parts:
        languages.update({str(k): int(v) for k, v in part.meta.get("languages", {}).items()})
    meta["languages"] = dict(languages)
    meta["num_docs"] = max(int(p.meta.get("num_docs", p.num_docs)) for p in parts)
    meta["segments"] = [p.segment for p in parts]
    return meta
