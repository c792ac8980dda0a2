"""Merge index segments into one, scoring as a full build would: pure (no I/O).

An incremental update (``services.indexing.incremental``) indexes only the documents
committed since the active version, as a *delta* segment, and merges it with the active
segment. Each part speaks for a set of documents (``SegmentPart.docs``); a later part
supersedes what earlier parts held for the same document (a recrawled page's old
postings are dropped, never shown), as Lucene's segments mark a replaced document
deleted in the older segment.

The collection statistics are *recomputed* over all live documents, not carried over:
the merged postings, field frequencies and field lengths go through the same code a
full build uses (``segment_arrays.arrays_from_postings``), so document frequencies, idf,
average field lengths, impacts, the pruning bounds, the forward index and near-duplicate
folding are exactly those of a full build over the same documents' records. What a
merge cannot know until the next full build (docs/architecture.md, "Incremental
index"): anchor text and in-links from pages of one part to pages of another, PageRank
(the caller passes the vector), and forms that are in one document of each part (the
spelling vocabulary keeps forms in two or more documents; each part dropped its own
single-document forms).

The postings are merged a term range at a time (``merge_ranges``), from the base as it is
stored (mapped, never expanded), and scored and packed as they come (``posting_stream``, as a
full build's are): what a merge holds at once is the output, a few bytes a posting, and one
range's work (docs/benchmarks.md, "Issue 31: merge memory").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from services.indexing.errors import PublishError
from services.indexing.index_rows import IndexColumns
from services.indexing.merge_ranges import POSTINGS_PER_RANGE, merged_ranges, term_union
from services.indexing.posting_stream import PostingStream
from services.indexing.segment_arrays import edge_arrays, field_lengths, pagerank_array
from services.ranking.bm25f import DEFAULT_PARAMS, FIELD_NAMES, BM25FParams
from services.storage.formats.segment import SEGMENT_FORMAT


@dataclass(frozen=True)
class SegmentPart:
    """A segment's arrays and the documents it speaks for (doc numbers)."""

    arrays: Mapping[str, np.ndarray]
    docs: np.ndarray
    # Its link graph is the whole collection's (an update's link job reads every record):
    # then its anchor text and links stand for every document, whichever part has its text.
    whole_graph: bool = False

    @property
    def num_docs(self) -> int:
        return int(self.arrays["doc_lengths"].shape[0])


def check_mergeable(metas: Sequence[Mapping[str, Any]]) -> None:
    """Refuse to merge segments of another format, analyzer or ranking: their terms or their
    fields would not mean the same (a full build is the way across such a change)."""
    for key, want in (("format", SEGMENT_FORMAT), ("analyzer", None), ("bm25f", None)):
        values = {repr(m.get(key)) for m in metas}
        if want is not None:
            values.add(repr(want))
        if len(values) > 1:
            raise PublishError(
                f"segments differ in {key} ({', '.join(sorted(values))}): they cannot be merged; "
                "run a full build (`nimbus index`)"
            )


def owners(parts: Sequence[SegmentPart], num_docs: int) -> np.ndarray:
    """The part that speaks for each document (-1: none), later parts winning."""
    owner = np.full(num_docs, -1, dtype=np.int32)
    for i, part in enumerate(parts):
        docs = np.asarray(part.docs, dtype=np.int64)
        if docs.shape[0] and (int(docs.min()) < 0 or int(docs.max()) >= min(num_docs, part.num_docs)):
            raise PublishError(
                f"segment part {i} speaks for doc_num {int(docs.max())}, outside its "
                f"{part.num_docs} documents or the merged {num_docs}"
            )
        owner[docs] = i
    return owner


def merge_segments(
    parts: Sequence[SegmentPart],
    num_docs: int,
    pagerank: np.ndarray,
    params: BM25FParams = DEFAULT_PARAMS,
    *,
    near_duplicates: bool = True,
    removed: np.ndarray | None = None,
    url_kinds: np.ndarray | None = None,
    doc_hosts: np.ndarray | None = None,
    range_postings: int = POSTINGS_PER_RANGE,
    release: Callable[[], None] | None = None,
) -> dict[str, np.ndarray]:
    """One segment's stored arrays (``segment_codec.compact_segment``'s form, in its order:
    what ``publish`` stores) holding each document as its owning part has it; ``removed``
    documents (gone, noindex) are left out whatever a part holds of them. ``url_kinds`` and
    ``doc_hosts``: as a build passes them (``segment_arrays``), for the entry pages and site
    names, recomputed over the merged postings.

    The parts' arrays may be plain or stored (a base as ``open_segment`` maps it): the
    postings are read, scored and packed a term range of about ``range_postings`` at a time
    (``merge_ranges``); what is held whole is per document, per term, or a few bytes a posting
    (documents, impacts, title frequencies, the forward index), not the parts' expanded
    columns. ``release``: called after each range (the caller drops the pages of a mapped
    part it read: ``segment.release_pages``)."""
    owner = owners(parts, num_docs)
    if removed is not None and removed.shape[0]:
        owner[np.asarray(removed, dtype=np.int64)] = -1
    graph = _graph_part(parts)
    cols = _columns(parts, owner, graph)
    stream = PostingStream(field_lengths(cols, num_docs), num_docs, params)
    union = term_union([_terms(part.arrays) for part in parts])
    for merged in merged_ranges([p.arrays for p in parts], owner, graph, union, range_postings):
        present = np.flatnonzero(merged.per_term)  # a term only superseded versions held is gone
        stream.add(
            [union.terms[merged.first + t] for t in present.tolist()],
            merged.per_term[present],
            merged.docs,
            merged.field_tfs,
            merged.pos_counts,
            merged.positions,
        )
        del merged
        if release is not None:
            release()
    return stream.finish(
        cols,
        pagerank_array(pagerank),
        _links(parts, owner, num_docs, graph),
        url_kinds=url_kinds,
        doc_hosts=doc_hosts,
        near_duplicates=near_duplicates,
    )


def merged_languages(metas: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """Pages of each analysis over the parts (a recrawled page counts in each part that had
    it until the next full build: a figure for choosing query analyses, not a count)."""
    total: dict[str, int] = {}
    for meta in metas:
        for lang, pages in meta.get("languages", {}).items():
            total[lang] = total.get(lang, 0) + int(pages)
    return total


def _graph_part(parts: Sequence[SegmentPart]) -> int | None:
    """The last part whose link graph is the whole collection's, if any."""
    found = [i for i, part in enumerate(parts) if part.whole_graph]
    return found[-1] if found else None


def _terms(arrays: Mapping[str, np.ndarray]) -> list[bytes]:
    blob = arrays["term_bytes"].tobytes()
    offsets = arrays["term_offsets"].tolist()
    return [blob[offsets[i] : offsets[i + 1]] for i in range(len(offsets) - 1)]


def _runs(offsets: np.ndarray) -> np.ndarray:
    """Run lengths (int64) from CSR offsets."""
    wide = offsets.astype(np.int64)
    out: np.ndarray = wide[1:] - wide[:-1]
    return out


def _columns(parts: Sequence[SegmentPart], owner: np.ndarray, graph: int | None) -> IndexColumns:
    """Each document's field lengths and word-form filter from its owning part (its anchor
    text's length from the graph part, if any), and the spelling vocabulary summed over the
    parts."""
    cols = IndexColumns()
    num_docs = owner.shape[0]
    lengths = np.zeros((num_docs, len(FIELD_NAMES)), dtype=np.int64)
    for i, part in enumerate(parts):
        a = part.arrays
        mine = np.flatnonzero(owner[: part.num_docs] == i)
        lengths[mine] = np.stack([a[f"len_{name}"][mine] for name in FIELD_NAMES], axis=1)
    if graph is not None:
        anchors = parts[graph].arrays["len_anchor"]
        lengths[:, FIELD_NAMES.index("anchor")] = 0
        lengths[: anchors.shape[0], FIELD_NAMES.index("anchor")] = anchors
        lengths[owner < 0, FIELD_NAMES.index("anchor")] = 0  # as its postings (merge_segments)
    held = np.flatnonzero((owner >= 0) | lengths.any(axis=1))
    cols.lengths.update(zip(held.tolist(), lengths[held].tolist(), strict=True))
    for i, part in enumerate(parts):
        a = part.arrays
        mine = np.flatnonzero(owner[: part.num_docs] == i)
        offsets = a["form_offsets"]
        blob = a["form_filters"]
        for doc in mine.tolist():
            start, end = int(offsets[doc]), int(offsets[doc + 1])
            if end > start:
                cols.forms[doc] = blob[start:end].tobytes()
        raw = a["vocab_bytes"].tobytes()
        vocab_offsets = a["vocab_offsets"].tolist()
        for j, held in enumerate(a["vocab_df"].tolist()):
            form = raw[vocab_offsets[j] : vocab_offsets[j + 1]].decode("utf-8")
            cols.vocabulary[form] = cols.vocabulary.get(form, 0) + held
    return cols


def _links(
    parts: Sequence[SegmentPart], owner: np.ndarray, num_docs: int, graph: int | None
) -> dict[str, np.ndarray]:
    """The link graph: the graph part's, or else each part's links *from* the documents it
    speaks for (a page's links are its current record's), to any document of the merge."""
    sources, targets = [], []
    for i, part in enumerate(parts):
        if graph is not None and i != graph:
            continue
        a = part.arrays
        counts = _runs(a["in_offsets"])
        target = np.repeat(np.arange(counts.shape[0]), counts)
        source = a["in_docs"].astype(np.int64)
        keep = (owner[source] == i) | (graph == i) if source.shape[0] else np.zeros(0, bool)
        sources.append(source[keep])
        targets.append(target[keep])
    return edge_arrays(
        np.concatenate(sources) if sources else np.zeros(0, np.int64),
        np.concatenate(targets) if targets else np.zeros(0, np.int64),
        num_docs,
    )
