"""Publish: a segment's arrays -> one index segment in the blob store -> the active version.

The segment holds compact typed arrays (the segment contract, built by
``segment_arrays``), so the search service memory-maps it and starts without
parsing. Order of effects: the blob is stored first; then one database
transaction replaces the PageRank table and activates the new version. A reader
therefore never sees an active version whose segment is missing, and a failed
transaction leaves the previous version active (the orphan blob is deleted).
``publish_segment`` checks a segment against the contract
(``services.storage.formats.segment.SEGMENT_ARRAYS``) before storing it.
"""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import delete, select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from services.indexing.errors import SupersededError
from services.storage.blobs.blobstore import BlobStore
from services.storage.errors import StorageError
from services.storage.formats.segment import check_segment, write_segment
from services.storage.formats.segment_codec import compact_segment
from services.storage.sql.bulk_sql import chunked
from services.storage.sql.index_versions import activate_index, active_index
from services.storage.sql.models import IndexVersion, PageRankScore, table

log = logging.getLogger(__name__)


@dataclass
class PublishedIndex:
    version_id: int
    segment: str
    size: int


def segment_name(created_at: float) -> str:
    """``index/segment-<UTC time>-<random>.nseg``: sortable by age, never reused."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(created_at))
    return f"index/segment-{stamp}-{uuid.uuid4().hex[:8]}.nseg"


def publish_segment(
    arrays: dict[str, np.ndarray],  # plain (segment_codec): as segment_arrays and merge_segments give them
    meta: dict[str, Any],
    store: BlobStore,
    sessions: sessionmaker[Session],
    keep: int = 0,
    *,
    replaces: int | None = None,
) -> PublishedIndex:
    """Store the segment, then replace PageRank rows and activate it in one transaction;
    then delete the segments beyond the ``keep`` newest (``prune_segments``; 0: none).

    ``replaces``: the version this segment was made from (an incremental update's base). If
    another version became active meanwhile (a full build finished), nothing is activated
    and ``SupersededError`` says so: activating would put back what that build replaced."""
    name = segment_name(meta["created_at"])
    stored = compact_segment(arrays)  # the build's plain arrays, packed as format 9 stores them
    check_segment(stored, meta, name)  # a bug here must never reach the search service
    with store.writer(name) as fh:
        size = write_segment(fh, stored, meta)
    del stored
    try:
        with sessions.begin() as session:
            if replaces is not None:
                current = active_index(session, lock=True)
                if current is None or current.id != replaces:
                    raise SupersededError(
                        f"index version {replaces} is no longer active (now "
                        f"{None if current is None else current.id}): this update of it is not "
                        "published; the next update starts from the active version"
                    )
            session.execute(delete(PageRankScore))
            rows = [{"doc_num": i, "score": s} for i, s in enumerate(arrays["pagerank"].tolist())]
            scores = table(PageRankScore)
            for chunk in chunked(rows, 5000):
                # Core executemany: the ORM's bulk insert takes several times as long
                # (docs/benchmarks.md).
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

    Every publish writes a new segment (hundreds of MB at 100,000 documents:
    docs/benchmarks.md), and nothing else removes the old ones. A failure here never
    undoes the publish: the segment is named in a warning and its row kept, so the
    next publish tries again.
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
