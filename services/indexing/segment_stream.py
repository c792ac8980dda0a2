"""A full build's segment from MRIndex's output, a term range at a time: the stored arrays
``segment_arrays`` + ``compact_segment`` give, byte for byte, without their peak.

``segment_arrays`` decodes every term's postings at once (the job's whole output in base64,
then every posting's documents, field frequencies, positions and scores, then their packed
form beside them): 26-29 GB per million stored documents, the build's limit on a 24 GB machine
(docs/benchmarks.md, "Issue 31: a like-for-like million"). Here the job's output is read for
its terms' places only (``index_rows.index_columns``; a map-only job's pieces:
``job_pieces.piece_columns``), and the terms, in byte order, are
decoded a range of about ``RANGE_BYTES`` of postings text at a time and handed to
``posting_stream`` (scored with the collection's statistics and packed at once), the next
range decoded on a helper thread meanwhile. Deltas (small) still use ``segment_arrays``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from services.indexing.errors import PublishError
from services.indexing.index_rows import IndexColumns, TermSource
from services.indexing.posting_stream import PostingStream
from services.indexing.segment_arrays import field_lengths, link_arrays, pagerank_array
from services.ranking.bm25f import DEFAULT_PARAMS, BM25FParams

# Postings text (base64) per range: about 0.9 M postings with their positions here (~19
# bytes a posting), so a range's decoded columns and temporaries stay a few hundred MB.
RANGE_BYTES = 1 << 24


@dataclass(frozen=True)
class DecodedRange:
    """Terms ``lo .. hi - 1`` of the job's output, decoded."""

    lo: int
    hi: int
    per_term: np.ndarray  # int64
    docs: np.ndarray  # uint32
    field_tfs: np.ndarray  # (postings, fields) uint16
    pos_counts: np.ndarray
    positions: np.ndarray  # uint32


def decode_range(terms: TermSource, lo: int, hi: int) -> DecodedRange:
    """The postings of terms ``lo .. hi - 1``, read from the job's files and decoded."""
    return DecodedRange(lo, hi, *terms.postings(lo, hi))


def decoded_ranges(terms: TermSource, budget: int = RANGE_BYTES) -> Iterator[DecodedRange]:
    """Every range of ``terms`` decoded, in order, the next one on a helper thread while the
    caller works on this one (two ranges decoded at most)."""
    ranges = terms.ranges(budget)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="decode") as helper:
        pending: Future[DecodedRange] | None = (
            helper.submit(decode_range, terms, *ranges[0]) if ranges else None
        )
        for i in range(len(ranges)):
            assert pending is not None
            current = pending.result()
            pending = helper.submit(decode_range, terms, *ranges[i + 1]) if i + 1 < len(ranges) else None
            yield current


def streamed_segment(
    terms: TermSource,
    cols: IndexColumns,
    pagerank: np.ndarray,
    num_docs: int,
    params: BM25FParams = DEFAULT_PARAMS,
    *,
    near_duplicates: bool = True,
    links: Mapping[int, Sequence[int]] | None = None,
    url_kinds: np.ndarray | None = None,
    doc_hosts: np.ndarray | None = None,
    range_bytes: int = RANGE_BYTES,
    progress: Callable[[str], None] | None = None,
) -> dict[str, np.ndarray]:
    """The stored arrays (``publish_segment(..., packed=True)``) of a build: what
    ``compact_segment(segment_arrays(...))`` gives for the same job output (``terms`` and
    ``cols``, from ``index_columns``) and arguments, byte for byte. ``progress``: told the
    share of the postings done, each tenth or so, and when the per-document work starts."""
    if len(pagerank) != num_docs:
        raise PublishError(f"PageRank vector has {len(pagerank)} entries for {num_docs} documents")
    stream = PostingStream(field_lengths(cols, num_docs), num_docs, params)
    total = max(1, int(terms.sizes.sum()))
    done = told = 0
    for part in decoded_ranges(terms, range_bytes):
        stream.add(
            terms.terms[part.lo : part.hi],
            part.per_term,
            part.docs,
            part.field_tfs,
            part.pos_counts,
            part.positions,
        )
        done += int(terms.sizes[part.lo : part.hi].sum())
        if progress is not None and done * 10 // total > told:
            told = done * 10 // total
            progress(
                f"    postings scored and packed: {done * 100 // total} % "
                f"({part.hi} of {len(terms.terms)} terms)"
            )
        del part
    if progress is not None:
        progress("    forward index, entry pages and near-duplicates")
    return stream.finish(
        cols,
        pagerank_array(pagerank),
        link_arrays(links or {}, num_docs),
        url_kinds=url_kinds,
        doc_hosts=doc_hosts,
        near_duplicates=near_duplicates,
    )
