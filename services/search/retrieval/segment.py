"""The search side of an index segment: memory-map it, look terms up (``IndexHolder``, in
``index_holder``, downloads it and swaps versions).

The publish step (``services.indexing.publish``) writes the arrays of the
segment contract (``services.storage.formats.segment.SEGMENT_ARRAYS``); this module
is their only reader. A loaded
``SegmentIndex`` is never mutated: a new index version is opened as a new
object and swapped in by ``IndexHolder``, so a request that already holds the
old object finishes on it (the old memory map lives until its last user drops
it).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property, partial
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from services.compiled import as_mapped
from services.ranking.entry_pages import UrlKind
from services.ranking.impact_levels import dequantize
from services.search.errors import SearchIndexError
from services.search.retrieval.blockmax import warm_up
from services.search.retrieval.conjunction import warm_up as warm_and
from services.search.retrieval.exact_forms import warm_up as warm_exact_forms
from services.search.retrieval.feedback import warm_up as warm_feedback
from services.search.retrieval.pool_rescore import warm_up as warm_pool_rescore
from services.search.retrieval.posting_layout import PostingSource
from services.search.retrieval.rank import pagerank_prior
from services.search.retrieval.term_dictionary import TermDictionary
from services.storage.errors import SegmentContractError, StorageError
from services.storage.formats.doc_blocks import DocBlocks
from services.storage.formats.doc_blocks import warm_up as warm_doc_blocks
from services.storage.formats.forward_index import FORWARD_ARRAYS, forward_lists
from services.storage.formats.segment import check_segment, open_segment, segment_dtypes
from services.storage.formats.segment_codec import (
    field_tfs,
    field_tfs_many,
    field_tfs_range,
    position_lists,
    warm_position_lists,
)
from services.text.analysis.analyze import analyzer_version
from services.text.analysis.forms import held_shares
from services.text.analysis.forms import warm_up as warm_forms

log = logging.getLogger(__name__)

# SegmentIndex's cached tables that do not depend on its deleted documents (``with_deleted``).
_SHARED_TABLES = (
    "languages",
    "folded",
    "_groups",
    "dictionary",
    "_priors",
    "_form_tables",
    "posting_source",
)


def warm_kernels() -> None:
    """Load (or compile, once per install) every compiled kernel a query runs: the OR and AND
    top-k, the word-form probe, RM3's relevance model and pool rescore, the forward index reader and the
    phrases' position reader, each for
    the argument types a memory-mapped segment gives (``services.compiled``). A segment's
    open calls it; so may whoever must not pay the compile inside a timed start."""
    warm_or_kernels()
    warm_other_kernels()


def warm_or_kernels() -> None:
    """The OR top-k, its count and the count's estimate (``blockmax``): more than half of
    ``warm_kernels``' compile (``nimbus warm-kernels`` compiles them beside the others)."""
    warm_up()


def warm_other_kernels() -> None:
    """Every kernel ``warm_kernels`` readies but the OR top-k's."""
    warm_and()
    warm_forms()
    warm_feedback()
    warm_pool_rescore()
    dtypes = segment_dtypes()
    mapped = {name: as_mapped(np.zeros(1, dtypes[name])) for name in FORWARD_ARRAYS}
    forward_lists(mapped, np.zeros(0, np.int64))
    warm_position_lists()
    warm_doc_blocks()
    warm_exact_forms()


def check_analyzer(meta: Mapping[str, Any], where: str) -> None:
    """Refuse a segment whose terms this process's analyzer would not give: its queries
    would silently miss (a stemmer, a stop list or a language's analysis changed)."""
    built = meta.get("analyzer", "1 (before per-language analysis)")
    if built != analyzer_version():
        raise SearchIndexError(
            f"{where}: index built with analyzer {built}, but this search service analyzes "
            f"queries with analyzer {analyzer_version()}; rebuild the index with this release "
            "(`nimbus index`) before serving it"
        )


@dataclass(frozen=True, eq=False)
class SegmentIndex:
    """One published index version, memory-mapped and read-only."""

    version_id: int
    segment: str  # blob name, e.g. index/segment-<version>.nseg
    path: Path
    meta: Mapping[str, Any]
    arrays: Mapping[str, np.ndarray]
    # Documents removed since this version was built (a recrawl found them gone or noindex, the
    # operator purged their host), ascending: never results, until the next version leaves
    # them out (``with_deleted``; Lucene's live-docs bitmap over a segment, refreshed as
    # ``IndexHolder`` rechecks the database).
    deleted: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint32))
    deletes_seen: int = 0  # how many times the deleted set changed under this version
    # Every term's list is read where the segment maps it, by its term id in
    # ``posting_source`` (a segment set merges some with its deltas': ``query_postings``).
    LISTS_IN_PLACE: ClassVar[bool] = True

    @property
    def segments(self) -> list[str]:
        """The blob names of the segments this version is (a set: its base, then its deltas)."""
        return [self.segment]

    @property
    def view(self) -> tuple[int, int]:
        """What a cached answer depends on: the version and its deleted documents."""
        return (self.version_id, self.deletes_seen)

    def with_deleted(self, deleted: np.ndarray) -> SegmentIndex:
        """This version with ``deleted`` (ascending doc numbers below ``num_docs``) hidden; the
        tables built from the arrays (dictionary sample, priors, near-duplicate groups) are
        shared, only the visibility mask is new. The same object when they are the same."""
        deleted = np.asarray(deleted, dtype=np.uint32)
        if np.array_equal(deleted, self.deleted):
            return self
        view = replace(self, deleted=deleted, deletes_seen=self.deletes_seen + 1)
        for name in _SHARED_TABLES:
            if name in self.__dict__:
                view.__dict__[name] = self.__dict__[name]
        return view

    @classmethod
    def open(cls, path: Path, version_id: int = 0, segment: str = "") -> SegmentIndex:
        """Memory-map ``path`` and check every array against the contract."""
        try:
            arrays, meta = open_segment(path)
        except (StorageError, OSError, ValueError, KeyError) as exc:
            raise SearchIndexError(
                f"cannot open index segment {path}: {exc}; re-run `nimbus index` to publish a new one"
            ) from exc
        try:
            check_segment(arrays, meta, str(path))
        except SegmentContractError as exc:
            raise SearchIndexError(str(exc)) from exc
        check_analyzer(meta, str(path))
        # Plain ndarray views of the memory maps: slicing an np.memmap runs Python code
        # (__array_finalize__) on every slice, a large share of a query's time
        # (docs/performance-notes.md).
        plain = {name: np.asarray(array) for name, array in arrays.items()}
        index = cls(version_id, segment or path.name, Path(path), dict(meta), plain)
        index.term_id("")  # builds the dictionary's sample now, not in the first query's time
        if not meta.get("delta"):  # a delta's groups are its version's (segment_set)
            index.folded_into([])  # and the near-duplicate groups
            index.posting_source  # and the block maxima  # noqa: B018
        warm_kernels()  # loaded, or compiled once per install, before a query needs them
        return index

    @cached_property
    def languages(self) -> dict[str, int]:
        """Pages of each analysis (``services.text.analysis.languages``) the index holds."""
        return {str(k): int(v) for k, v in self.meta.get("languages", {}).items()}

    @property
    def num_docs(self) -> int:
        return int(self.arrays["doc_lengths"].shape[0])

    @property
    def num_terms(self) -> int:
        return int(self.arrays["df"].shape[0])

    @property
    def doc_lengths(self) -> np.ndarray:
        return self.arrays["doc_lengths"]

    @property
    def pagerank(self) -> np.ndarray:
        return self.arrays["pagerank"]

    @cached_property
    def entry_docs(self) -> np.ndarray:
        """The documents whose URL is a site's or a section's entry (roots and subroots),
        ascending: the only pages a query can name (``entry_pages``); a few per site."""
        kinds = self.arrays.get("url_kind")
        if kinds is None:
            return np.zeros(0, np.uint32)
        return np.flatnonzero(kinds <= UrlKind.SUBROOT).astype(np.uint32)

    @cached_property
    def folded(self) -> np.ndarray:
        """Near-duplicates folded into another document (ascending): never results of their
        own, listed under their group's representative (services.text.analysis.minhash)."""
        group = self.arrays["near_dup_of"]
        return np.flatnonzero(group != np.arange(group.shape[0], dtype=group.dtype)).astype(np.uint32)

    @cached_property
    def visible(self) -> np.ndarray | None:
        """True for every document that may be a result (not folded, not deleted); None when
        all may. A deleted group representative's first live member stands in for it."""
        if not self.folded.shape[0] and not self.deleted.shape[0]:
            return None
        mask = np.ones(self.num_docs, dtype=bool)
        mask[self.folded] = False
        mask[self.deleted] = False
        for stand_in in self._stand_ins:
            mask[stand_in] = True
        return mask

    def folded_into(self, doc_nums: list[int]) -> dict[int, list[int]]:
        """representative -> the near-duplicates folded into it (deleted ones left out), for
        ``doc_nums``; a stand-in for a deleted representative lists the group's other members."""
        groups = self._groups
        found = {num: groups[num] for num in doc_nums if num in groups}
        if not self.deleted.shape[0]:
            return found
        stand_ins = self._stand_ins
        found |= {num: stand_ins[num] for num in doc_nums if num in stand_ins}
        gone = self._gone
        return {num: [m for m in ms if m not in gone and m != num] for num, ms in found.items()}

    @cached_property
    def _gone(self) -> frozenset[int]:
        """The deleted documents as a set, built once per view (a results page asks per hit)."""
        return frozenset(self.deleted.tolist())

    @cached_property
    def _stand_ins(self) -> dict[int, list[int]]:
        """For each deleted representative of a near-duplicate group, its first live member ->
        the group's members: the copies of a page that went away are still found (the next
        update refolds the group), under one of them, as before."""
        if not self.deleted.shape[0]:
            return {}
        gone = self._gone
        out: dict[int, list[int]] = {}
        for rep in gone & self._groups.keys():
            members = self._groups[rep]
            live = [m for m in members if m not in gone]
            if live:
                out[live[0]] = members
        return out

    @cached_property
    def _groups(self) -> dict[int, list[int]]:
        """Every representative's folded members (ascending), built once per segment: a
        scan of all folded documents per query costs more than ranking when many are folded
        (docs/benchmarks.md)."""
        folded = self.folded
        out: dict[int, list[int]] = {}
        into = self.arrays["near_dup_of"][folded]
        for member, rep in zip(folded.tolist(), into.tolist(), strict=True):
            out.setdefault(rep, []).append(member)
        return out

    def vocabulary(self) -> Iterator[tuple[str, int]]:
        """(written form, documents holding it) for forms in two or more documents; nothing
        from a segment older than format 5."""
        if "vocab_df" not in self.arrays:
            return
        raw = self.arrays["vocab_bytes"].tobytes()
        offsets = self.arrays["vocab_offsets"].tolist()
        for i, held in enumerate(self.arrays["vocab_df"].tolist()):
            yield raw[offsets[i] : offsets[i + 1]].decode("utf-8"), held

    @property
    def has_links(self) -> bool:
        """Format-4 segments keep the link graph (page info); older ones do not."""
        return "in_offsets" in self.arrays

    def in_links(self, doc: int) -> np.ndarray:
        """The documents linking to ``doc`` (ascending); empty without the link graph."""
        if not self.has_links:
            return np.zeros(0, dtype=np.uint32)
        offsets = self.arrays["in_offsets"]
        return self.arrays["in_docs"][int(offsets[doc]) : int(offsets[doc + 1])]

    def out_count(self, doc: int) -> int | None:
        """Links from ``doc`` to crawled pages; None without the link graph."""
        return int(self.arrays["out_counts"][doc]) if self.has_links else None

    @cached_property
    def dictionary(self) -> TermDictionary:
        """The segment's terms, looked up (``term_dictionary``)."""
        return TermDictionary(self.arrays["term_offsets"], self.arrays["term_bytes"])

    def term(self, term_id: int) -> str:
        return self.dictionary.term(term_id)

    def term_id(self, term: str) -> int | None:
        return self.dictionary.term_id(term)

    def postings(self, term_id: int) -> tuple[np.ndarray, np.ndarray]:
        """(doc numbers ascending, decoded; impacts, float32)."""
        start, end = self.posting_range(term_id)
        levels = self.arrays["post_impacts"][start:end]
        return self.posting_docs(term_id), dequantize(levels, self.arrays["impact_scale"][term_id])

    def posting_docs(self, term_id: int) -> np.ndarray:
        """The doc numbers of the term's postings, ascending, decoded from their blocks (uint32)."""
        return self.doc_blocks.term_docs(term_id)

    @cached_property
    def doc_blocks(self) -> DocBlocks:
        """The postings' document blocks, with where each block's words start (derived when the
        segment opens: one pass over the blocks' widths)."""
        return DocBlocks.of(self.arrays)

    def query_postings(
        self, term_id: int
    ) -> tuple[np.ndarray | Callable[[], np.ndarray], np.ndarray, int | None, float | None, int]:
        """(the documents or what decodes them, impacts as stored, the id to read them by from
        ``posting_source``, the impacts' step, the number of postings): nothing decoded or
        converted, the kernels read the list in place (a segment set's merged lists are its
        own: documents decoded, float32 impacts, no id, no step)."""
        start, end = self.posting_range(term_id)
        levels = self.arrays["post_impacts"][start:end]
        scale = float(self.arrays["impact_scale"][term_id])
        return partial(self.posting_docs, term_id), levels, term_id, scale, end - start

    @cached_property
    def posting_source(self) -> PostingSource:
        """The postings as the compiled top-k reads them, with each list's block maxima
        (derived when the segment opens)."""
        return PostingSource.of(self.doc_blocks, self.arrays["post_impacts"], self.arrays["impact_scale"])

    def posting_range(self, term_id: int) -> tuple[int, int]:
        offsets = self.arrays["post_offsets"]
        return int(offsets[term_id]), int(offsets[term_id + 1])

    def locate(self, term_id: int, docs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For ``docs`` (ascending): whether each holds the term, and its posting number (the
        handle ``field_tfs``, ``field_tfs_many``, ``positions`` and ``posting_impacts`` take;
        meaningful where it holds it)."""
        start, end = self.posting_range(term_id)
        docs = np.asarray(docs)
        if end == start or not docs.shape[0]:
            return np.zeros(docs.shape[0], dtype=bool), np.zeros(docs.shape[0], dtype=np.int64)
        if docs.shape[0] * 32 < end - start:  # a few in a long list: only their blocks read
            found, where = self.doc_blocks.locate(term_id, docs)
            return found, start + where
        held = self.posting_docs(term_id)
        at = np.minimum(np.searchsorted(held, docs), held.shape[0] - 1)
        return held[at] == docs, start + at.astype(np.int64)

    def term_impacts(
        self, term_ids: Sequence[int] | np.ndarray, docs: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """(whether each of ``docs`` (ascending) holds each term, its impact there: float32, 0
        where it does not), one row per term: a few documents looked up in several lists in
        one compiled call, only the block each would be in read (a feedback query's pool)."""
        terms = np.asarray(term_ids, dtype=np.int64)
        held, _, levels = self.doc_blocks.locate_terms(terms, docs, self.arrays["post_impacts"])
        return held, dequantize(levels, self.arrays["impact_scale"][terms][:, None])  # 0: not held

    def posting_impacts(self, postings: np.ndarray) -> np.ndarray:
        """The impacts (float32) of posting numbers ``postings`` (``locate``), each in its
        term's steps (the term found by the posting number)."""
        postings = np.asarray(postings, dtype=np.int64)
        terms = np.searchsorted(self.arrays["post_offsets"], postings, side="right") - 1
        return dequantize(self.arrays["post_impacts"][postings], self.arrays["impact_scale"][terms])

    def form_shares(self, docs: np.ndarray, pairs: np.ndarray) -> np.ndarray:
        """The share of the forms hashed to ``pairs`` each of ``docs`` (probably) holds
        (``services.text.analysis.forms.held_shares``)."""
        offsets = self.arrays["form_offsets"]
        return held_shares(self.arrays["form_filters"], offsets[:-1], offsets[1:], docs, pairs)

    def site_name_holds(self, term_ids: Sequence[int], docs: np.ndarray) -> np.ndarray:
        """Whether one of ``term_ids`` is in the site name of each of ``docs``: a running count
        of the site-name entries that are one of them, read at each document's range (no loop
        over the documents)."""
        offsets, names = self.arrays["site_name_offsets"], self.arrays["site_name_terms"]
        if names.shape[0] == 0:
            return np.zeros(docs.shape[0], dtype=bool)
        seen = np.concatenate([[0], np.cumsum(np.isin(names, np.asarray(term_ids, dtype=names.dtype)))])
        starts, ends = offsets[docs].astype(np.int64), offsets[docs.astype(np.int64) + 1].astype(np.int64)
        found: np.ndarray = seen[ends] > seen[starts]
        return found

    def field_tfs(self, field: str, postings: np.ndarray) -> np.ndarray:
        """The ``field`` frequency (title, body, anchor, url, meta, nav) of global posting
        numbers ``postings`` (uint16), decoded from their packed blocks."""
        return field_tfs(self.arrays, field, postings)

    def field_tfs_many(self, fields: Sequence[str], postings: np.ndarray) -> list[np.ndarray]:
        """``field_tfs`` of several fields at once (the postings' blocks found once), uint32."""
        return field_tfs_many(self.arrays, fields, postings)

    def field_tfs_of(self, field: str, term_id: int) -> np.ndarray:
        """The ``field`` frequency of each of the term's postings (``postings``'s order)."""
        start, end = self.posting_range(term_id)
        return field_tfs_range(self.arrays, field, start, end)

    def positions(self, postings: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(positions per posting, the positions concatenated) of global posting numbers
        ``postings``: the title + body positions, ascending per posting."""
        return position_lists(self.arrays, postings)

    def forward(self, docs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The forward index of ``docs``: (entries of each, their term ids (ascending per
        document) and title + body + meta frequencies, concatenated in ``docs``' order)."""
        return forward_lists(self.arrays, docs)

    def max_impact(self, term_id: int) -> float:
        return float(self.arrays["max_impact"][term_id])

    def prior(self, weight: float) -> np.ndarray:
        """``weight * s / (s + 1)`` per document (``services.search.retrieval.rank``), cached per weight."""
        return self._prior(weight)[0]

    def max_prior(self, weight: float) -> float:
        """The largest ``prior(weight)``: MaxScore's bound, not recomputed over N per query."""
        return self._prior(weight)[1]

    def _prior(self, weight: float) -> tuple[np.ndarray, float]:
        cached = self._priors.get(weight)
        if cached is None:
            prior = pagerank_prior(self.pagerank, self.num_docs) * weight
            cached = self._priors[weight] = (prior, float(prior.max()) if prior.shape[0] else 0.0)
        return cached

    @cached_property
    def _priors(self) -> dict[float, tuple[np.ndarray, float]]:
        return {}
