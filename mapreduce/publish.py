"""Publish: job outputs -> one index segment in the blob store -> the active version.

The segment holds compact typed arrays (see the contract below), so the
search service memory-maps it and starts without parsing. Order of effects:
the blob is stored first; then one database transaction replaces the
PageRank table and activates the new version. A reader therefore never sees
an active version whose segment is missing, and a failed transaction leaves
the previous version active (the orphan blob is deleted).

Arrays (N documents, T terms, P postings)::

    term_bytes   uint8   terms' UTF-8 bytes concatenated, sorted by those bytes
    term_offsets uint64  [T+1]
    df           uint32  [T]
    idf          float32 [T]   ln(1 + N / df)
    post_offsets uint64  [T+1]
    post_docs    uint32  [P]   ascending within a term
    post_tfs     uint32  [P]
    doc_lengths  uint32  [N]
    doc_norms    float32 [N]   sqrt(sum_t ((1 + ln tf) * idf_t)^2), 0 for empty docs
    pagerank     float64 [N]   sums to 1
"""

from __future__ import annotations

import time
import uuid
from array import array
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sqlalchemy import delete, insert
from sqlalchemy.orm import Session, sessionmaker

from mapreduce.mr_index import LENGTH, TERM
from services.storage.blobstore import BlobStore
from services.storage.db import activate_index, chunked
from services.storage.models import PageRankScore
from services.storage.segment import pack_segment

SEGMENT_FORMAT = 1


class PublishError(ValueError):
    """Job outputs that cannot form a consistent segment; the message names the mismatch."""


@dataclass
class IndexColumns:
    """MRIndex output gathered into flat columns (postings in job order, terms unsorted)."""

    terms: list[bytes] = field(default_factory=list)
    df: array = field(default_factory=lambda: array("I"))
    docs: array = field(default_factory=lambda: array("I"))
    tfs: array = field(default_factory=lambda: array("I"))
    lengths: dict[int, int] = field(default_factory=dict)


@dataclass
class PublishedIndex:
    version_id: int
    segment: str
    size: int


def collect_index_rows(rows: Iterable[tuple[Any, Any]]) -> IndexColumns:
    """Gather MRIndex rows (``["term", t] -> postings``, ``["len", doc] -> n``)."""
    cols = IndexColumns()
    for (kind, name), value in rows:
        if kind == TERM:
            cols.terms.append(name.encode("utf-8"))
            cols.df.append(len(value))
            for doc, tf in value:
                cols.docs.append(doc)
                cols.tfs.append(tf)
        elif kind == LENGTH:
            cols.lengths[int(name)] = int(value)
        else:
            raise PublishError(f"unexpected MRIndex row kind {kind!r}: job and publisher disagree")
    return cols


def segment_arrays(cols: IndexColumns, pagerank: np.ndarray, num_docs: int) -> dict[str, np.ndarray]:
    """The segment's arrays (contract above) from the index columns and the PageRank vector."""
    if len(pagerank) != num_docs:
        raise PublishError(f"PageRank vector has {len(pagerank)} entries for {num_docs} documents")
    order = np.array(sorted(range(len(cols.terms)), key=cols.terms.__getitem__), dtype=np.int64)
    df_job = np.asarray(cols.df, dtype=np.uint32)
    starts_job = _offsets(df_job)[:-1].astype(np.int64)
    df = df_job[order]
    post_offsets = _offsets(df)
    # Gather each term's postings from its position in the job output into
    # sorted-term order: posting k of sorted term i sits at starts_job[order[i]] + k.
    shift = starts_job[order] - post_offsets[:-1].astype(np.int64)
    gather = np.repeat(shift, df.astype(np.int64)) + np.arange(int(post_offsets[-1]))
    post_docs = np.asarray(cols.docs, dtype=np.uint32)[gather]
    post_tfs = np.asarray(cols.tfs, dtype=np.uint32)[gather]
    _check_postings(post_docs, post_offsets, num_docs)

    sorted_terms = [cols.terms[i] for i in order]
    term_offsets = _offsets(np.array([len(t) for t in sorted_terms], dtype=np.uint64))
    term_bytes = np.frombuffer(b"".join(sorted_terms), dtype=np.uint8).copy()

    idf64 = np.log1p(num_docs / df.astype(np.float64))
    term_of_posting = np.repeat(np.arange(len(df)), df.astype(np.int64))
    weights = (1.0 + np.log(post_tfs.astype(np.float64))) * idf64[term_of_posting]
    norms = np.sqrt(np.bincount(post_docs.astype(np.int64), weights=weights ** 2,
                                minlength=num_docs))

    doc_lengths = np.zeros(num_docs, dtype=np.uint32)
    for doc, length in cols.lengths.items():
        if not 0 <= doc < num_docs:
            raise PublishError(f"MRIndex saw doc_num {doc}, but the database has {num_docs} "
                               "documents (0..N-1): rebuild from a consistent crawl")
        doc_lengths[doc] = length

    total = float(pagerank.sum())
    if not total > 0:
        raise PublishError("PageRank vector sums to zero: the PageRank run failed")
    return {
        "term_bytes": term_bytes,
        "term_offsets": term_offsets,
        "df": df.astype(np.uint32),
        "idf": idf64.astype(np.float32),
        "post_offsets": post_offsets,
        "post_docs": post_docs,
        "post_tfs": post_tfs,
        "doc_lengths": doc_lengths,
        "doc_norms": norms.astype(np.float32),
        "pagerank": (np.asarray(pagerank, dtype=np.float64) / total),  # drop rounding drift
    }


def _offsets(lengths: np.ndarray) -> np.ndarray:
    """[0, l0, l0+l1, ...]: where each run starts, plus the end (uint64, len+1)."""
    out = np.zeros(len(lengths) + 1, dtype=np.uint64)
    np.cumsum(lengths, dtype=np.uint64, out=out[1:])
    return out


def _check_postings(post_docs: np.ndarray, post_offsets: np.ndarray, num_docs: int) -> None:
    if len(post_docs) and int(post_docs.max()) >= num_docs:
        raise PublishError(f"a posting names doc_num {int(post_docs.max())}, but the database "
                           f"has {num_docs} documents: rebuild from a consistent crawl")
    rising = np.diff(post_docs.astype(np.int64)) > 0
    boundary = post_offsets[1:-1].astype(np.int64) - 1  # last posting of each term but the last
    rising[boundary[(boundary >= 0) & (boundary < len(rising))]] = True
    if not rising.all():
        raise PublishError("postings are not strictly ascending within a term: "
                           "a document was indexed twice")


def segment_meta(arrays: dict[str, np.ndarray], *, pagerank_iterations: int,
                 pagerank_damping: float, created_at: float) -> dict[str, Any]:
    return {
        "format": SEGMENT_FORMAT,
        "num_docs": int(len(arrays["doc_lengths"])),
        "num_terms": int(len(arrays["df"])),
        "num_postings": int(len(arrays["post_docs"])),
        "created_at": created_at,
        "pagerank_iterations": pagerank_iterations,
        "pagerank_damping": pagerank_damping,
    }


def segment_name(created_at: float) -> str:
    """``index/segment-<UTC time>-<random>.nseg``: sortable by age, never reused."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(created_at))
    return f"index/segment-{stamp}-{uuid.uuid4().hex[:8]}.nseg"


def publish_segment(arrays: dict[str, np.ndarray], meta: dict[str, Any], store: BlobStore,
                    sessions: sessionmaker[Session]) -> PublishedIndex:
    """Store the segment, then replace PageRank rows and activate it in one transaction."""
    name = segment_name(meta["created_at"])
    blob = pack_segment(dict(arrays), meta)
    store.put(name, blob)
    try:
        with sessions.begin() as session:
            session.execute(delete(PageRankScore))
            rows = [{"doc_num": i, "score": float(s)} for i, s in enumerate(arrays["pagerank"])]
            for chunk in chunked(rows, 5000):
                session.execute(insert(PageRankScore), chunk)
            version = activate_index(session, name, meta["num_docs"], meta["num_terms"],
                                     now=meta["created_at"])
            version_id = version.id
    except Exception:
        store.delete(name)  # the previous version stays active; leave no orphan behind
        raise
    return PublishedIndex(version_id=version_id, segment=name, size=len(blob))
