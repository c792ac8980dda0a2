"""A segment's stored arrays from its postings given a term range at a time: pure (no I/O).

A full build (``segment_stream``, from MRIndex's output) and a merge (``segment_merge``, from
the parts' stored arrays) both make a segment too large to hold expanded: every posting's
field frequencies, positions, sort keys and plain columns at once took 26-29 GB per million
stored documents in a build, 43 GB in a merge (docs/benchmarks.md, "Issue 31: merge memory",
"Issue 31: a like-for-like million"). Both hand their postings here in term order, a range
at a time: each range is checked, scored with the collection's statistics
(``segment_arrays.posting_scores``: per term and per posting, so a range scores as the whole
does) and packed at once (``segment_codec.PostingsPacker``, the bytes ``compact_segment``
writes). What is held whole is the output (documents, impacts, packed columns), the title
and title + body frequencies (2 bytes a posting each, for the site names and the forward
index), and the forward index while near-duplicates are folded. ``finish`` gives every stored
array in ``compact_segment``'s order, so the segment is the one a build of plain arrays
stores, byte for byte, whatever the ranges.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np

from services.indexing.index_rows import IndexColumns
from services.indexing.segment_arrays import (
    check_postings,
    entry_page_arrays,
    form_arrays,
    forward_index,
    length_arrays,
    near_duplicates_of,
    offsets_of,
    posting_scores,
    term_arrays,
    title_body_tfs,
    vocabulary_arrays,
)
from services.malloc import give_back_freed_memory
from services.ranking.bm25f import DEFAULT_PARAMS, FIELD_NAMES, BM25FParams, average_lengths
from services.ranking.impact_levels import LEVEL_DTYPE
from services.storage.formats.doc_blocks import pack_docs
from services.storage.formats.forward_index import compact_forward
from services.storage.formats.segment import TF_FIELDS
from services.storage.formats.segment_codec import PostingsPacker


class PostingStream:
    """Postings in, a term range at a time (``add``), in term order; the stored arrays out
    (``finish``). ``lengths``: each field's length of each document, (fields, documents), the
    collection's: the average field lengths, and so every impact, are the whole's."""

    def __init__(self, lengths: np.ndarray, num_docs: int, params: BM25FParams = DEFAULT_PARAMS) -> None:
        self.lengths = lengths
        self.num_docs = num_docs
        self.params = params
        self._averages = average_lengths(list(lengths))
        self._terms: list[bytes] = []
        self._dfs: list[np.ndarray] = []
        self._idfs: list[np.ndarray] = []
        self._bounds: list[np.ndarray] = []
        self._scales: list[np.ndarray] = []
        self._docs: list[np.ndarray] = []
        self._impacts: list[np.ndarray] = []
        self._titles: list[np.ndarray] = []
        self._title_bodies: list[np.ndarray] = []
        self._packer = PostingsPacker()
        # The packing of one range's positions at a time on a thread of its own, beside its
        # frequencies' packing and its scoring here (numpy releases the GIL): packing was two
        # thirds of this thread's work while the decoding helper sat idle (docs/benchmarks.md,
        # stop 43). One range in flight at most, so the memory held is one range's more.
        self._pack_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pack")
        self._packing: Future[None] | None = None

    def add(
        self,
        terms: Sequence[bytes],
        per_term: np.ndarray,
        docs: np.ndarray,
        field_tfs: np.ndarray,
        pos_counts: np.ndarray,
        positions: np.ndarray,
    ) -> None:
        """The postings of ``terms`` (the next ones in byte order; ``per_term`` postings each):
        their documents (ascending per term), field frequencies (postings x ``FIELD_NAMES``),
        number of positions and positions concatenated."""
        df = np.asarray(per_term).astype(np.uint32)
        post_offsets = offsets_of(df)
        check_postings(docs, post_offsets, self.num_docs)
        tfs = [np.ascontiguousarray(field_tfs[:, f]) for f in range(len(FIELD_NAMES))]
        self._wait_for_packing()
        fields = dict(zip(TF_FIELDS, tfs, strict=True))
        self._packing = self._pack_pool.submit(self._packer.add_positions, fields, pos_counts, positions)
        # The packer's other half here meanwhile. An error from here on leaves this range's
        # packing running; the stream is then abandoned, and its thread ends with the pool.
        self._packer.add_frequencies(fields)
        idf, post_impacts, scales, max_impact = posting_scores(
            df, post_offsets, docs, tfs, self.lengths, self.num_docs, self.params, self._averages
        )
        self._terms.extend(terms)
        self._dfs.append(df)
        self._idfs.append(idf.astype(np.float32))
        self._bounds.append(max_impact)
        self._scales.append(scales)
        self._docs.append(np.asarray(docs, dtype=np.uint32))
        self._impacts.append(post_impacts)
        self._titles.append(tfs[FIELD_NAMES.index("title")])
        self._title_bodies.append(title_body_tfs(tfs))

    def finish(
        self,
        cols: IndexColumns,
        pagerank: np.ndarray,
        links: Mapping[str, np.ndarray],
        *,
        url_kinds: np.ndarray | None = None,
        doc_hosts: np.ndarray | None = None,
        near_duplicates: bool = True,
    ) -> dict[str, np.ndarray]:
        """Every stored array, in ``compact_segment``'s order (what ``publish`` writes):
        ``cols``' word forms and vocabulary, ``pagerank`` as stored (``pagerank_array``),
        ``links`` (``link_arrays``), the entry pages (``entry_page_arrays``) and the
        forward index and near-duplicates of the postings added. The stream is spent."""
        try:
            self._wait_for_packing()
        finally:
            self._pack_pool.shutdown()
        give_back_freed_memory()  # the packing thread's arena, before the build's peak
        num_docs = self.num_docs
        df = joined(self._dfs, np.uint32)
        post_offsets = offsets_of(df)
        post_docs = joined(self._docs, np.uint32)
        titles = joined(self._titles, np.uint16)
        postings = {"post_offsets": post_offsets, "post_docs": post_docs, "tf_title": titles}
        entry_pages = entry_page_arrays(postings, num_docs, url_kinds, doc_hosts)
        del postings, titles  # the title frequencies, before the forward index is made
        fwd_offsets, fwd_terms, fwd_tfs = forward_index(
            post_docs, post_offsets, joined(self._title_bodies, np.uint16), num_docs
        )
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="fold") as helper:
            # Folding (the longest step left) beside the forward index's packing: numpy
            # releases the GIL, and both only read the forward index. What else could run
            # beside it waits: the documents' blocks and the packed columns' joins, their
            # arrays beside the fold's raised the build's peak by 75-115 MB at 100,000
            # documents for a tenth of a second (docs/benchmarks.md, stop 42).
            near_job = helper.submit(
                near_duplicates_of, fwd_offsets, fwd_terms, fwd_tfs, self._terms, num_docs, near_duplicates
            )
            forward = compact_forward(fwd_offsets, fwd_terms, fwd_tfs)
            near_dup_of = near_job.result()
        del fwd_terms, fwd_tfs
        term_offsets, term_bytes = term_arrays(self._terms)
        self._terms = []
        return {
            "term_bytes": term_bytes,
            "term_offsets": term_offsets,
            "df": df,
            "idf": joined(self._idfs, np.float32),
            "max_impact": joined(self._bounds, np.float32),
            "impact_scale": joined(self._scales, np.float32),
            "post_offsets": post_offsets,
            "post_impacts": joined(self._impacts, LEVEL_DTYPE),
            **length_arrays(self.lengths),
            "fwd_offsets": fwd_offsets,
            "near_dup_of": near_dup_of,
            **form_arrays(cols.forms, num_docs),
            **vocabulary_arrays(cols.vocabulary),
            "pagerank": pagerank,
            **links,
            **entry_pages,
            **self._packer.finish(),
            **forward,
            **pack_docs(post_docs, post_offsets),
        }

    def _wait_for_packing(self) -> None:
        """The last range's packing done (its error, if it failed, raised here)."""
        if self._packing is not None:
            packing, self._packing = self._packing, None
            packing.result()


def joined(chunks: list[np.ndarray], dtype: type | np.dtype) -> np.ndarray:
    """The chunks one after another (an empty array of ``dtype`` for none), freeing each."""
    out: np.ndarray = np.concatenate(chunks).astype(dtype, copy=False) if chunks else np.zeros(0, dtype=dtype)
    chunks.clear()
    return out
