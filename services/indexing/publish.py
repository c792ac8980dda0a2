"""Publish: a segment's arrays -> one index segment in the blob store -> the active version.

The segment holds compact typed arrays (the segment contract, built by
``segment_arrays``), so the search service memory-maps it and starts without
parsing. Order of effects: the blob is stored first; then one database
transaction replaces the PageRank table and activates the new version. A reader
therefore never sees an active version whose segment is missing, and a failed
transaction leaves the previous version active (the orphan blob is deleted).
``publish_segment`` checks a segment against the contract
(``services.storage.formats.segment.SEGMENT_ARRAYS``) before storing it.

A version is a base segment and the delta segments published after it
(``services.storage.formats.delta``): ``publish_delta_segment`` adds one to the active
version, ``publish_segment`` replaces the version (a build; a merge, keeping the deltas
published while it ran). ``prune_segments`` deletes a blob only when no kept version names it.
"""

from __future__ import annotations

import calendar
import logging
import re
import time
import uuid
from collections.abc import Callable
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
    segment: str  # the blob this publish stored (a base, or the newest delta)
    size: int
    deltas: tuple[str, ...] = ()  # the version's deltas (a merge's: those carried; a delta's: all)


@dataclass(frozen=True)
class VersionRef:
    """An index version as a publisher read it before its work: what its result replaces
    (a merge) or extends (a delta)."""

    id: int
    segment: str  # the base
    deltas: tuple[str, ...] = ()
    num_docs: int = 0
    num_terms: int = 0

    @classmethod
    def of(cls, version: IndexVersion) -> VersionRef:
        return cls(
            version.id, version.segment, tuple(version.delta_segments), version.num_docs, version.num_terms
        )

    @property
    def segments(self) -> tuple[str, ...]:
        """Base first, then the deltas in commit order."""
        return (self.segment, *self.deltas)

    @property
    def newest(self) -> str:
        """The segment whose commit mark is the version's (the last delta, or the base)."""
        return self.segments[-1]


def segment_name(created_at: float) -> str:
    """``index/segment-<UTC time>-<random>.nseg``: sortable by age, never reused."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(created_at))
    return f"index/segment-{stamp}-{uuid.uuid4().hex[:8]}.nseg"


SEGMENT_NAME = re.compile(r"index/segment-(\d{8}T\d{6}Z)-[0-9a-f]{8}\.nseg")
# A segment blob no version names is a publish between its write and its activation (seconds),
# or one a kill -9 interrupted there: deleted once older than this by the time in its name.
ORPHAN_AFTER = 3600.0


def created_at_of(name: str) -> float | None:
    """The creation time in a segment blob's name (``segment_name``); None: not one."""
    match = SEGMENT_NAME.fullmatch(name)
    if match is None:
        return None
    return float(calendar.timegm(time.strptime(match.group(1), "%Y%m%dT%H%M%SZ")))


def publish_segment(
    arrays: dict[str, np.ndarray],  # plain (segment_codec): as segment_arrays gives them; or ``packed``
    meta: dict[str, Any],
    store: BlobStore,
    sessions: sessionmaker[Session],
    keep: int = 0,
    *,
    replaces: VersionRef | int | None = None,
    packed: bool = False,
) -> PublishedIndex:
    """Store the segment, then replace PageRank rows and activate it in one transaction;
    then delete the segments beyond the ``keep`` newest (``prune_segments``; 0: none).

    ``replaces``: the version this segment was made from (a merge's: its base and deltas).
    If another version became active meanwhile (a full build finished), nothing is activated
    and ``SupersededError`` says so: activating would put back what that build replaced.
    A version that only added deltas to it (``VersionRef``; an id: none allowed) is replaced
    with those deltas kept on top of the new segment: they hold documents committed after
    what the merge read (``incremental.update_index``), so a merge never throws away the
    deltas published while it ran. ``packed``: ``arrays`` are stored ones already
    (``segment_codec.compact_segment``'s form: a merge packs its postings as it goes)."""
    carried: tuple[str, ...] = ()

    def activate(session: Session, name: str) -> IndexVersion:
        nonlocal carried
        num_docs = int(meta["num_docs"])
        if replaces is not None:
            current = active_index(session, lock=True)
            carried = _carried(current, replaces)
            if current is not None and carried:
                num_docs = max(num_docs, current.num_docs)
        session.execute(delete(PageRankScore))
        rows = [{"doc_num": i, "score": s} for i, s in enumerate(arrays["pagerank"].tolist())]
        scores = table(PageRankScore)
        for chunk in chunked(rows, 5000):
            # Core executemany: the ORM's bulk insert takes several times as long
            # (docs/benchmarks.md).
            session.connection().execute(scores.insert(), chunk)
        return activate_index(
            session, name, num_docs, meta["num_terms"], now=meta["created_at"], deltas=carried
        )

    version_id, name, size = _store_then_activate(arrays, meta, store, sessions, activate, packed=packed)
    _prune_quietly(store, sessions, keep)
    return PublishedIndex(version_id=version_id, segment=name, size=size, deltas=carried)


def publish_delta_segment(
    arrays: dict[str, np.ndarray],
    meta: dict[str, Any],
    store: BlobStore,
    sessions: sessionmaker[Session],
    keep: int = 0,
    *,
    extends: VersionRef,
    num_terms: int,
) -> PublishedIndex:
    """Store a delta segment, then activate the version ``extends`` with it added as its
    newest delta (``services.indexing.delta_build``); prune as ``publish_segment`` does. The
    PageRank rows stay: a delta computes none (rewriting them is O(N)).

    The delta was built from the commits after ``extends``'s newest segment: it is published
    only while the active version's newest segment is that one (the same version, or a merge
    that kept it as a carried delta), else ``SupersededError`` (a full build or a merge of
    everything meanwhile: the next delta starts from it). ``num_terms``: the version's
    (its base's, plus the delta's terms no earlier segment has)."""
    published: tuple[str, ...] = ()

    def activate(session: Session, name: str) -> IndexVersion:
        nonlocal published
        current = active_index(session, lock=True)
        if current is None or VersionRef.of(current).newest != extends.newest:
            raise SupersededError(
                f"index version {extends.id} is no longer active (now "
                f"{None if current is None else current.id}) and its newest segment "
                f"{extends.newest} is not the active version's: this delta is not published; "
                "the next one starts from the active version"
            )
        published = (*current.delta_segments, name)
        num_docs = max(int(meta["num_docs"]), current.num_docs)
        return activate_index(
            session, current.segment, num_docs, num_terms, now=meta["created_at"], deltas=published
        )

    version_id, name, size = _store_then_activate(arrays, meta, store, sessions, activate)
    _prune_quietly(store, sessions, keep)
    return PublishedIndex(version_id=version_id, segment=name, size=size, deltas=published)


def _carried(current: IndexVersion | None, replaces: VersionRef | int) -> tuple[str, ...]:
    """The deltas of ``current`` a segment made from ``replaces`` keeps on top of it, or
    ``SupersededError`` when ``current`` is not ``replaces`` plus deltas."""
    if current is not None and current.id == (replaces if isinstance(replaces, int) else replaces.id):
        return ()
    if isinstance(replaces, VersionRef) and current is not None:
        now = VersionRef.of(current)
        if now.segment == replaces.segment and now.deltas[: len(replaces.deltas)] == replaces.deltas:
            return now.deltas[len(replaces.deltas) :]
    was = replaces if isinstance(replaces, int) else replaces.id
    raise SupersededError(
        f"index version {was} is no longer active (now "
        f"{None if current is None else current.id}): this update of it is not "
        "published; the next update starts from the active version"
    )


def _store_then_activate(
    arrays: dict[str, np.ndarray],
    meta: dict[str, Any],
    store: BlobStore,
    sessions: sessionmaker[Session],
    activate: Callable[[Session, str], IndexVersion],
    *,
    packed: bool = False,
) -> tuple[int, str, int]:
    """Check and store the segment, then ``activate(session, name)`` in one transaction;
    (version id, blob name, bytes). Any failure after the blob is stored deletes it: the
    previous version stays active, no orphan is left (a kill -9 in between leaves one,
    harmless: no version names it)."""
    name = segment_name(meta["created_at"])
    # The build's plain arrays, packed as format 9 stores them (a merge's come packed).
    stored = arrays if packed else compact_segment(arrays)
    check_segment(stored, meta, name)  # a bug here must never reach the search service
    with store.writer(name) as fh:
        size = write_segment(fh, stored, meta)
    del stored
    try:
        with sessions.begin() as session:
            version_id = activate(session, name).id
    except Exception:
        store.delete(name)  # the previous version stays active; leave no orphan behind
        raise
    return version_id, name, size


def _prune_quietly(store: BlobStore, sessions: sessionmaker[Session], keep: int) -> None:
    if keep:
        try:
            prune_segments(store, sessions, keep)
        except SQLAlchemyError as exc:  # the new index is live: pruning waits for the next publish
            log.warning("could not prune old index versions (%s); the next publish tries again", exc)


def prune_segments(
    store: BlobStore, sessions: sessionmaker[Session], keep: int, now: float | None = None
) -> list[str]:
    """Delete every index version but the ``keep`` newest (the active one is the newest):
    the segment blobs no kept version names (a base is shared by every version its deltas
    made, a delta by the versions after it), then its row. Returns the blobs deleted.

    Every publish writes a new segment (hundreds of MB at 100,000 documents:
    docs/benchmarks.md), and nothing else removes the old ones. A failure here never
    undoes the publish: the segment is named in a warning and its version's row kept, so
    the next publish tries again. A segment blob no version names is deleted once older than
    ``ORPHAN_AFTER`` (a publish killed between its write and its activation left it); a
    younger one may be a publish about to activate it.
    """
    now = time.time() if now is None else now
    deleted: list[str] = []
    with sessions.begin() as session:
        versions = session.scalars(select(IndexVersion).order_by(IndexVersion.id.desc())).all()
        inactive = [v for v in versions if not v.active]
        kept = [v for v in versions if v.active] + inactive[: max(0, keep - 1)]
        named = {blob for version in kept for blob in version.segments}
        for version in inactive[max(0, keep - 1) :]:
            whole = True
            for blob in version.segments:
                if blob in named or blob in deleted:
                    continue
                try:
                    store.delete(blob)
                except (StorageError, OSError) as exc:  # S3 errors arrive as StorageError
                    log.warning(
                        "could not delete old index segment %s (%s); the next publish tries again",
                        blob,
                        exc,
                    )
                    whole = False
                    continue
                deleted.append(blob)
            if whole:
                session.delete(version)
        named |= {blob for version in versions for blob in version.segments}
        for blob in store.list("index/"):
            made = created_at_of(blob)
            if blob in named or blob in deleted or made is None or now - made < ORPHAN_AFTER:
                continue
            try:
                store.delete(blob)
            except (StorageError, OSError) as exc:
                log.warning("could not delete orphaned index segment %s (%s)", blob, exc)
                continue
            log.info("deleted index segment %s: no version names it (a publish was interrupted)", blob)
            deleted.append(blob)
    return deleted
