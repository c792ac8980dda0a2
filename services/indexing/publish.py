"""Publish: job outputs -> one index segment in the blob store -> the active version.

The segment holds compact typed arrays (the segment contract), so the
search service memory-maps it and starts without parsing. Order of effects:
the blob is stored first; then one database transaction replaces the
PageRank table and activates the new version. A reader therefore never sees
an active version whose segment is missing, and a failed transaction leaves
the previous version active (the orphan blob is deleted).

The arrays are the segment contract (``services.storage.segment.SEGMENT_ARRAYS``:
names, dtypes, lengths and meaning, written once there); ``publish_segment``
checks a segment against it before storing it.

The BM25F parameters the impacts were computed with are in the meta
(``bm25f``), so a reader can tell which ranking a segment carries.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pybase64
from sqlalchemy import delete, select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from mapreduce.mr_index import (
    FORMS,
    FORMS_KEY,
    LENGTH,
    LENGTH_KEY,
    TERM,
    TERM_KEY,
    VOCABULARY,
    VOCABULARY_KEY,
)
from mapreduce.postings_wire import TF_MAX, read_regions
from services.indexing.errors import PublishError
from services.ranking.bm25f import DEFAULT_PARAMS, BM25FParams, bm25_idf, impacts
from services.storage.blobstore import BlobStore
from services.storage.bulk_sql import chunked
from services.storage.errors import StorageError
from services.storage.index_versions import activate_index
from services.storage.models import IndexVersion, PageRankScore, table
from services.storage.segment import SEGMENT_FORMAT, check_segment, write_segment
from services.text.minhash import near_duplicate_groups, signatures, term_rows

log = logging.getLogger(__name__)


@dataclass
class IndexColumns:
    """MRIndex output: each term's postings on the wire, and each document's field lengths."""

    chunks: dict[bytes, bytes | str] = field(default_factory=dict)  # UTF-8 term -> wire text
    lengths: dict[int, list[int]] = field(default_factory=dict)
    forms: dict[int, bytes] = field(default_factory=dict)  # doc -> Bloom filter of its word forms
    vocabulary: dict[str, int] = field(default_factory=dict)  # written form -> documents holding it


@dataclass
class PublishedIndex:
    version_id: int
    segment: str
    size: int


def collect_index_rows(rows: Iterable[tuple[Any, Any]]) -> IndexColumns:
    """Gather MRIndex rows (``("t", term) -> wire text``, ``("l", doc) -> field lengths``),
    as ``read_index_rows`` gives them; the texts are decoded all at once by
    ``segment_arrays``."""
    cols = IndexColumns()
    for (kind, name), value in rows:
        if kind == TERM:
            key = name.encode("utf-8")
            if key in cols.chunks:
                raise PublishError(f"term {name!r} came twice from MRIndex: job and publisher disagree")
            cols.chunks[key] = value
        elif kind == LENGTH:
            cols.lengths[int(name)] = value
        elif kind == FORMS:
            cols.forms[int(name)] = value
        elif kind == VOCABULARY:
            cols.vocabulary[name] = cols.vocabulary.get(name, 0) + int(value)
        else:
            raise PublishError(f"unexpected MRIndex row kind {kind!r}: job and publisher disagree")
    return cols


def read_index_rows(path: Path) -> Iterator[tuple[tuple[str, Any], Any]]:
    """MRIndex's output file as ``((kind, name), value)``: ``(("t", term), wire text)`` and
    ``(("l", doc), [title, body, anchor, url])``."""
    term_key, length_key = TERM_KEY, LENGTH_KEY
    with Path(path).open("rb") as fh:
        for line in fh:
            key, _, value = line.rstrip(b"\r\n").partition(b"\t")
            if key.startswith(term_key):
                yield (TERM, key[len(term_key) :].decode("utf-8")), value
            elif key.startswith(length_key):
                yield (LENGTH, int(key[len(length_key) :])), [int(x) for x in value.split(b",")]
            elif key.startswith(FORMS_KEY):
                yield (FORMS, int(key[len(FORMS_KEY) :])), pybase64.b64decode(value)
            elif key.startswith(VOCABULARY_KEY):
                yield (VOCABULARY, key[len(VOCABULARY_KEY) :].decode("utf-8")), int(value)
            elif key:
                raise PublishError(f"{path}: unexpected MRIndex row {key[:40]!r}: job and publisher disagree")


def segment_arrays(
    cols: IndexColumns,
    pagerank: np.ndarray,
    num_docs: int,
    params: BM25FParams = DEFAULT_PARAMS,
    *,
    near_duplicates: bool = True,
    links: Mapping[int, Sequence[int]] | None = None,
) -> dict[str, np.ndarray]:
    """The segment's arrays (the contract in ``services.storage.segment``) from the index
    columns, the PageRank vector and the link graph (``doc -> targets``; none: no links)."""
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
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="publish") as helper:
        # The positions (and their offsets) on a second thread while this one scores the
        # postings: numpy releases the GIL, and publish otherwise leaves a core idle.
        positions_job = helper.submit(lambda: (regions.positions(), _offsets(counts)))
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
        )
        positions, arrays["pos_offsets"] = positions_job.result()
    arrays["positions"] = positions
    arrays.update(link_arrays(links or {}, num_docs))
    return arrays


def link_arrays(links: Mapping[int, Sequence[int]], num_docs: int) -> dict[str, np.ndarray]:
    """In-links (CSR by target, sources ascending) and out-link counts, for page info: the
    link graph is otherwise gone once PageRank is computed."""
    sources = np.fromiter((doc for doc, targets in links.items() for _ in targets), dtype=np.int64, count=-1)
    targets = np.fromiter((t for ts in links.values() for t in ts), dtype=np.int64, count=-1)
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
        "in_offsets": _offsets(np.bincount(by_target, minlength=num_docs)),
        "in_docs": source.astype(np.uint32),
        "out_counts": np.bincount(source, minlength=num_docs).astype(np.uint32),
    }


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
) -> dict[str, np.ndarray]:
    """Every segment array but the positions and their offsets."""
    df = per_term.astype(np.uint32)
    post_offsets = _offsets(df)
    num_postings = int(post_offsets[-1])
    _check_postings(post_docs, post_offsets, num_docs)
    tfs = [np.ascontiguousarray(field_tfs[:, f]) for f in range(4)]
    del field_tfs

    term_offsets = _offsets(np.array([len(t) for t in sorted_terms], dtype=np.uint64))
    term_bytes = np.frombuffer(b"".join(sorted_terms), dtype=np.uint8).copy()

    lengths = np.zeros((4, num_docs), dtype=np.uint32)
    for doc, values in cols.lengths.items():
        if not 0 <= doc < num_docs:
            raise PublishError(
                f"MRIndex saw doc_num {doc}, but the database has {num_docs} "
                "documents (0..N-1): rebuild from a consistent crawl"
            )
        lengths[:, doc] = values

    # Forward index: the postings regrouped by document, terms ascending: the CSC form
    # of the (term x document) CSR matrix the postings are (scipy converts in O(postings)).
    from scipy.sparse import csr_matrix

    title_body = np.minimum(tfs[0].astype(np.uint32) + tfs[1], TF_MAX).astype(np.uint16)
    by_doc = csr_matrix(
        (title_body, post_docs, post_offsets.astype(np.int64)), shape=(len(df), num_docs)
    ).tocsc()
    by_doc.has_sorted_indices = True  # tocsc emits each column's rows in ascending order
    fwd_offsets = by_doc.indptr.astype(np.uint64)
    fwd_terms = by_doc.indices.astype(np.uint32)
    fwd_tfs = by_doc.data.astype(np.uint16)
    del by_doc, title_body
    # Near-duplicates on the helper thread while this one computes the impacts (numpy
    # releases the GIL; on the benchmark corpus they took 5-7 s of a 35 s build).
    near_job = helper.submit(
        _near_duplicates, fwd_offsets, fwd_terms, fwd_tfs, sorted_terms, num_docs, near_duplicates
    )

    idf = bm25_idf(df, num_docs)
    term_of_posting = np.repeat(np.arange(len(df)), df.astype(np.int64))
    post_impacts = impacts(post_docs, tfs, term_of_posting, idf, list(lengths), params)
    max_impact = np.zeros(len(df), dtype=np.float32)
    if num_postings:
        nonempty = df > 0
        max_impact[nonempty] = np.maximum.reduceat(post_impacts, post_offsets[:-1][nonempty].astype(np.int64))

    near_dup_of = near_job.result()
    total = float(pagerank.sum())
    if not total > 0:
        raise PublishError("PageRank vector sums to zero: the PageRank run failed")
    return {
        "term_bytes": term_bytes,
        "term_offsets": term_offsets,
        "df": df.astype(np.uint32),
        "idf": idf.astype(np.float32),
        "max_impact": max_impact,
        "post_offsets": post_offsets,
        "post_docs": post_docs,
        "post_impacts": post_impacts,
        "tf_title": tfs[0],
        "tf_body": tfs[1],
        "tf_anchor": tfs[2],
        "tf_url": tfs[3],
        "len_title": lengths[0],
        "len_body": lengths[1],
        "len_anchor": lengths[2],
        "len_url": lengths[3],
        "doc_lengths": (lengths[0] + lengths[1]).astype(np.uint32),
        "fwd_offsets": fwd_offsets,
        "fwd_terms": fwd_terms,
        "fwd_tfs": fwd_tfs,
        "near_dup_of": near_dup_of,
        **_form_arrays(cols.forms, num_docs),
        **vocabulary_arrays(cols.vocabulary),
        "pagerank": (np.asarray(pagerank, dtype=np.float64) / total),  # drop rounding drift
    }


def _near_duplicates(
    fwd_offsets: np.ndarray,
    fwd_terms: np.ndarray,
    fwd_tfs: np.ndarray,
    sorted_terms: list[bytes],
    num_docs: int,
    enabled: bool,
) -> np.ndarray:
    """Each document's near-duplicate representative (services.text.minhash), by the words of
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
        "vocab_offsets": _offsets(lengths),
        "vocab_df": np.array([h for _, h in kept], dtype=np.uint32),
    }


def _form_arrays(forms: dict[int, bytes], num_docs: int) -> dict[str, np.ndarray]:
    """Each document's word-form filter (services.text.forms) in one array, with offsets."""
    sizes = np.zeros(num_docs, dtype=np.uint64)
    for doc, blob in forms.items():
        if not 0 <= doc < num_docs:
            raise PublishError(f"MRIndex sent word forms of doc_num {doc}, outside 0..{num_docs - 1}")
        sizes[doc] = len(blob)
    ordered = b"".join(forms[d] for d in sorted(forms))
    return {"form_offsets": _offsets(sizes), "form_filters": np.frombuffer(ordered, dtype=np.uint8).copy()}


def _text_terms(offsets: np.ndarray, terms: np.ndarray, tfs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The forward index restricted to entries with a title or body frequency."""
    keep = tfs > 0
    kept_before = np.concatenate([[0], np.cumsum(keep, dtype=np.int64)])
    bounds = offsets.astype(np.int64)
    return _offsets(kept_before[bounds[1:]] - kept_before[bounds[:-1]]), terms[keep]


def _offsets(lengths: np.ndarray) -> np.ndarray:
    """[0, l0, l0+l1, ...]: where each run starts, plus the end (uint64, len+1)."""
    out = np.zeros(len(lengths) + 1, dtype=np.uint64)
    np.cumsum(lengths.astype(np.uint64), out=out[1:])  # widened first: cumsum's cast was slow
    return out


def _check_postings(post_docs: np.ndarray, post_offsets: np.ndarray, num_docs: int) -> None:
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
) -> dict[str, Any]:
    return {
        "format": SEGMENT_FORMAT,
        "bm25f": params.to_meta(),
        "num_docs": int(len(arrays["doc_lengths"])),
        "num_terms": int(len(arrays["df"])),
        "num_postings": int(len(arrays["post_docs"])),
        "near_duplicates": int((arrays["near_dup_of"] != np.arange(len(arrays["near_dup_of"]))).sum()),
        "created_at": created_at,
        "pagerank_iterations": pagerank_iterations,
        "pagerank_damping": pagerank_damping,
    }


def segment_name(created_at: float) -> str:
    """``index/segment-<UTC time>-<random>.nseg``: sortable by age, never reused."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(created_at))
    return f"index/segment-{stamp}-{uuid.uuid4().hex[:8]}.nseg"


def publish_segment(
    arrays: dict[str, np.ndarray],
    meta: dict[str, Any],
    store: BlobStore,
    sessions: sessionmaker[Session],
    keep: int = 0,
) -> PublishedIndex:
    """Store the segment, then replace PageRank rows and activate it in one transaction;
    then delete the segments beyond the ``keep`` newest (``prune_segments``; 0: none)."""
    name = segment_name(meta["created_at"])
    check_segment(arrays, meta, name)  # a bug here must never reach the search service
    with store.writer(name) as fh:
        size = write_segment(fh, arrays, meta)
    try:
        with sessions.begin() as session:
            session.execute(delete(PageRankScore))
            rows = [{"doc_num": i, "score": s} for i, s in enumerate(arrays["pagerank"].tolist())]
            scores = table(PageRankScore)
            for chunk in chunked(rows, 5000):
                # Core executemany: the ORM's bulk insert took 3x as long (0.6 s per 100k rows).
                session.connection().execute(scores.insert(), chunk)
            version = activate_index(
                session, name, meta["num_docs"], meta["num_terms"], now=meta["created_at"]
            )
            version_id = version.id
    except Exception:
        store.delete(name)  # the previous version stays active; leave no orphan behind
        raise
    if keep:
        try:
            prune_segments(store, sessions, keep)
        except SQLAlchemyError as exc:  # the new index is live: pruning waits for the next publish
            log.warning("could not prune old index versions (%s); the next publish tries again", exc)
    return PublishedIndex(version_id=version_id, segment=name, size=size)


def prune_segments(store: BlobStore, sessions: sessionmaker[Session], keep: int) -> list[str]:
    """Delete every index version but the ``keep`` newest (the active one is the newest):
    its segment blob, then its row. Returns the segments deleted.

    Every publish writes a new segment (719 MB at 100,000 documents) and nothing
    removed the old ones. A failure here never undoes the publish: the segment is
    named in a warning and its row kept, so the next publish tries again.
    """
    deleted: list[str] = []
    with sessions.begin() as session:
        old = session.scalars(
            select(IndexVersion)
            .where(IndexVersion.active.is_(False))
            .order_by(IndexVersion.id.desc())
            .offset(max(0, keep - 1))
        ).all()
        for version in old:
            try:
                store.delete(version.segment)
            except (StorageError, OSError) as exc:  # S3 errors arrive as StorageError
                log.warning(
                    "could not delete old index segment %s (%s); the next publish tries again",
                    version.segment,
                    exc,
                )
                continue
            session.delete(version)
            deleted.append(version.segment)
    return deleted
