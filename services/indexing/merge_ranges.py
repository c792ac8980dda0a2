"""The merged postings of segments, a term range at a time: pure (no I/O).

``segment_merge`` folds a base segment and a delta into one. Holding every posting of every
part at once (their field frequencies, positions and the sort keys) took about 14 times the
stored segment (docs/benchmarks.md, "Issue 31: merge memory"); here the merged vocabulary is
cut into ranges of about ``POSTINGS_PER_RANGE`` postings and each range is read from each
part (``posting_runs``: a stored part decodes only that range's rows), filtered by the part
that speaks for each document, and merged, as Lucene and tantivy merge segments term by
term. Terms are in byte order and each part's terms map to the merged ones in order, so the
ranges, one after another, are the merged postings in order: what one pass over all of them
gives, range by range.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from mapreduce.postings_wire import TF_MAX
from services.ranking.bm25f import FIELD_NAMES
from services.storage.formats.doc_blocks import DocBlocks
from services.storage.formats.posting_runs import is_stored, posting_run

# Postings (over all parts) per term range: bounds the range's decoded columns and
# temporaries (a few hundred bytes a posting with its positions) to a few hundred MB.
POSTINGS_PER_RANGE = 1 << 20


@dataclass(frozen=True)
class TermUnion:
    """The parts' terms merged (byte order) and, per part, each of its terms' merged id."""

    terms: list[bytes]
    ids: list[np.ndarray]  # int64, ascending (a part's terms are in byte order too)


@dataclass(frozen=True)
class MergedRange:
    """The merged postings of terms ``first .. first + len(per_term) - 1`` (merged ids): the
    postings of each term (0 for a term only superseded postings held), their documents,
    field frequencies (``FIELD_NAMES`` columns), number of positions and positions."""

    first: int
    per_term: np.ndarray  # int64
    docs: np.ndarray  # uint32, ascending per term
    field_tfs: np.ndarray  # (postings, fields) uint16
    pos_counts: np.ndarray  # int64
    positions: np.ndarray  # uint32


def term_union(term_lists: Sequence[list[bytes]]) -> TermUnion:
    """The merged vocabulary of the parts' (each sorted by bytes)."""
    merged = sorted(set().union(*term_lists))
    ids = {term: i for i, term in enumerate(merged)}
    return TermUnion(
        merged,
        [np.fromiter((ids[t] for t in terms), dtype=np.int64, count=len(terms)) for terms in term_lists],
    )


def term_ranges(
    offsets: Sequence[np.ndarray], union: TermUnion, budget: int = POSTINGS_PER_RANGE
) -> list[tuple[int, int]]:
    """Merged term ranges ``[first, end)`` of about ``budget`` postings over the parts
    (``offsets``: each part's post_offsets); a term above the budget is a range of its own."""
    per_term = np.zeros(len(union.terms), dtype=np.int64)
    for ids, part_offsets in zip(union.ids, offsets, strict=True):
        np.add.at(per_term, ids, np.diff(np.asarray(part_offsets).astype(np.int64)))
    ends = np.cumsum(per_term)
    total = int(ends[-1]) if ends.shape[0] else 0
    cuts = np.searchsorted(ends, np.arange(budget, total, max(budget, 1)), side="left") + 1
    edges = np.unique(np.concatenate([[0], cuts, [len(union.terms)]])).tolist()
    return list(zip(edges[:-1], edges[1:], strict=True))


def merged_ranges(
    parts: Sequence[Mapping[str, np.ndarray]],
    owner: np.ndarray,
    graph: int | None,
    union: TermUnion,
    budget: int = POSTINGS_PER_RANGE,
) -> Iterator[MergedRange]:
    """The merged postings, range after range (``term_ranges``), of ``parts`` (plain or
    stored arrays): each document's postings from the part that speaks for it (``owner``:
    the part per document, -1 none), its anchor text from the ``graph`` part if any."""
    offsets = [np.asarray(a["post_offsets"]) for a in parts]
    blocks = [DocBlocks.of(a) if is_stored(a) else None for a in parts]
    for first, end in term_ranges(offsets, union, budget):
        yield merge_range(parts, offsets, owner, graph, union, first, end, blocks)


def merge_range(
    parts: Sequence[Mapping[str, np.ndarray]],
    offsets: Sequence[np.ndarray],
    owner: np.ndarray,
    graph: int | None,
    union: TermUnion,
    first: int,
    end: int,
    blocks: Sequence[DocBlocks | None] | None = None,
) -> MergedRange:
    """The merged postings of merged terms ``first .. end - 1`` (``merged_ranges``)."""
    anchor = FIELD_NAMES.index("anchor")
    num_docs = owner.shape[0]
    terms, docs, tfs, pos_parts, pos_lengths = [], [], [], [], []
    for i, arrays in enumerate(parts):
        ids = union.ids[i]
        lo_term, hi_term = np.searchsorted(ids, [first, end]).tolist()
        part_offsets = offsets[i]
        run = posting_run(arrays, lo_term, hi_term, blocks[i] if blocks else None)
        df: np.ndarray = np.asarray(part_offsets[lo_term : hi_term + 1]).astype(np.int64)
        df = df[1:] - df[:-1]
        post_docs = run.docs.astype(np.int64)
        text = owner[post_docs] == i if post_docs.shape[0] else np.zeros(0, bool)
        part_tfs = run.field_tfs.copy()
        part_tfs[~text] = 0  # what another part speaks for is superseded here
        if graph is not None:  # the anchor field from the graph part alone, for every document
            part_tfs[:, anchor] = run.field_tfs[:, anchor] if i == graph else 0
            if i == graph and post_docs.shape[0]:
                # No part speaks for it (gone; committed after what the merge read): no anchor
                # text either, or it would be found by its in-links alone.
                part_tfs[owner[post_docs] < 0, anchor] = 0
        keep = part_tfs.any(axis=1)
        terms.append(ids[lo_term:hi_term][np.repeat(np.arange(df.shape[0]), df)[keep]])
        docs.append(post_docs[keep].astype(np.uint32))
        tfs.append(part_tfs[keep])
        # Positions (title and body) come with the text: none from a part's anchor-only share.
        starts = (np.cumsum(run.pos_counts) - run.pos_counts)[keep]
        lengths = np.where(text, run.pos_counts, 0)[keep]
        pos_parts.append(gather(run.positions, starts, lengths))
        pos_lengths.append(lengths)
        del run, post_docs, part_tfs

    term_col = np.concatenate(terms)
    doc_col = np.concatenate(docs)
    # By term, then document: the postings' order. Each part's postings are in that order
    # already (its term ids map to the merged ones in order), so a stable sort of one key
    # merges a few sorted runs, in about linear time (lexsort of two keys took seconds).
    order = np.argsort((term_col - first) * max(num_docs, 1) + doc_col.astype(np.int64), kind="stable")
    term_col, doc_col = term_col[order], doc_col[order]
    field_tfs = np.concatenate(tfs)[order]
    per_posting = np.concatenate(pos_lengths)
    flat = np.concatenate(pos_parts)
    flat_starts = np.cumsum(per_posting) - per_posting
    positions = gather(flat, flat_starts[order], per_posting[order])
    per_posting = per_posting[order]
    del flat, flat_starts, order
    # One posting per (term, document): a document's text from its owner and its anchor text
    # from the graph part are two rows until here; their fields are disjoint, so they add.
    if term_col.shape[0]:
        firsts = np.flatnonzero(
            np.concatenate([[True], (term_col[1:] != term_col[:-1]) | (doc_col[1:] != doc_col[:-1])])
        )
        if firsts.shape[0] != term_col.shape[0]:
            field_tfs = np.add.reduceat(field_tfs.astype(np.uint32), firsts, axis=0)
            field_tfs = np.minimum(field_tfs, TF_MAX).astype(np.uint16)
            per_posting = np.add.reduceat(per_posting, firsts)
            term_col, doc_col = term_col[firsts], doc_col[firsts]
    per_term = np.bincount(term_col - first, minlength=end - first)
    return MergedRange(first, per_term, doc_col, field_tfs, per_posting.astype(np.int64), positions)


def gather(values: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``values[starts[i]:starts[i]+lengths[i]]`` for every i, concatenated (no Python loop)."""
    total = int(lengths.sum())
    if not total:
        return np.zeros(0, dtype=values.dtype)
    run_starts = np.cumsum(lengths) - lengths
    index = np.repeat(starts - run_starts, lengths) + np.arange(total, dtype=np.int64)
    return np.asarray(values[index])
