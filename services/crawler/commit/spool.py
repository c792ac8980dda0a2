"""The write-ahead spool: every answered URL on local disk until its batch is committed.

The committer writes blocks and rows every few seconds; without a spool, a
crawler killed between two flushes would fetch the pages of that window
again. Each finished ``UrlResult`` (body and parse included) is appended to
the current segment file as soon as it completes; a kill -9 cannot lose what
``write`` already handed to the operating system. A restart of the same
crawler (same identity) reads the segments back and answers the batches it
takes back from them instead of the network.

Segments rotate at every flush; a segment is deleted once every result in
it has been committed (its refcount of results awaiting a commit is zero),
so nothing is ever written twice. A torn last record (killed mid-write) is
ignored on reading.
"""

from __future__ import annotations

import logging
import os
import pickle
import struct
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import BinaryIO

from services.crawler.commit.results import UrlResult

log = logging.getLogger(__name__)

_LENGTH = struct.Struct("<Q")


class Spool:
    """Segments of pickled results, each deleted once none of its results awaits a commit."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        existing = self._segments()
        self._next = (max(existing) + 1) if existing else 0
        self._file: BinaryIO | None = None
        self.current = -1
        self._live: Counter[int] = Counter()  # segment -> results in it awaiting a commit
        self._where: dict[str, int] = {}  # url_id -> segment holding its latest result

    def _segments(self) -> list[int]:
        return sorted(int(p.stem.split("-")[1]) for p in self.directory.glob("segment-*.spool"))

    def _path(self, number: int) -> Path:
        return self.directory / f"segment-{number:08d}.spool"

    def recover(self) -> dict[str, UrlResult]:
        """Results a killed predecessor spooled, by url_id; their segments stay until committed."""
        found: dict[str, UrlResult] = {}
        for number in self._segments():
            for result in read_segment(self._path(number)):
                found[result.url_id] = result
                self._track(result.url_id, number)
        self._open()
        if found:
            log.warning("recovered %d fetched URLs from the spool in %s", len(found), self.directory)
        return found

    def _open(self) -> None:
        self.current, self._next = self._next, self._next + 1
        self._file = self._path(self.current).open("ab")

    def _writing(self) -> BinaryIO:
        if self._file is None:
            raise ValueError(f"spool {self.directory} is not open: call recover() first")
        return self._file

    def _track(self, url_id: str, segment: int) -> None:
        old = self._where.get(url_id)
        if old is not None:
            self._live[old] -= 1
        self._where[url_id] = segment
        self._live[segment] += 1

    def append(self, result: UrlResult) -> None:
        data = pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)
        out = self._writing()
        out.write(_LENGTH.pack(len(data)) + data)
        out.flush()  # in the OS's hands: survives kill -9
        self._track(result.url_id, self.current)

    def rotate(self) -> None:
        """Start a new segment (at each flush), so that old ones can be deleted."""
        self._writing().close()
        self._open()
        self._collect()

    def committed(self, url_ids: Iterable[str]) -> None:
        """These URLs' results are in the database: their segments may go."""
        for url_id in url_ids:
            segment = self._where.pop(url_id, None)
            if segment is not None:
                self._live[segment] -= 1
        self._collect()

    def _collect(self) -> None:
        for segment in self._segments():
            if segment != self.current and self._live[segment] <= 0:
                self._path(segment).unlink(missing_ok=True)
                self._live.pop(segment, None)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        self._collect()


def read_segment(path: Path) -> Iterable[UrlResult]:
    """The results in one segment file, in write order; a torn last record is left out.

    Safe on a segment another process is still appending to (tests and tools read it so).
    """
    try:
        data = path.read_bytes()
    except OSError as exc:
        log.warning("cannot read spool segment %s (%s); its URLs will be fetched again", path, exc)
        return
    pos = 0
    while pos + _LENGTH.size <= len(data):
        (length,) = _LENGTH.unpack_from(data, pos)
        start, end = pos + _LENGTH.size, pos + _LENGTH.size + length
        if end > len(data):
            break  # torn last record: the process died while writing it
        try:
            result = pickle.loads(data[start:end])  # a fetched page is parsed again here
        except Exception as exc:  # noqa: BLE001 - any record that does not read back is fetched again
            # Not only corrupt bytes: a page the parser now fails on, whatever the error,
            # must not stop every restart of this crawler at the same segment.
            log.warning("unreadable record in spool segment %s (%r); its URL is fetched again", path, exc)
        else:
            if isinstance(result, UrlResult):
                yield result
        pos = end


def spool_dir(var_dir: Path, identity: str) -> Path:
    """One spool per crawler identity (host name and partitions), like its lock file."""
    safe = identity.replace("/", "_").replace(",", "_").replace(os.sep, "_")
    return Path(var_dir) / "spool" / safe
