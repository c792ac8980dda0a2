"""Whole blocks on local disk for a blob store across the network.

Content and record blocks are written once under unique names and never changed (see
``block_pair``), so a local copy is never stale. The search service reads ten records per
results page by ranged reads; from S3 each is a request of tens of milliseconds. Here the
first read of a block is answered by a ranged read, as without the cache, and starts a
download of the whole block in the background; later reads are a ``pread`` of the local
copy. The copies are bounded by ``max_bytes``, the least recently read going first; a block
larger than that is never copied.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from services.storage.blobs.blobstore import BlobStore, FileBlobStore
from services.storage.errors import BlobNotFoundError, StorageError

log = logging.getLogger(__name__)


class BlockCache:
    def __init__(self, remote: BlobStore, cache_dir: Path, max_bytes: int) -> None:
        self.remote = remote
        self.local = FileBlobStore(cache_dir)
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._sizes: OrderedDict[str, int] = OrderedDict()  # least recently read first
        self._total = 0  # the sizes' sum
        self._pending: set[str] = set()
        self._too_big: set[str] = set()
        self._downloads = ThreadPoolExecutor(max_workers=2, thread_name_prefix="block-cache")
        # Copies left by an earlier run are used, the most recently written last.
        kept = [(path.stat(), path) for path in Path(cache_dir).rglob("*") if path.is_file()]
        for stat, path in sorted(kept, key=lambda item: item[0].st_mtime):
            if path.name.startswith((".part-", ".tmp-")):
                path.unlink(missing_ok=True)  # a download cut short by a stop
                continue
            self._keep(path.relative_to(cache_dir).as_posix(), stat.st_size)
        self._evict()

    @property
    def cached_bytes(self) -> int:
        return self._total

    def holds(self, name: str) -> bool:
        with self._lock:
            return name in self._sizes

    def get(self, name: str, start: int, end: int) -> bytes:
        """Bytes ``[start, end)`` of block ``name``: from the local copy when there is one."""
        with self._lock:
            local = name in self._sizes
            if local:
                self._sizes.move_to_end(name)
        if local:
            try:
                return self.local.get(name, start, end)
            except BlobNotFoundError:  # evicted between the check and the read
                pass  # read it from the store below, as a block never copied is
        data = self.remote.get(name, start, end)
        self._fetch_later(name)
        return data

    def close(self) -> None:
        self._downloads.shutdown(wait=True, cancel_futures=True)

    def _fetch_later(self, name: str) -> None:
        with self._lock:
            if name in self._pending or name in self._sizes or name in self._too_big or not self.max_bytes:
                return
            self._pending.add(name)
        try:
            self._downloads.submit(self._fetch, name)
        except RuntimeError:  # shut down: the service is stopping
            with self._lock:
                self._pending.discard(name)

    def _fetch(self, name: str) -> None:
        try:
            size = self.remote.size(name)
            if size > self.max_bytes:
                with self._lock:
                    self._too_big.add(name)
                return
            self.remote.download(name, self.local.root / name)
            with self._lock:
                self._keep(name, size)
            self._evict()
        except (StorageError, OSError) as exc:  # the ranged reads go on; a later read tries again
            log.warning("could not keep a local copy of %s: %s", name, exc)
        finally:
            with self._lock:
                self._pending.discard(name)

    def _keep(self, name: str, size: int) -> None:
        """Count a copy in (the lock held, or no other thread yet)."""
        self._total += size - self._sizes.get(name, 0)
        self._sizes[name] = size
        self._sizes.move_to_end(name)

    def _evict(self) -> None:
        while True:
            with self._lock:
                if self._total <= self.max_bytes or not self._sizes:
                    return
                name, size = self._sizes.popitem(last=False)
                self._total -= size
            self.local.delete(name)
