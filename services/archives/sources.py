"""Where a bundle's bytes are: a local folder or an ``s3://bucket/prefix/``, read as seekable files.

``open_location(url)`` gives a ``Location``; its ``open(name)`` is a buffered, seekable
binary file whether the bytes are on disk or in S3. In S3 every buffer refill is one
ranged GET (through ``services.storage.blobs``' client, so ``AWS_ENDPOINT_URL`` points
it at moto or another S3-compatible service): a worker reading one batch fetches that
batch's bytes, not the object. Errors name the file or object and what to check.
"""

from __future__ import annotations

import io
import os
from abc import ABC, abstractmethod
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlparse

from services.archives.errors import SourceError
from services.storage.blobs.blobstore import S3BlobStore
from services.storage.errors import StorageError

# 1 MiB a refill: a batch of a few hundred web captures is a few MB, so a handful of ranged
# GETs; smaller buffers cost a round trip per few records.
BUFFER_BYTES = 1024 * 1024


class Location(ABC):
    url: str

    @abstractmethod
    def names(self) -> list[str]:
        """The files below the location (relative names, sorted), hidden files left out."""

    @abstractmethod
    def open(self, name: str) -> IO[bytes]:
        """A seekable binary file over ``name``."""

    @abstractmethod
    def size(self, name: str) -> int: ...

    @abstractmethod
    def modified(self, name: str) -> float:
        """Last modification time (epoch seconds): a dump's time when its records carry none."""

    def describe(self, name: str) -> str:
        """The file's full path or URL, for messages."""
        return f"{self.url.rstrip('/')}/{name}"

    def read_bytes(self, name: str) -> bytes:
        with self.open(name) as fh:
            return fh.read()


class LocalFolder(Location):
    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.url = str(self.root)
        if not self.root.is_dir():
            raise SourceError(f"{self.root}: not a folder; give the bundle's folder (holding bundle.toml)")

    def names(self) -> list[str]:
        return sorted(
            p.relative_to(self.root).as_posix()
            for p in self.root.rglob("*")
            if p.is_file() and not any(part.startswith(".") for part in p.relative_to(self.root).parts)
        )

    def open(self, name: str) -> IO[bytes]:
        try:
            return (self.root / name).open("rb", buffering=BUFFER_BYTES)
        except OSError as exc:
            raise SourceError(
                f"{self.describe(name)}: cannot be read ({exc.strerror}); check it exists and its permissions"
            ) from exc

    def size(self, name: str) -> int:
        try:
            return (self.root / name).stat().st_size
        except OSError as exc:
            raise SourceError(f"{self.describe(name)}: cannot be read ({exc.strerror})") from exc

    def modified(self, name: str) -> float:
        return os.stat(self.root / name).st_mtime


class S3Prefix(Location):
    def __init__(self, bucket: str, prefix: str, endpoint_url: str | None = None, client: Any = None) -> None:
        self.store = S3BlobStore(bucket, prefix, endpoint_url=endpoint_url, client=client)
        self.url = self.store.url

    def _error(self, name: str, exc: Exception) -> SourceError:
        return SourceError(
            f"{self.describe(name)}: cannot be read ({exc}); check that the object exists, that these "
            "credentials may read it (s3:GetObject, s3:ListBucket) and AWS_ENDPOINT_URL"
        )

    def names(self) -> list[str]:
        try:
            return [n for n in self.store.list() if not any(p.startswith(".") for p in n.split("/"))]
        except StorageError as exc:
            raise self._error("", exc) from exc

    def open(self, name: str) -> IO[bytes]:
        return io.BufferedReader(_S3Raw(self, name, self.size(name)), buffer_size=BUFFER_BYTES)

    def size(self, name: str) -> int:
        try:
            return self.store.size(name)
        except StorageError as exc:
            raise self._error(name, exc) from exc

    def get(self, name: str, start: int, end: int) -> bytes:
        try:
            return self.store.get(name, start, end)
        except StorageError as exc:
            raise self._error(name, exc) from exc

    def modified(self, name: str) -> float:
        try:
            head = self.store.client.head_object(Bucket=self.store.bucket, Key=self.store.prefix + name)
        except Exception as exc:
            raise self._error(name, exc) from exc
        return float(head["LastModified"].timestamp())


class _S3Raw(io.RawIOBase):
    """An S3 object as a raw file: each read is one ranged GET from the current position."""

    def __init__(self, prefix: S3Prefix, name: str, size: int) -> None:
        self._prefix, self._name, self._size, self._pos = prefix, name, size, 0
        self.name = prefix.describe(name)

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def readinto(self, buffer: Any) -> int:
        end = min(self._size, self._pos + len(buffer))
        if end <= self._pos:
            return 0
        data = self._prefix.get(self._name, self._pos, end)
        buffer[: len(data)] = data
        self._pos += len(data)
        return len(data)


def open_location(url: str, endpoint_url: str | None = None) -> Location:
    """A bundle's place: a local folder (a path or ``file://``) or ``s3://bucket/prefix/``."""
    parsed = urlparse(str(url))
    if parsed.scheme == "s3":
        if not parsed.netloc:
            raise SourceError(f"{url}: names no bucket; use s3://bucket/prefix/")
        return S3Prefix(parsed.netloc, parsed.path.strip("/"), endpoint_url=endpoint_url)
    if parsed.scheme == "file":
        return LocalFolder(Path((parsed.netloc + parsed.path) if parsed.netloc else parsed.path))
    if parsed.scheme and len(parsed.scheme) > 1:
        raise SourceError(f"{url}: use a folder path or s3://bucket/prefix/")
    return LocalFolder(Path(url))
