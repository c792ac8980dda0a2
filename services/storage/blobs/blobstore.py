"""Blob stores: named immutable byte strings, on local disk or in S3.

Both backends offer ranged reads, so a single document is read from a 200 MB
content block without fetching the block. The backend is chosen by URL only:
``file://var/blobs`` (relative or absolute path) or ``s3://bucket/prefix``;
``AWS_ENDPOINT_URL`` (passed in through Settings) points boto3 at moto or
another S3-compatible service.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from abc import ABC, abstractmethod
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO
from urllib.parse import urlparse

from services.storage.errors import BlobNotFoundError, StorageError


class BlobStore(ABC):
    url: str
    # Reads cost a network round trip (S3): callers with several to make overlap them in
    # threads. Local reads are cheaper done in turn (no thread hand-off, no GIL contention).
    remote: bool = False

    @abstractmethod
    def put(self, name: str, data: bytes) -> None:
        """Store ``data`` under ``name`` atomically (readers never see half a blob)."""

    @abstractmethod
    def get(self, name: str, start: int | None = None, end: int | None = None) -> bytes:
        """Bytes ``[start, end)`` of a blob (the whole blob by default)."""

    @abstractmethod
    def size(self, name: str) -> int: ...

    @abstractmethod
    def list(self, prefix: str = "") -> Iterator[str]:
        """Names below ``prefix``, sorted."""

    @abstractmethod
    def delete(self, name: str) -> None: ...

    @abstractmethod
    def writer(self, name: str) -> contextlib.AbstractContextManager[BinaryIO]:
        """A file to write a large blob into, stored under ``name`` when the block ends
        without an error (atomically, as ``put``); nothing is stored after an error.

        An index segment is written array by array into it instead of being
        assembled in memory first (hundreds of MB for 100,000 documents).
        """

    def exists(self, name: str) -> bool:
        try:
            self.size(name)
        except BlobNotFoundError:
            return False
        return True

    def local_file(self, name: str, cache: Path) -> Path:
        """A local file holding blob ``name``, to memory-map: ``download`` to ``cache``, or the
        blob's own file where it is one (``FileBlobStore``: no copy of a large segment)."""
        return self.download(name, cache)

    def download(self, name: str, path: Path) -> Path:
        """Copy a blob to a local file atomically, in chunks (index segments for memory-mapping).

        Readers of ``path`` see the old file or the complete new one, never a
        partial copy; memory stays flat however large the blob is.
        """
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".part-")
        try:
            with os.fdopen(fd, "wb") as fh:
                for chunk in self.iter_chunks(name):
                    fh.write(chunk)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return path

    def iter_chunks(self, name: str, chunk_size: int = 8 * 1024 * 1024) -> Iterator[bytes]:
        """The blob's bytes in ranged pieces (backends may stream more cleverly)."""
        size = self.size(name)
        for start in range(0, size, chunk_size):
            yield self.get(name, start, min(size, start + chunk_size))


def _check_name(name: str) -> str:
    if not name or name.startswith("/") or ".." in name.split("/"):
        raise StorageError(f"invalid blob name {name!r}: use a relative path without '..'")
    return name


class FileBlobStore(BlobStore):
    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.url = f"file://{self.root}"

    def _path(self, name: str) -> Path:
        return self.root / _check_name(name)

    def put(self, name: str, data: bytes) -> None:
        with self.writer(name) as fh:
            fh.write(data)

    def local_file(self, name: str, cache: Path) -> Path:
        """The blob's own file: blobs are never written in place (``writer`` renames a new
        file over the name), so a memory map of it stays whole."""
        path = self._path(name)
        if not path.is_file():
            raise BlobNotFoundError(f"blob {name!r} not found in {self.url}")
        return path

    @contextlib.contextmanager
    def writer(self, name: str) -> Iterator[BinaryIO]:
        """Written in place beside its final name, then renamed: no copy."""
        path = self._path(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as fh:
                yield fh
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def get(self, name: str, start: int | None = None, end: int | None = None) -> bytes:
        if end is not None:
            return self._read_range(name, start or 0, end)
        path = self._path(name)
        try:
            with path.open("rb") as fh:
                if start:
                    fh.seek(start)
                if end is None:
                    return fh.read()
                return fh.read(max(0, end - (start or 0)))
        except FileNotFoundError as exc:
            raise BlobNotFoundError(f"blob {name!r} not found in {self.url}") from exc

    def _read_range(self, name: str, start: int, end: int) -> bytes:
        """A ranged read with one pread on a plain descriptor: a results page makes ten (its
        records), and a buffered file object and a Path cost more than the read."""
        try:
            fd = os.open(os.path.join(self.root, _check_name(name)), os.O_RDONLY)
        except FileNotFoundError as exc:
            raise BlobNotFoundError(f"blob {name!r} not found in {self.url}") from exc
        try:
            parts, at = [], start
            while at < end:
                part = os.pread(fd, end - at, at)
                if not part:  # past the end of the blob: what there is, as a file read gives
                    break
                parts.append(part)
                at += len(part)
            return b"".join(parts)
        finally:
            os.close(fd)

    def size(self, name: str) -> int:
        try:
            return self._path(name).stat().st_size
        except FileNotFoundError as exc:
            raise BlobNotFoundError(f"blob {name!r} not found in {self.url}") from exc

    def list(self, prefix: str = "") -> Iterator[str]:
        names = []
        for path in self.root.rglob("*"):
            if path.is_file() and not path.name.startswith(".tmp-"):
                rel = path.relative_to(self.root).as_posix()
                if rel.startswith(prefix):
                    names.append(rel)
        yield from sorted(names)

    def delete(self, name: str) -> None:
        self._path(name).unlink(missing_ok=True)


class S3BlobStore(BlobStore):
    remote = True

    def __init__(
        self, bucket: str, prefix: str = "", endpoint_url: str | None = None, client: Any = None
    ) -> None:
        import boto3

        self.bucket = bucket
        self.prefix = prefix.strip("/") + "/" if prefix.strip("/") else ""
        self.url = f"s3://{bucket}/{self.prefix}"
        # boto3 clients are built at run time from service models: no static type to give.
        self.client: Any = client or boto3.client("s3", endpoint_url=endpoint_url)

    def _key(self, name: str) -> str:
        return self.prefix + _check_name(name)

    def _translate(self, exc: Exception, name: str) -> Exception:
        # A ClientError carries the service's answer; a BotoCoreError (a connection reset, a
        # body cut short) has none, or an attribute set to None.
        code = (getattr(exc, "response", None) or {}).get("Error", {}).get("Code", "")
        if code in {"NoSuchKey", "404", "NotFound"}:
            return BlobNotFoundError(f"blob {name!r} not found in {self.url}")
        if code == "NoSuchBucket":
            return StorageError(f"bucket {self.bucket!r} does not exist: create it or fix NIMBUS_BLOB_URL")
        return StorageError(f"S3 error on {name!r} in {self.url}: {exc}")

    def put(self, name: str, data: bytes) -> None:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            self.client.put_object(Bucket=self.bucket, Key=self._key(name), Body=data)
        except (ClientError, BotoCoreError) as exc:
            raise self._translate(exc, name) from exc

    @contextlib.contextmanager
    def writer(self, name: str) -> Iterator[BinaryIO]:
        """Spooled to a local temporary file, then uploaded in parts (boto3's managed
        transfer): a single PUT stops at 5 GB, a segment of millions of documents does not."""
        from botocore.exceptions import BotoCoreError, ClientError

        with tempfile.TemporaryFile() as fh:
            yield fh
            fh.seek(0)
            try:
                self.client.upload_fileobj(fh, self.bucket, self._key(name))
            except (ClientError, BotoCoreError) as exc:
                raise self._translate(exc, name) from exc

    def get(self, name: str, start: int | None = None, end: int | None = None) -> bytes:
        from botocore.exceptions import BotoCoreError, ClientError

        kwargs = {"Bucket": self.bucket, "Key": self._key(name)}
        if start is not None or end is not None:
            if end is not None and end <= (start or 0):
                return b""
            last = "" if end is None else str(end - 1)
            kwargs["Range"] = f"bytes={start or 0}-{last}"
        try:
            data: bytes = self.client.get_object(**kwargs)["Body"].read()
            return data
        except (ClientError, BotoCoreError) as exc:
            raise self._translate(exc, name) from exc

    def size(self, name: str) -> int:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            return int(self.client.head_object(Bucket=self.bucket, Key=self._key(name))["ContentLength"])
        except (ClientError, BotoCoreError) as exc:
            raise self._translate(exc, name) from exc

    def list(self, prefix: str = "") -> Iterator[str]:
        from botocore.exceptions import BotoCoreError, ClientError

        paginator = self.client.get_paginator("list_objects_v2")
        names = []
        try:
            for page in paginator.paginate(Bucket=self.bucket, Prefix=self.prefix + prefix):
                for obj in page.get("Contents", []):
                    names.append(obj["Key"][len(self.prefix) :])
        except (ClientError, BotoCoreError) as exc:
            raise self._translate(exc, prefix) from exc
        yield from sorted(names)

    def delete(self, name: str) -> None:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            self.client.delete_object(Bucket=self.bucket, Key=self._key(name))
        except (ClientError, BotoCoreError) as exc:
            raise self._translate(exc, name) from exc

    def iter_chunks(self, name: str, chunk_size: int = 8 * 1024 * 1024) -> Iterator[bytes]:
        """One GET, read as a stream: no per-chunk request round trips."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            body = self.client.get_object(Bucket=self.bucket, Key=self._key(name))["Body"]
            yield from body.iter_chunks(chunk_size)
        except (ClientError, BotoCoreError) as exc:
            raise self._translate(exc, name) from exc


def open_blobstore(url: str, endpoint_url: str | None = None) -> BlobStore:
    """Build the backend a ``file://`` or ``s3://`` URL names."""
    parsed = urlparse(url)
    if parsed.scheme == "file":
        # file://var/blobs is relative (netloc "var"); file:///abs/path is absolute.
        path = (parsed.netloc + parsed.path) if parsed.netloc else parsed.path
        return FileBlobStore(Path(path))
    if parsed.scheme == "s3":
        if not parsed.netloc:
            raise StorageError(f"blob URL {url!r} names no bucket: use s3://bucket/prefix")
        return S3BlobStore(parsed.netloc, parsed.path, endpoint_url=endpoint_url)
    raise StorageError(f"blob URL {url!r}: use file://path or s3://bucket/prefix")
