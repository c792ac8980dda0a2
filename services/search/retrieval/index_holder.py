"""Which index version the search service answers from: download a segment once, keep a
version until a newer one loads, hide what was removed since it was built.

A loaded ``SegmentIndex`` is never mutated: a new version, or the same version with other
documents removed, is a new object swapped in here, so a request that already holds the old
object finishes on it (the old memory map lives until its last user drops it).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path

import numpy as np
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from services.search.errors import SearchIndexError
from services.search.retrieval.segment import SegmentIndex
from services.search.retrieval.segment_set import SegmentSet
from services.search.retrieval.segment_set_tables import base_term_ids
from services.storage.blobs.blobstore import BlobStore
from services.storage.errors import StorageError
from services.storage.formats.delta import DeltaDocs
from services.storage.sql.commit_marks import CommitMark, removed_since
from services.storage.sql.index_versions import active_index

log = logging.getLogger(__name__)


def fetch_segment(blobs: BlobStore, name: str, cache_dir: Path) -> Path:
    """Copy segment blob ``name`` into ``cache_dir`` once; atomic, so readers never map half a file.

    Segments are immutable (a new version gets a new name), so a local file of
    the blob's size is the blob.
    """
    path = Path(cache_dir) / name.replace("/", "__")
    try:
        size = blobs.size(name)
        if path.is_file() and path.stat().st_size == size:
            return path
        return blobs.download(name, path)  # chunked and atomic (temp file ".part-*")
    except StorageError as exc:
        raise SearchIndexError(
            f"cannot fetch index segment {name!r} from {blobs.url}: {exc}; "
            "check NIMBUS_BLOB_URL or re-run `nimbus index`"
        ) from exc


STALE_PART_SECONDS = 3600.0  # a download unfinished for an hour was abandoned by a dead process


def prune_segments(cache_dir: Path, keep: Iterable[Path], now: float | None = None) -> list[Path]:
    """Delete cached segments other than ``keep``; returns the paths removed.

    Every published version leaves a local copy, so without this the cache
    grows by one segment per ``nimbus index`` for as long as the service runs.
    The holder keeps the active and the previous copy (requests may still be
    on it). Deleting a file another process still has memory-mapped is safe on
    POSIX: the mapping keeps the data until it is dropped, and a process that
    needs a pruned version downloads it again. Partial downloads (``.part-``)
    are only removed once abandoned, since another process may be writing one.
    """
    kept = {Path(p).resolve() for p in keep}
    now = time.time() if now is None else now
    removed = []
    try:
        candidates = sorted(Path(cache_dir).glob("*.nseg"))
    except OSError as exc:
        log.warning("cannot list segment cache %s for cleanup: %s", cache_dir, exc)
        return []
    for path in candidates:
        try:
            if path.resolve() in kept or not path.is_file():
                continue
            if path.name.startswith(".part-") and now - path.stat().st_mtime < STALE_PART_SECONDS:
                continue
            path.unlink()
            removed.append(path)
        except OSError as exc:  # gone already (another process pruned it), or no permission
            log.warning("cannot remove old segment %s: %s", path, exc)
    if removed:
        log.info("removed %d old index segment file(s) from %s", len(removed), cache_dir)
    return removed


class IndexHolder:
    """Hands out the active ``SegmentIndex`` and swaps in a new version without a restart.

    The database is asked for the active version at most every ``recheck_seconds``, by the
    request that finds the look due (two short queries; in a thread of its own the look
    cost the other requests more, waiting for the GIL, than it saved this one). A new
    version is downloaded and opened in a thread of the holder's own, as Lucene's
    ``SearcherManager`` is refreshed beside the searches: no request waits for it (a delta
    is published every minute of a crawl), they answer from the loaded version until the
    swap. Until a version is loaded, or with ``recheck_seconds`` 0 (tests and one-shot
    commands), the request loads it itself. A version that fails to load is logged and the
    old one stays in service. After a swap, cached segment files other than the new and the
    previous version are deleted (``prune_segments``).
    """

    def __init__(
        self,
        sessions: sessionmaker[Session],
        blobs: BlobStore,
        cache_dir: Path,
        recheck_seconds: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._sessions = sessions
        self._blobs = blobs
        self._cache_dir = Path(cache_dir)
        self.recheck_seconds = recheck_seconds
        self._clock = clock
        self._lock = threading.Lock()
        self._index: SegmentIndex | None = None
        self._opened: dict[str, SegmentIndex] = {}  # the served version's segments, by name
        self._base_ids: dict[str, np.ndarray] = {}  # each open delta's terms' ids in its base
        self._checked_at: float | None = None
        self._loader: threading.Thread | None = None  # the last load started in the background
        self.last_error: str | None = None

    def current(self) -> SegmentIndex | None:
        """The index to answer one request with (None while nothing is published)."""
        now = self._clock()
        if self._checked_at is not None and now - self._checked_at < self.recheck_seconds:
            return self._index
        # Until something is loaded every caller waits for the first load; afterwards a caller
        # never waits behind another's look or load.
        if not self._lock.acquire(blocking=self._index is None):
            return self._index
        handed_on = False  # the lock goes with a load started in the background
        try:
            if self._checked_at is None or self._checked_at <= now:
                wanted = self._look_up()
                self._checked_at = self._clock()
                if wanted is not None and (self._index is None or self.recheck_seconds <= 0):
                    self._load(wanted)
                elif wanted is not None:
                    loader = threading.Thread(
                        target=self._load_in_background, args=(wanted,), name="index-load", daemon=True
                    )
                    self._loader = loader
                    loader.start()
                    handed_on = True
            return self._index
        finally:
            if not handed_on:
                self._lock.release()

    def _load_in_background(self, wanted: tuple[int, tuple[str, ...]]) -> None:
        """``_load`` in the holder's thread (the lock taken by the request that started it)."""
        try:
            self._load(wanted)
        except Exception as exc:  # a thread's error reaches no caller: said here, tried again later
            self.last_error = f"index version {wanted[0]} not loaded: {exc!r}"
            log.exception("index version %s not loaded, keeping the previous one", wanted[0])
        finally:
            self._lock.release()

    def wait_for_load(self, timeout: float | None = None) -> bool:
        """Wait for a version being loaded in the background (``close``, and tests that
        publish a version and then search it); whether none is loading now."""
        loader = self._loader
        if loader is not None:
            loader.join(timeout)
            return not loader.is_alive()
        return True

    def close(self) -> None:
        """Let a load that is running end before the database it reads is closed."""
        self.wait_for_load()

    def fresh(self) -> bool:
        """Whether ``current()`` would answer at once, without asking the database or loading
        a version."""
        checked = self._checked_at
        return (
            self._index is not None and checked is not None and self._clock() - checked < self.recheck_seconds
        )

    def _look_up(self) -> tuple[int, tuple[str, ...]] | None:
        """Ask the database for the active version: the same as loaded (its removed documents
        read again), or none published, is done here; a version to load is returned."""
        try:
            with self._sessions() as session:
                version = active_index(session)
                wanted = None if version is None else (version.id, tuple(version.segments))
                if wanted is not None and self._index is not None and self._index.version_id == wanted[0]:
                    self._index = self._with_deletes(session, self._index)
                    return None
        except SQLAlchemyError as exc:
            self.last_error = f"cannot read the active index version from the database: {exc}"
            log.warning("%s", self.last_error)
            return None
        if wanted is None:
            self._index = None
        return wanted

    def _load(self, wanted: tuple[int, tuple[str, ...]]) -> None:
        """Open version ``wanted`` (id, segment names) and serve it; on failure keep the old."""
        try:
            index = self._open(wanted[0], wanted[1])
        except SearchIndexError as exc:
            self.last_error = str(exc)
            log.error("index version %s not loaded, keeping the previous one: %s", wanted[0], exc)
            return
        try:
            with self._sessions() as session:
                index = self._with_deletes(session, index)
        except SQLAlchemyError as exc:
            log.warning("index version %s: removed documents not read (%s)", wanted[0], exc)
        self.last_error = None
        log.info(
            "serving index version %s (%s, %d docs, %d terms)",
            index.version_id,
            " + ".join(wanted[1]),
            index.num_docs,
            index.num_terms,
        )
        previous, self._index = self._index, index  # requests see old or new, never half
        prune_segments(self._cache_dir, [*_paths(index), *(_paths(previous) if previous else [])])

    def _open(self, version_id: int, names: tuple[str, ...]) -> SegmentIndex:
        """The version of segments ``names`` (base first): one segment, or a ``SegmentSet``
        whose segments already open for the previous version are reused, not mapped again
        (a delta's publish adds one small segment to a base of hundreds of MB)."""
        parts = []
        for name in names:
            part = self._opened.get(name)
            if part is None:
                path = fetch_segment(self._blobs, name, self._cache_dir)
                part = SegmentIndex.open(path, version_id=version_id, segment=name)
            parts.append(part)
        self._opened = {p.segment: p for p in parts}
        if len(parts) == 1:
            return replace(parts[0], version_id=version_id) if parts[0].version_id != version_id else parts[0]
        deltas = []
        for part in parts[1:]:
            docs = DeltaDocs.from_meta(part.meta)
            if docs is None:
                raise SearchIndexError(
                    f"index version {version_id} lists {part.segment} as a delta of {names[0]}, but it "
                    "is a whole segment; publish the index again (`nimbus index`)"
                )
            deltas.append((part, docs))
            if part.segment not in self._base_ids:
                self._base_ids[part.segment] = base_term_ids(parts[0], part)
        self._base_ids = {name: ids for name, ids in self._base_ids.items() if name in self._opened}
        return SegmentSet.combine(version_id, parts[0], deltas, base_ids=self._base_ids)

    @staticmethod
    def _with_deletes(session: Session, index: SegmentIndex) -> SegmentIndex:
        """``index`` hiding the documents removed since it was built (``removed_since``), the
        same object when they have not changed; a version without a commit mark (built before
        marks) hides nothing."""
        mark = CommitMark.from_meta(index.meta)
        if mark is None:
            return index
        removed = np.asarray(removed_since(session, mark), dtype=np.uint32)
        view = index.with_deleted(removed[removed < index.num_docs])
        if view is not index:
            hidden = len(view.deleted)
            log.info("index version %s: %d documents removed since it was built", index.version_id, hidden)
        return view


def _paths(index: SegmentIndex) -> list[Path]:
    """The local files ``index`` maps: its segments' (a set's base and deltas)."""
    return [p.path for p in index.parts] if isinstance(index, SegmentSet) else [index.path]
