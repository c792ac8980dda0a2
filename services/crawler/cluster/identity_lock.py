"""One live crawler per identity on a machine: a new process with the same identity takes
back its predecessor's leases at start (``crawl``), so it must never do that to one still
running. A lock file per identity under ``var_dir`` says which are live."""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Iterator
from pathlib import Path

from services.crawler.errors import CrawlerBusyError


@contextlib.contextmanager
def identity_lock(var_dir: Path, identity: str, partitions: str) -> Iterator[None]:
    """Hold the lock file of ``identity`` (host name and partitions) while the crawl runs;
    ``CrawlerBusyError`` when another process holds it."""
    path = Path(var_dir) / "crawler-locks" / (identity.replace("/", "_").replace(",", "_") + ".lock")
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            raise CrawlerBusyError(
                f"another crawler for partitions {partitions or 'all'} is running "
                f"from {var_dir} (lock {path}); give each crawler its own "
                "NIMBUS_PARTITION_IDS or wait for it to stop"
            ) from exc
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
