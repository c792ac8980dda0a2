"""An index version of several segments searched as one: a base and the delta segments
published after it (issue 31; ``services.storage.formats.delta`` says what a delta holds).

A ``SegmentSet`` is a ``SegmentIndex`` to the rest of the search code (retrieval, phrases,
feedback, entry pages, explain, page info): the same methods over one space of document
numbers and one of term ids. Underneath, each document belongs to the newest segment that
holds it (``owner``): an older segment's postings of a recrawled page are skipped, never
counted twice, as Lucene's live-docs bitmaps hide a replaced document in its older segment.

- **Documents** keep their global numbers in every segment, so postings merge by document
  number with no translation; per-document tables (lengths, PageRank, URL kinds, the
  near-duplicate groups) are combined once per version, a few bytes per document.
- **Terms**: the base's term ids, then the terms only deltas hold, numbered after them.
  A delta's forward index and site names are translated into that space when read.
- **Postings**: a term's postings are its segments' postings concatenated in document order
  (a recrawled page's older copy left out); a posting's handle (``locate``) is its number
  in its segment plus the segment's offset, so field frequencies and positions are read
  from the segment that holds them.
- **Scores**: impacts were computed when each segment was built, a delta's with the
  collection's statistics at its build (``services.indexing.delta_build``): documents of
  every segment rank on one scale, and a merge recomputes them exactly.

Pure: the segments are opened (and downloaded) by ``index_holder``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import ClassVar

import numpy as np

from services.search.retrieval.posting_layout import PostingSource
from services.search.retrieval.segment import SegmentIndex
from services.search.retrieval.segment_set_tables import (
    combined_arrays,
    combined_meta,
    ownership,
    term_maps,
)
from services.storage.formats.delta import DeltaDocs
from services.text.analysis.forms import held_shares


@dataclass(frozen=True, eq=False)
class SegmentSet(SegmentIndex):
    """A base and its deltas (oldest first) as one index (module docstring)."""

    parts: tuple[SegmentIndex, ...] = ()
    owner: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int8))
    # Per part, the documents it holds that a later part holds too (ascending): its postings
    # of them are skipped (a delta of new pages only supersedes nothing).
    superseded: tuple[np.ndarray, ...] = ()
    to_set: tuple[np.ndarray, ...] = ()  # per part: its term id -> the set's
    to_part: tuple[Mapping[int, int], ...] = ()  # per delta (index 0 unused): the set's id -> its
    extra_terms: tuple[str, ...] = ()  # terms only deltas hold, numbered from the base's count
    extra_ids: Mapping[str, int] = field(default_factory=dict)
    handle_starts: np.ndarray = field(default_factory=lambda: np.zeros(1, np.int64))
    LISTS_IN_PLACE: ClassVar[bool] = False  # a term's list may be the base's and its deltas' merged
    removed_by_deltas: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint32))
    docs_of: tuple[DeltaDocs | None, ...] = ()  # per part: what a delta holds (None: the base)

    @classmethod
    def combine(
        cls,
        version_id: int,
        base: SegmentIndex,
        deltas: Sequence[tuple[SegmentIndex, DeltaDocs]],
        *,
        base_ids: Mapping[str, np.ndarray] | None = None,
    ) -> SegmentSet:
        """The version of ``base`` and ``deltas``; ``base_ids``: ``base_term_ids`` of deltas
        already mapped (by segment name)."""
        parts = (base, *(d for d, _ in deltas))
        docs_of = (None, *(docs for _, docs in deltas))
        owners = ownership(parts, docs_of)
        terms = term_maps(base, [d for d, _ in deltas], base_ids)
        sizes = [int(p.arrays["post_impacts"].shape[0]) for p in parts]
        index = cls(
            version_id,
            base.segment,
            base.path,
            combined_meta(parts),
            combined_arrays(parts, docs_of, owners.owner, terms.to_set, terms.num_terms),
            deleted=owners.removed,
            parts=parts,
            owner=owners.owner,
            superseded=owners.superseded,
            to_set=terms.to_set,
            to_part=terms.to_part,
            extra_terms=terms.extra_terms,
            extra_ids=terms.extra_ids,
            handle_starts=np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64),
            removed_by_deltas=owners.removed,
            docs_of=docs_of,
        )
        # The near-duplicate groups and the word-form tables now, not in the first query's time.
        index.folded_into([])
        _ = index._form_tables
        return index

    def with_deleted(self, deleted: np.ndarray) -> SegmentIndex:
        """The deltas' own removals stay hidden whatever else is."""
        both = np.union1d(np.asarray(deleted, dtype=np.uint32), self.removed_by_deltas).astype(np.uint32)
        return super().with_deleted(both)

    @property
    def segments(self) -> list[str]:
        return [p.segment for p in self.parts]

    def held_since(self, first: int) -> np.ndarray:
        """The documents the parts from ``first`` on hold (ascending): what they add to the
        version of the parts before them."""
        held = [d.holds for d in self.docs_of[first:] if d is not None]
        return np.unique(np.concatenate(held)).astype(np.int64) if held else np.zeros(0, np.int64)

    # Terms

    def term(self, term_id: int) -> str:
        base = self.parts[0]
        return base.term(term_id) if term_id < base.num_terms else self.extra_terms[term_id - base.num_terms]

    def term_id(self, term: str) -> int | None:
        found = self.parts[0].term_id(term)
        return found if found is not None else self.extra_ids.get(term)

    def max_impact(self, term_id: int) -> float:
        return float(self.arrays["max_impact"][term_id])

    def vocabulary(self) -> Iterator[tuple[str, int]]:
        """Each part's written forms, their counts summed (a form in one document of two
        segments is missing until a merge: each part kept forms in two or more)."""
        counts: Counter[str] = Counter()
        for part in self.parts:
            for form, held in part.vocabulary():
                counts[form] += held
        yield from sorted(counts.items(), key=lambda kv: kv[0].encode("utf-8"))

    def _pieces(self, term_id: int) -> list[tuple[int, int]]:
        """(part, the part's term id) of every part holding the term."""
        out = [(0, term_id)] if term_id < self.parts[0].num_terms else []
        for p in range(1, len(self.parts)):
            local = self.to_part[p].get(term_id)
            if local is not None:
                out.append((p, local))
        return out

    # Postings

    def _merged(self, term_id: int, handles: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """The term's (documents ascending, impacts, handles if asked) over every part, each
        document's from the part that owns it."""
        docs_parts, impact_parts, handle_parts = [], [], []
        for p, local in self._pieces(term_id):
            part = self.parts[p]
            docs, impacts = part.postings(local)
            keep = self._kept(p, docs)
            if keep is not None:
                docs, impacts = docs[keep], impacts[keep]
            docs_parts.append(docs)
            impact_parts.append(impacts)
            if handles:
                start = int(self.handle_starts[p]) + part.posting_range(local)[0]
                span = np.flatnonzero(keep) if keep is not None else np.arange(docs.shape[0])
                handle_parts.append(start + span.astype(np.int64))
        if not docs_parts:
            empty = np.zeros(0, np.uint32)
            return empty, np.zeros(0, np.float32), (np.zeros(0, np.int64) if handles else None)
        if len(docs_parts) == 1:
            return docs_parts[0], impact_parts[0], (handle_parts[0] if handles else None)
        docs = np.concatenate(docs_parts)
        impacts = np.concatenate(impact_parts)
        joined = np.concatenate(handle_parts) if handles else None
        # Each part's list is ascending: the whole is unless a part starts below where an
        # earlier one ended (a recrawl's old number in a delta).
        ends = [int(d[-1]) for d in docs_parts if d.shape[0]]
        firsts = [int(d[0]) for d in docs_parts if d.shape[0]]
        if any(first < max(ends[:i]) for i, first in enumerate(firsts) if i):
            order = np.argsort(docs, kind="stable")  # runs already sorted: a merge of them
            docs, impacts = docs[order], impacts[order]
            joined = joined[order] if joined is not None else None
        return docs, impacts, joined

    def _kept(self, p: int, docs: np.ndarray) -> np.ndarray | None:
        """Which of part ``p``'s postings ``docs`` it still owns; None: all. The superseded
        documents are few next to a long list (the recrawls since the base): each is looked
        up in the list, rather than every posting's owner read."""
        gone = self.superseded[p]
        if not gone.shape[0] or not docs.shape[0]:
            return None
        if gone.shape[0] * 16 >= docs.shape[0]:
            keep: np.ndarray = self.owner[docs] == p
            return None if keep.all() else keep
        at = np.searchsorted(docs, gone)
        inside = at < docs.shape[0]
        at = at[inside]
        drop = at[docs[at] == gone[inside]]
        if not drop.shape[0]:
            return None
        keep = np.ones(docs.shape[0], dtype=bool)
        keep[drop] = False
        return keep

    def postings(self, term_id: int) -> tuple[np.ndarray, np.ndarray]:
        docs, impacts, _ = self._merged(term_id, handles=False)
        return docs, impacts

    def posting_docs(self, term_id: int) -> np.ndarray:
        return self.postings(term_id)[0]

    def query_postings(
        self, term_id: int
    ) -> tuple[np.ndarray | Callable[[], np.ndarray], np.ndarray, int | None, float | None, int]:
        """The base's list, read in place, when no delta holds the term and none of its
        documents is superseded; otherwise the merged list (the query's own, float32 impacts)."""
        if self._pieces(term_id) == [(0, term_id)]:
            in_place = self.parts[0].query_postings(term_id)
            gone = self.superseded[0]  # looked up in the list's blocks, the list not decoded
            if not gone.shape[0] or not self.parts[0].locate(term_id, gone)[0].any():
                return in_place
        docs, impacts = self.postings(term_id)
        return docs, impacts, None, None, int(docs.shape[0])

    @cached_property
    def posting_source(self) -> PostingSource:
        return self.parts[0].posting_source

    def posting_range(self, term_id: int) -> tuple[int, int]:
        raise TypeError("a segment set's postings are not one range: use postings() or locate()")

    def locate(self, term_id: int, docs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        docs = np.asarray(docs)
        hit = np.zeros(docs.shape[0], dtype=bool)
        handles = np.zeros(docs.shape[0], dtype=np.int64)
        owners = self._owners(docs)
        for p, local in self._pieces(term_id):
            sel = np.flatnonzero(owners == p)
            if not sel.shape[0]:
                continue
            found, at = self.parts[p].locate(local, docs[sel])
            hit[sel] = found
            handles[sel] = at + int(self.handle_starts[p])
        return hit, handles

    def _owners(self, docs: np.ndarray) -> np.ndarray:
        docs = np.asarray(docs, dtype=np.int64)
        inside = docs < self.owner.shape[0]
        out = np.full(docs.shape[0], -1, dtype=np.int64)
        out[inside] = self.owner[docs[inside]]
        return out

    def _route(self, handles: np.ndarray) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
        """(part, positions in ``handles``, the part's posting numbers) of each part."""
        handles = np.asarray(handles, dtype=np.int64)
        part_of = np.searchsorted(self.handle_starts, handles, side="right") - 1
        for p in np.unique(part_of).tolist():
            sel = np.flatnonzero(part_of == p)
            yield p, sel, handles[sel] - int(self.handle_starts[p])

    def term_impacts(
        self, term_ids: Sequence[int] | np.ndarray, docs: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        docs = np.asarray(docs)
        held = np.zeros((len(term_ids), docs.shape[0]), dtype=bool)
        impacts = np.zeros((len(term_ids), docs.shape[0]), dtype=np.float32)
        for row, term_id in enumerate(term_ids):
            held[row], handles = self.locate(int(term_id), docs)
            impacts[row, held[row]] = self.posting_impacts(handles[held[row]])
        return held, impacts

    def posting_impacts(self, postings: np.ndarray) -> np.ndarray:
        out = np.zeros(np.asarray(postings).shape[0], dtype=np.float32)
        for p, sel, local in self._route(postings):
            out[sel] = self.parts[p].posting_impacts(local)
        return out

    def field_tfs(self, field: str, postings: np.ndarray) -> np.ndarray:
        out = np.zeros(np.asarray(postings).shape[0], dtype=np.uint16)
        for p, sel, local in self._route(postings):
            out[sel] = self.parts[p].field_tfs(field, local)
        return out

    def field_tfs_many(self, fields: Sequence[str], postings: np.ndarray) -> list[np.ndarray]:
        n = np.asarray(postings).shape[0]
        out = [np.zeros(n, dtype=np.uint32) for _ in fields]
        for p, sel, local in self._route(postings):
            for into, got in zip(out, self.parts[p].field_tfs_many(fields, local), strict=True):
                into[sel] = got
        return out

    def field_tfs_of(self, field: str, term_id: int) -> np.ndarray:
        _, _, handles = self._merged(term_id, handles=True)
        assert handles is not None
        return self.field_tfs(field, handles)

    def positions(self, postings: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each part's positions, put back in ``postings``' order."""
        postings = np.asarray(postings, dtype=np.int64)
        routed = list(self._route(postings))
        if len(routed) == 1:
            p, _, local = routed[0]
            return self.parts[p].positions(local)
        order = np.concatenate([sel for _, sel, _ in routed]) if routed else np.zeros(0, np.int64)
        got = [self.parts[p].positions(local) for p, _, local in routed]
        counts, take = _reorder(order, [c for c, _ in got])
        return counts, np.concatenate([v for _, v in got])[take]

    # Documents

    def forward(self, docs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Each document's forward entries from its part, term ids in the set's numbering
        (a delta's run is then not ascending: feedback does not need it to be)."""
        docs = np.asarray(docs, dtype=np.int64)
        owners = np.maximum(self._owners(docs), 0)
        parts = np.unique(owners).tolist()
        if len(parts) == 1:
            counts, terms, tfs = self.parts[parts[0]].forward(self._rows(parts[0], docs))
            return counts, self.to_set[parts[0]][terms], tfs
        order_parts, counts_parts, terms_parts, tfs_parts = [], [], [], []
        for p in parts:
            sel = np.flatnonzero(owners == p)
            counts, terms, tfs = self.parts[p].forward(self._rows(p, docs[sel]))
            order_parts.append(sel)
            counts_parts.append(counts)
            terms_parts.append(self.to_set[p][terms])
            tfs_parts.append(tfs)
        order = np.concatenate(order_parts)
        counts, take = _reorder(order, counts_parts)
        return counts, np.concatenate(terms_parts)[take], np.concatenate(tfs_parts)[take]

    def form_shares(self, docs: np.ndarray, pairs: np.ndarray) -> np.ndarray:
        """One pass over the version's filters (``_form_tables``): a call per segment cost
        numpy's overhead per segment on every results page."""
        deltas, start, end = self._form_tables
        return held_shares(self.parts[0].arrays["form_filters"], start, end, docs, pairs, deltas)

    @cached_property
    def _form_tables(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(the deltas' word-form filters joined, where each document's filter starts and ends
        in the base's filters followed by those): built with the version (``combine``); the
        base's filters stay where they are mapped."""
        n = self.num_docs
        start = np.zeros(n, dtype=np.int64)
        end = np.zeros(n, dtype=np.int64)
        chunks, at = [], 0
        for p, part in enumerate(self.parts):
            offsets = part.arrays["form_offsets"].astype(np.int64)
            held = np.flatnonzero(self.owner == p)
            rows = self._rows(p, held)
            start[held] = offsets[rows] + at
            end[held] = offsets[rows + 1] + at
            filters = part.arrays["form_filters"]
            if p:
                chunks.append(filters)
            at += int(filters.shape[0])
        joined = np.concatenate(chunks) if chunks else np.zeros(0, np.uint8)
        return joined, start, end

    def site_name_holds(self, term_ids: Sequence[int], docs: np.ndarray) -> np.ndarray:
        docs = np.asarray(docs, dtype=np.int64)
        out = np.zeros(docs.shape[0], dtype=bool)
        owners = self._owners(docs)
        for p in np.unique(owners[owners >= 0]).tolist():
            sel = np.flatnonzero(owners == p)
            if p == 0:
                local = [t for t in term_ids if t < self.parts[0].num_terms]
            else:
                local = [self.to_part[p][t] for t in term_ids if t in self.to_part[p]]
            if local:
                out[sel] = self.parts[p].site_name_holds(local, self._rows(p, docs[sel]))
        return out

    @property
    def has_links(self) -> bool:
        return self.parts[0].has_links

    def in_links(self, doc: int) -> np.ndarray:
        """The documents linking to ``doc`` in any part's link graph (a delta's holds the
        links between its own pages)."""
        found = []
        for p, part in enumerate(self.parts):
            docs = self.docs_of[p]
            if not part.has_links or (docs is None and doc >= part.num_docs):
                continue
            if docs is not None and not _holds(docs, doc):
                continue
            links = part.in_links(int(self._rows(p, np.array([doc]))[0]))
            if links.shape[0]:
                found.append(links)
        if not found:
            return np.zeros(0, dtype=np.uint32)
        return found[0] if len(found) == 1 else np.unique(np.concatenate(found)).astype(np.uint32)

    def out_count(self, doc: int) -> int | None:
        p = int(self.owner[doc]) if doc < self.owner.shape[0] else -1
        if p < 0:
            return 0 if self.has_links else None
        return self.parts[p].out_count(int(self._rows(p, np.array([doc]))[0]))

    def _rows(self, p: int, docs: np.ndarray) -> np.ndarray:
        """Part ``p``'s per-document rows of ``docs`` (documents it holds)."""
        docs_of = self.docs_of[p]
        return np.asarray(docs, dtype=np.int64) if docs_of is None else docs_of.rows(docs)


def _reorder(order: np.ndarray, counts_parts: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Runs given for items in ``order`` (item ``order[i]``'s run is the i-th), counted by
    ``counts_parts``: (each item's count in item order, the positions in the runs'
    concatenation that put them back in item order)."""
    counts_sorted = np.concatenate(counts_parts).astype(np.int64)
    counts = np.zeros(order.shape[0], dtype=np.int64)
    counts[order] = counts_sorted
    starts = np.zeros(order.shape[0], dtype=np.int64)
    starts[order] = np.concatenate([[0], np.cumsum(counts_sorted)[:-1]]).astype(np.int64)
    run_starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    within = np.arange(int(counts.sum()), dtype=np.int64) - np.repeat(run_starts, counts)
    return counts, np.repeat(starts, counts) + within


def _holds(docs: DeltaDocs, doc: int) -> bool:
    at = int(np.searchsorted(docs.holds, doc))
    return at < docs.holds.shape[0] and int(docs.holds[at]) == doc
