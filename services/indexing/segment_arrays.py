"""The segment's arrays from the index columns, PageRank and the link graph: pure (no I/O).

The arrays are the segment contract (``services.storage.formats.segment.SEGMENT_ARRAYS``:
names, dtypes, lengths and meaning, written once there); ``publish.publish_segment``
checks a segment against it before storing it.

The BM25F parameters the impacts were computed with are in the meta
(``bm25f``), so a reader can tell which ranking a segment carries; so are the
analyzer's version (``analyzer``: search refuses a segment whose terms its own
analyzer would not produce) and the pages of each analysis (``languages``: a query
of unknown language is analyzed in the index's common ones).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from mapreduce.postings_wire import NUM_FIELDS, TF_MAX, read_regions
from services.indexing.errors import PublishError
from services.indexing.index_rows import IndexColumns
from services.ranking.bm25f import (
    DEFAULT_PARAMS,
    FIELD_NAMES,
    BM25FParams,
    CollectionStats,
    bm25_idf,
    impacts,
)
from services.ranking.entry_pages import UrlKind, site_names
from services.ranking.impact_levels import impact_scales, quantize, term_maxima
from services.storage.formats.segment import SEGMENT_FORMAT
from services.text.analysis.analyze import analyzer_version
from services.text.analysis.minhash import near_duplicate_groups, signatures, term_rows


def segment_arrays(
    cols: IndexColumns,
    pagerank: np.ndarray,
    num_docs: int,
    params: BM25FParams = DEFAULT_PARAMS,
    *,
    near_duplicates: bool = True,
    links: Mapping[int, Sequence[int]] | None = None,
    url_kinds: np.ndarray | None = None,
    doc_hosts: np.ndarray | None = None,
    stats: CollectionStats | None = None,
) -> dict[str, np.ndarray]:
    """The segment's arrays (the contract in ``services.storage.formats.segment``) from the index
    columns, the PageRank vector, the link graph (``doc -> targets``; none: no links) and
    each document's URL form (``services.ranking.entry_pages.url_kinds``; none: every
    document a PATH, no entry pages) and host id (none: every document a host of its own).

    ``stats``: the collection the impacts are scored against when the columns are only part
    of it (a delta segment); its ``idf`` and ``max_impact`` are then the collection's, and
    ``pagerank`` is stored as given (a prior per document, not renormalised). None: the
    columns are the collection (a build)."""
    if len(pagerank) != num_docs:
        raise PublishError(f"PageRank vector has {len(pagerank)} entries for {num_docs} documents")
    sorted_terms = sorted(cols.chunks)  # by UTF-8 bytes
    try:
        regions = read_regions([cols.chunks[t] for t in sorted_terms])
        post_docs, field_tfs, counts = regions.docs(), regions.tfs(), regions.counts()
    except ValueError as exc:  # also binascii.Error
        raise PublishError(
            f"MRIndex postings cannot be read ({exc}): job and publisher "
            "disagree, or the job output is truncated"
        ) from exc
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="publish") as helper:
        # The positions (and their offsets) on a second thread while this one scores the
        # postings: numpy releases the GIL, and publish otherwise leaves a core idle. Two
        # helpers: near-duplicate folding, the longest of the three, must not queue behind
        # the positions (1.5 s at 100,000 documents: docs/performance-notes.md).
        positions_job = helper.submit(lambda: (regions.positions(), offsets_of(counts)))
        arrays = _posting_arrays(
            regions.per_text,
            post_docs,
            field_tfs,
            sorted_terms,
            cols,
            pagerank,
            num_docs,
            params,
            near_duplicates,
            helper,
            stats,
        )
        positions, arrays["pos_offsets"] = positions_job.result()
    arrays["positions"] = positions
    arrays.update(link_arrays(links or {}, num_docs))
    arrays.update(entry_page_arrays(arrays, num_docs, url_kinds, doc_hosts))
    return arrays


def entry_page_arrays(
    arrays: Mapping[str, np.ndarray],
    num_docs: int,
    url_kinds: np.ndarray | None = None,
    doc_hosts: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """Each document's URL form and each site's name (``services.ranking.entry_pages``) from
    the postings: a build's and a merge's (``segment_merge``) alike."""
    if url_kinds is None:
        url_kinds = np.full(num_docs, UrlKind.PATH, dtype=np.uint8)
    if url_kinds.shape != (num_docs,):
        raise PublishError(f"{url_kinds.shape[0]} URL forms for {num_docs} documents")
    kinds = url_kinds.astype(np.uint8, copy=False)
    if doc_hosts is None:
        doc_hosts = np.arange(num_docs, dtype=np.int64)
    offsets, terms = site_names(
        arrays["post_offsets"], arrays["post_docs"], arrays["tf_title"], doc_hosts, kinds
    )
    return {"url_kind": kinds, "site_name_offsets": offsets, "site_name_terms": terms}


def link_arrays(links: Mapping[int, Sequence[int]], num_docs: int) -> dict[str, np.ndarray]:
    """In-links (CSR by target, sources ascending) and out-link counts, for page info: the
    link graph is otherwise gone once PageRank is computed."""
    sources = np.fromiter((doc for doc, targets in links.items() for _ in targets), dtype=np.int64, count=-1)
    targets = np.fromiter((t for ts in links.values() for t in ts), dtype=np.int64, count=-1)
    return edge_arrays(sources, targets, num_docs)


def edge_arrays(sources: np.ndarray, targets: np.ndarray, num_docs: int) -> dict[str, np.ndarray]:
    """``link_arrays`` from the links as two aligned arrays (source, target)."""
    sources, targets = sources.astype(np.int64, copy=False), targets.astype(np.int64, copy=False)
    inside = (sources >= 0) & (sources < num_docs) & (targets >= 0) & (targets < num_docs)
    if not inside.all():
        bad = int(np.flatnonzero(~inside)[0])
        raise PublishError(
            f"link graph names doc_num {int(max(sources[bad], targets[bad]))} outside 0..{num_docs - 1}: "
            "rebuild from a consistent crawl"
        )
    # One int64 key per link, target-major: unique sorts by target, then source, and drops
    # a page's repeated links to the same page.
    keys = np.unique(targets * max(num_docs, 1) + sources)
    by_target, source = np.divmod(keys, max(num_docs, 1))
    return {
        "in_offsets": offsets_of(np.bincount(by_target, minlength=num_docs)),
        "in_docs": source.astype(np.uint32),
        "out_counts": np.bincount(source, minlength=num_docs).astype(np.uint32),
    }


def arrays_from_postings(
    per_term: np.ndarray,
    post_docs: np.ndarray,
    field_tfs: np.ndarray,
    sorted_terms: list[bytes],
    cols: IndexColumns,
    pagerank: np.ndarray,
    num_docs: int,
    params: BM25FParams = DEFAULT_PARAMS,
    *,
    near_duplicates: bool = True,
    stats: CollectionStats | None = None,
) -> dict[str, np.ndarray]:
    """Every segment array but the positions, their offsets and the link graph, from postings
    already decoded (``per_term``: postings of each term of ``sorted_terms``; ``field_tfs``:
    one row per posting, one column per field), as ``segment_arrays`` computes them: a
    merge of segments (``segment_merge``) scores exactly as a build does. ``stats``: as
    ``segment_arrays`` takes it."""
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="publish") as helper:
        return _posting_arrays(
            per_term,
            post_docs,
            field_tfs,
            sorted_terms,
            cols,
            pagerank,
            num_docs,
            params,
            near_duplicates,
            helper,
            stats,
        )


def _posting_arrays(
    per_term: np.ndarray,
    post_docs: np.ndarray,
    field_tfs: np.ndarray,
    sorted_terms: list[bytes],  # UTF-8, in byte order
    cols: IndexColumns,
    pagerank: np.ndarray,
    num_docs: int,
    params: BM25FParams,
    near_duplicates: bool,
    helper: ThreadPoolExecutor,
    stats: CollectionStats | None = None,
) -> dict[str, np.ndarray]:
    """Every segment array but the positions and their offsets."""
    df = per_term.astype(np.uint32)
    post_offsets = offsets_of(df)
    check_postings(post_docs, post_offsets, num_docs)
    tfs = [np.ascontiguousarray(field_tfs[:, f]) for f in range(NUM_FIELDS)]
    del field_tfs

    term_offsets, term_bytes = term_arrays(sorted_terms)
    lengths = field_lengths(cols, num_docs)
    fwd_offsets, fwd_terms, fwd_tfs = forward_index(post_docs, post_offsets, title_body_tfs(tfs), num_docs)
    # Near-duplicates on the helper thread while this one computes the impacts (numpy
    # releases the GIL, and folding is a sizeable part of a build: docs/benchmarks.md).
    near_job = helper.submit(
        near_duplicates_of, fwd_offsets, fwd_terms, fwd_tfs, sorted_terms, num_docs, near_duplicates
    )
    averages = None if stats is None else stats.average_lengths
    idf, post_impacts, impact_scale, max_impact = posting_scores(
        df, post_offsets, post_docs, tfs, lengths, num_docs, params, averages, sorted_terms, stats
    )
    near_dup_of = near_job.result()
    return {
        "term_bytes": term_bytes,
        "term_offsets": term_offsets,
        "df": df.astype(np.uint32),
        "idf": idf.astype(np.float32),
        "max_impact": max_impact,
        "impact_scale": impact_scale,
        "post_offsets": post_offsets,
        "post_docs": post_docs,
        "post_impacts": post_impacts,
        **{f"tf_{name}": tf for name, tf in zip(FIELD_NAMES, tfs, strict=True)},
        **length_arrays(lengths),
        "fwd_offsets": fwd_offsets,
        "fwd_terms": fwd_terms,
        "fwd_tfs": fwd_tfs,
        "near_dup_of": near_dup_of,
        **form_arrays(cols.forms, num_docs),
        **vocabulary_arrays(cols.vocabulary),
        "pagerank": pagerank_array(pagerank, stats),
    }


def term_arrays(sorted_terms: Sequence[bytes]) -> tuple[np.ndarray, np.ndarray]:
    """(term_offsets, term_bytes) of the terms, in their order."""
    term_offsets = offsets_of(np.array([len(t) for t in sorted_terms], dtype=np.uint64))
    return term_offsets, np.frombuffer(b"".join(sorted_terms), dtype=np.uint8).copy()


def field_lengths(cols: IndexColumns, num_docs: int) -> np.ndarray:
    """Each field's length of each document, (fields, documents) uint32."""
    lengths = np.zeros((NUM_FIELDS, num_docs), dtype=np.uint32)
    for doc, values in cols.lengths.items():
        if not 0 <= doc < num_docs:
            raise PublishError(
                f"MRIndex saw doc_num {doc}, but the database has {num_docs} "
                "documents (0..N-1): rebuild from a consistent crawl"
            )
        lengths[:, doc] = values
    return lengths


def length_arrays(lengths: np.ndarray) -> dict[str, np.ndarray]:
    """The per-document length arrays (``len_*``, ``doc_lengths``) of ``field_lengths``."""
    return {
        **{f"len_{name}": lengths[f] for f, name in enumerate(FIELD_NAMES)},
        "doc_lengths": (lengths[0] + lengths[1] + lengths[4]).astype(np.uint32),
    }


def pagerank_array(pagerank: np.ndarray, stats: CollectionStats | None = None) -> np.ndarray:
    """The stored PageRank: normalised to sum to 1 (a build's), or as given (a delta's priors)."""
    total = float(pagerank.sum()) if stats is None else 1.0
    if not total > 0:
        raise PublishError("PageRank vector sums to zero: the PageRank run failed")
    return np.asarray(pagerank, dtype=np.float64) / total  # drop rounding drift


def title_body_tfs(tfs: Sequence[np.ndarray]) -> np.ndarray:
    """The page's own words' frequency per posting: title, body and meta (the description was
    body text until the meta field had its own weight; feedback and near-duplicates still read
    it). Not nav: a site's menu is no evidence of what a page is about, nor of two pages being
    copies."""
    return np.minimum(tfs[0].astype(np.uint32) + tfs[1] + tfs[4], TF_MAX).astype(np.uint16)


def import_forward_index_tools() -> None:
    """Import what ``forward_index`` imports lazily (scipy.sparse, 0.13 s): a build does it on
    a thread while its jobs run, not at publish on its one busy core."""
    import scipy.sparse  # noqa: F401


def forward_index(
    post_docs: np.ndarray, post_offsets: np.ndarray, title_body: np.ndarray, num_docs: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The forward index (fwd_offsets, fwd_terms, fwd_tfs): the postings regrouped by
    document, terms ascending: the CSC form of the (term x document) CSR matrix the postings
    are (scipy converts in O(postings))."""
    from scipy.sparse import csr_matrix

    shape = (post_offsets.shape[0] - 1, num_docs)
    # scipy keeps int32 indices and offsets when every value fits (its own choice), so the
    # document numbers are handed over as int32 views (doc numbers < 2^31) instead of being
    # copied, and the term ids read back as uint32 views; the frequencies stay uint16. Each
    # copy avoided is 4 or 2 bytes a posting at the build's peak (docs/benchmarks.md,
    # "Issue 31: a like-for-like million (stop 38)").
    narrow = int(post_offsets[-1]) < 2**31 and max(shape) < 2**31
    index_type = np.int32 if narrow else np.int64
    docs = (
        post_docs.view(np.int32) if narrow and post_docs.dtype == np.uint32 else post_docs.astype(index_type)
    )
    by_doc = csr_matrix((title_body, docs, post_offsets.astype(index_type)), shape=shape).tocsc()
    by_doc.has_sorted_indices = True  # tocsc emits each column's rows in ascending order
    indices = by_doc.indices
    terms = indices.view(np.uint32) if indices.dtype == np.int32 else indices.astype(np.uint32)
    return by_doc.indptr.astype(np.uint64), terms, by_doc.data.astype(np.uint16, copy=False)


def posting_scores(
    df: np.ndarray,
    post_offsets: np.ndarray,
    post_docs: np.ndarray,
    tfs: Sequence[np.ndarray],
    lengths: np.ndarray,
    num_docs: int,
    params: BM25FParams,
    averages: Sequence[float] | None,
    sorted_terms: Sequence[bytes] = (),
    stats: CollectionStats | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(idf, impact levels, each term's step, max_impact) of the postings of terms with
    ``df`` postings each (``services.ranking.impact_levels``: one byte an impact; max_impact
    is the largest impact as stored)
    (``post_offsets`` from 0): per term and per posting, so a run of terms scores as the
    whole does when ``averages`` are the collection's (``bm25f.average_lengths``). ``stats``:
    a delta's (``segment_arrays``), its ``sorted_terms`` looked up in it."""
    # A delta's: the collection's df and N (the stored idf and max_impact are those used).
    idf = (
        bm25_idf(df, num_docs)
        if stats is None
        else bm25_idf(stats.df(list(sorted_terms), df), stats.num_docs)
    )
    term_of_posting = np.repeat(np.arange(len(df)), df.astype(np.int64))
    post_impacts = impacts(post_docs, tfs, term_of_posting, idf, list(lengths), params, averages)
    scales = impact_scales(idf, params.k1)
    levels = quantize(post_impacts, scales, df)
    return idf, levels, scales, term_maxima(levels, scales, post_offsets)


def near_duplicates_of(
    fwd_offsets: np.ndarray,
    fwd_terms: np.ndarray,
    fwd_tfs: np.ndarray,
    sorted_terms: list[bytes],
    num_docs: int,
    enabled: bool,
) -> np.ndarray:
    """Each document's near-duplicate representative (services.text.analysis.minhash), by the words of
    title and body: the forward index also lists URL-word and anchor terms (frequency 0
    here), which differ between copies of one page by design (session ids, dates in paths)."""
    if not enabled:
        return np.arange(num_docs, dtype=np.uint32)
    text_offsets, text_terms = _text_terms(fwd_offsets, fwd_terms, fwd_tfs)
    sigs = signatures(text_offsets, text_terms, term_rows(sorted_terms))
    return near_duplicate_groups(text_offsets, text_terms, sigs)


MIN_VOCABULARY_DOCS = 2  # a form in one document only is as likely a typo as a word


def vocabulary_arrays(vocabulary: Mapping[str, int]) -> dict[str, np.ndarray]:
    """The written forms in at least MIN_VOCABULARY_DOCS documents, sorted by their UTF-8
    bytes, with their document counts: what spelling help and completions offer."""
    kept = sorted(
        (form.encode("utf-8"), held) for form, held in vocabulary.items() if held >= MIN_VOCABULARY_DOCS
    )
    lengths = np.array([len(f) for f, _ in kept], dtype=np.uint64)
    return {
        "vocab_bytes": np.frombuffer(b"".join(f for f, _ in kept), dtype=np.uint8).copy(),
        "vocab_offsets": offsets_of(lengths),
        "vocab_df": np.array([h for _, h in kept], dtype=np.uint32),
    }


def form_arrays(forms: dict[int, bytes], num_docs: int) -> dict[str, np.ndarray]:
    """Each document's word-form filter (services.text.analysis.forms) in one array, with offsets."""
    sizes = np.zeros(num_docs, dtype=np.uint64)
    for doc, blob in forms.items():
        if not 0 <= doc < num_docs:
            raise PublishError(f"MRIndex sent word forms of doc_num {doc}, outside 0..{num_docs - 1}")
        sizes[doc] = len(blob)
    ordered = b"".join(forms[d] for d in sorted(forms))
    return {"form_offsets": offsets_of(sizes), "form_filters": np.frombuffer(ordered, dtype=np.uint8).copy()}


def _text_terms(offsets: np.ndarray, terms: np.ndarray, tfs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The forward index restricted to entries with a title or body frequency.

    Each document's kept entries are counted by one ``reduceat`` over the documents that
    have entries, not read off a running count of all of them: an int64 array the size of
    the forward index, fresh memory each build (4x the CPU, most of it page faults, on the
    helper thread that near-duplicate folding keeps the longest: docs/performance-notes.md)."""
    keep = tfs > 0
    bounds = offsets.astype(np.int64)
    filled = np.flatnonzero(bounds[1:] > bounds[:-1])
    kept = np.zeros(bounds.shape[0] - 1, dtype=np.int64)
    if filled.shape[0]:  # runs of the filled documents: each ends where the next one starts
        kept[filled] = np.add.reduceat(keep.view(np.uint8), bounds[filled], dtype=np.int64)
    return offsets_of(kept), terms[keep]


def offsets_of(lengths: np.ndarray) -> np.ndarray:
    """[0, l0, l0+l1, ...]: where each run starts, plus the end (uint64, len+1)."""
    out = np.zeros(len(lengths) + 1, dtype=np.uint64)
    np.cumsum(lengths.astype(np.uint64), out=out[1:])  # widened first: cumsum's own cast is slow
    return out


def check_postings(post_docs: np.ndarray, post_offsets: np.ndarray, num_docs: int) -> None:
    """Refuse postings naming documents past ``num_docs`` or not ascending within a term."""
    if len(post_docs) and int(post_docs.max()) >= num_docs:
        raise PublishError(
            f"a posting names doc_num {int(post_docs.max())}, but the database "
            f"has {num_docs} documents: rebuild from a consistent crawl"
        )
    rising = post_docs[1:] > post_docs[:-1]  # unsigned: compared, never subtracted
    boundary = post_offsets[1:-1].astype(np.int64) - 1  # last posting of each term but the last
    rising[boundary[(boundary >= 0) & (boundary < len(rising))]] = True
    if not rising.all():
        raise PublishError("postings are not strictly ascending within a term: a document was indexed twice")


def segment_meta(
    arrays: dict[str, np.ndarray],
    *,
    pagerank_iterations: int,
    pagerank_damping: float,
    created_at: float,
    params: BM25FParams = DEFAULT_PARAMS,
    languages: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    return {
        "format": SEGMENT_FORMAT,
        "bm25f": params.to_meta(),
        "analyzer": analyzer_version(),
        "languages": dict(sorted((languages or {}).items())),
        "num_docs": int(len(arrays["doc_lengths"])),
        "num_terms": int(len(arrays["df"])),
        "num_postings": int(len(arrays["post_impacts"])),
        "near_duplicates": int((arrays["near_dup_of"] != np.arange(len(arrays["near_dup_of"]))).sum()),
        "created_at": created_at,
        "pagerank_iterations": pagerank_iterations,
        "pagerank_damping": pagerank_damping,
    }
