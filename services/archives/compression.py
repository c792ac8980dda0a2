"""Compressed archives as readers see them: gzip members with their offsets, and decoded views
that start at a byte offset of the decompressed stream.

Two coordinate systems, one per kind of file (``batches`` records which a batch uses):

- **members**: a web archive compressed record by record (``.warc.gz``, ``.arc.gz``) is cut
  at gzip member starts, offsets in the compressed file. ``GzipMembers`` walks them; a
  member that does not inflate is reported at its offset and the walk goes on at the next
  gzip header found after it.
- **decoded**: a dump or a text file is cut at record starts in its decompressed bytes.
  ``open_decoded`` gives a file positioned at such an offset: a plain file seeks; a
  bz2 file seeks through ``indexed_bzip2`` with the two block offsets recorded for the
  batch at registration (``seek_points``), so no worker reads the stream from its start;
  a gzip text file inflates from the start (rapidgzip's index would avoid that: not used).
"""

from __future__ import annotations

import bz2
import contextlib
import gzip
import io
import zlib
from collections.abc import Iterator
from typing import IO, Any, cast

from services.archives.errors import ArchiveError

GZIP_MAGIC = b"\x1f\x8b\x08"
BZ2_MAGIC = b"BZh"
_FEED = 16 * 1024  # compressed bytes handed to zlib at a time: a member's leftover is copied once


class DamageError(ArchiveError):
    """Bytes that cannot be read as what they claim to be, at ``offset`` of the file."""

    def __init__(self, offset: int, what: str, truncated: bool = False) -> None:
        super().__init__(what)
        self.offset, self.what, self.truncated = offset, what, truncated


def sniff(head: bytes) -> str:
    """``gzip``, ``bz2`` or ``plain``, from a file's first bytes (names lie, magic numbers do not)."""
    if head.startswith(GZIP_MAGIC):
        return "gzip"
    if head.startswith(BZ2_MAGIC) and head[3:4].isdigit():
        return "bz2"
    return "plain"


class _Input:
    """A file's bytes from an offset on, with the offset of the next byte and push-back."""

    def __init__(self, fh: IO[bytes], offset: int) -> None:
        self.fh, self.offset = fh, offset
        fh.seek(offset)
        self._back = b""

    def take(self, size: int = _FEED) -> bytes:
        if self._back:
            data, self._back = self._back[:size], self._back[size:]
        else:
            data = self.fh.read(size)
        self.offset += len(data)
        return data

    def give_back(self, data: bytes) -> None:
        if data:
            self._back = data + self._back
            self.offset -= len(data)

    def seek(self, offset: int) -> None:
        self._back = b""
        self.offset = offset
        self.fh.seek(offset)


class Member(io.RawIOBase):
    """One gzip member's decompressed bytes, read lazily; ``end`` is the next member's offset
    once this one has been read to its end."""

    def __init__(self, source: _Input, name: str) -> None:
        self._in, self._name = source, name
        self.start = source.offset
        self.end: int | None = None
        self._z: Any = zlib.decompressobj(16 + zlib.MAX_WBITS)
        self._tail = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        room = len(buffer)
        while self.end is None:
            data = self._tail or self._in.take()
            if not data:
                raise DamageError(
                    self.start, f"gzip member cut short at byte {self._in.offset:,}", truncated=True
                )
            try:
                out = self._z.decompress(data, room)
            except zlib.error as exc:
                raise DamageError(self.start, f"gzip member does not inflate ({exc})") from exc
            self._tail = self._z.unconsumed_tail
            if self._z.eof:
                self._in.give_back(self._z.unused_data)
                self.end = self._in.offset
            if out:
                buffer[: len(out)] = out
                return len(out)
        return 0

    def drain(self) -> int:
        """Read to the member's end (discarding): the next member's offset."""
        scratch = bytearray(_FEED)
        while self.end is None:
            self.readinto(scratch)
        return self.end


class GzipMembers:
    """The members of a gzip file from ``start``: ``next()`` gives the next one, or None at the end
    of the file or at ``stop`` (members starting at or after it belong to the next batch)."""

    def __init__(self, fh: IO[bytes], name: str, start: int, stop: int) -> None:
        self._in, self._name, self._stop = _Input(fh, start), name, stop

    def next(self) -> Member | None:
        head = self._in.take(len(GZIP_MAGIC))
        self._in.give_back(head)
        if not head or self._in.offset >= self._stop:
            return None
        if head != GZIP_MAGIC:
            bad = self._in.offset
            found = self.resync(bad + 1)
            raise DamageError(bad, f"not a gzip member{'' if found else ' (nothing readable after it)'}")
        return Member(self._in, self._name)

    def resync(self, after: int) -> bool:
        """Move to the next gzip header at or after ``after``; False (at the end) when none."""
        self._in.seek(after)
        carry = b""
        while True:
            at = self._in.offset - len(carry)
            data = carry + self._in.take()
            if len(data) == len(carry):
                return False
            found = data.find(GZIP_MAGIC)
            if found >= 0:
                self._in.seek(at + found)
                return True
            carry = data[-(len(GZIP_MAGIC) - 1) :]

    def skip_member(self, member: Member) -> None:
        """After a damaged member: go on at the next gzip header after its start."""
        self.resync(member.start + 1)


# --- decoded views --------------------------------------------------------------------------


def bz2_block_map(stream: IO[bytes]) -> dict[int, int]:
    """After a bz2 stream from ``open_decoded`` was read to its end, or to damage: compressed
    bit offset -> decompressed byte offset of every block found, and of the stream's end."""
    raw = getattr(stream, "raw", None)
    return raw.block_map() if isinstance(raw, _Bz2Reader) else {}


def bz2_damaged(stream: IO[bytes]) -> bool:
    raw = getattr(stream, "raw", None)
    return isinstance(raw, _Bz2Reader) and raw.damaged


class Bz2Streams(io.RawIOBase):
    """The decoded bytes of the bz2 streams that start in [start, stop) of a file, read with the
    standard module: a multistream dump's batch, or a damaged file up to its damage (every
    complete block comes out before the error)."""

    def __init__(self, fh: IO[bytes], start: int, stop: int) -> None:
        fh.seek(start)
        self._fh, self._stop = fh, stop
        self._buf, self._buf_at = b"", start  # compressed bytes read, not yet fed; their offset
        self._z: Any = bz2.BZ2Decompressor()

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while True:
            if self._z.eof:
                self._buf = self._z.unused_data + self._buf
                self._buf_at -= len(self._z.unused_data)
                if self._buf_at >= self._stop:
                    return 0
                if not self._buf:
                    self._buf = self._fh.read(64 * 1024)
                    if not self._buf:
                        return 0
                self._z = bz2.BZ2Decompressor()
            data = b""
            if self._z.needs_input:
                data, self._buf = self._buf or self._fh.read(64 * 1024), b""
                if not data:
                    raise EOFError(f"the bz2 stream is cut short at byte {self._buf_at:,}")
                self._buf_at += len(data)
            out = self._z.decompress(data, len(buffer))
            if out:
                buffer[: len(out)] = out
                return len(out)


class _Bz2Reader(io.RawIOBase):
    """bz2 through indexed_bzip2 (seeks with block offsets), and through the standard ``bz2``
    module from the start once indexed_bzip2 fails: it refuses a damaged file as a whole
    (the first read after a seek fails), while ``bz2`` reads every block up to the damage.
    indexed_bzip2's reader is always closed: its threads abort the interpreter at exit when
    left open."""

    def __init__(self, fh: IO[bytes], start: int, points: list[list[int]] | None, indexed: bool) -> None:
        import indexed_bzip2

        self._fh, self._pos = fh, start
        self._blocks: dict[int, int] = {}
        self._slow: Any = None
        self._fast: Any = None
        if not indexed:
            self._fall_back()
            return
        self._fast = indexed_bzip2.IndexedBzip2File(fh, parallelization=1)
        try:
            if start:
                if points and len(points) >= 2:
                    self._fast.set_block_offsets({bit: byte for bit, byte in points})
                self._fast.seek(start)
        except decode_errors():
            self._fall_back()

    def readable(self) -> bool:
        return True

    def _fall_back(self) -> None:
        if self._fast is not None:
            self._blocks = self.block_map()
            self._fast.close()
            self._fast = None
        self._slow = io.BufferedReader(Bz2Streams(self._fh, 0, 2**62), 128 * 1024)
        left = self._pos
        while left > 0:
            skipped = len(self._slow.read(min(left, 1024 * 1024)))
            if not skipped:
                break
            left -= skipped

    def readinto(self, buffer: Any) -> int:
        if self._fast is not None:
            try:
                data = self._fast.read(len(buffer))
            except decode_errors():
                self._fall_back()
        if self._fast is None:
            data = self._slow.read1(len(buffer))
        buffer[: len(data)] = data
        self._pos += len(data)
        return len(data)

    @property
    def damaged(self) -> bool:
        """Whether indexed_bzip2 gave up on this file (registration records it, so that workers
        go straight to the standard module)."""
        return self._fast is None

    def block_map(self) -> dict[int, int]:
        if self._fast is None:
            return self._blocks
        try:
            return {int(k): int(v) for k, v in self._fast.available_block_offsets().items()}
        except decode_errors():
            return {}

    def close(self) -> None:
        if self._fast is not None:
            self._fast.close()
            self._fast = None
        if self._slow is not None:
            self._slow.close()
        super().close()


def seek_points(blocks: dict[int, int], start: int, end: int) -> list[list[int]]:
    """The (bit offset, byte offset) pairs a reader needs to read decoded bytes [start, end):
    the block holding ``start``, every block up to the first one at or past ``end``, and the
    one after it (indexed_bzip2 takes the last pair given for the end of the stream: the
    element that straddles ``end`` must still be readable past it). Without pairs it has to
    find each block by searching bit by bit, several times slower."""
    ordered = sorted(blocks.items(), key=lambda kv: (kv[1], kv[0]))
    first = max((i for i, (_bit, byte) in enumerate(ordered) if byte <= start), default=0)
    last = next((i for i, (_bit, byte) in enumerate(ordered) if byte >= end), len(ordered) - 1)
    pairs = ordered[first : max(last + 1, first + 1) + 1]
    return [[bit, byte] for bit, byte in pairs]


@contextlib.contextmanager
def open_decoded(
    fh: IO[bytes], codec: str, start: int = 0, points: list[list[int]] | None = None, *, indexed: bool = True
) -> Iterator[IO[bytes]]:
    """The decompressed bytes of ``fh`` from byte ``start`` of the decompressed stream."""
    fh.seek(0)
    if codec == "plain":
        fh.seek(start)
        yield fh
    elif codec == "bz2":
        with io.BufferedReader(_Bz2Reader(fh, start, points, indexed), 128 * 1024) as reader:
            yield reader
    elif codec == "gzip":
        with gzip.GzipFile(fileobj=fh) as inflated:
            if start:
                inflated.seek(start)
            yield cast(IO[bytes], inflated)
    else:
        raise ValueError(f"unknown codec {codec!r}")


def decode_errors() -> tuple[type[BaseException], ...]:
    """What the decompressors raise on damaged or truncated input (indexed_bzip2 raises
    RuntimeError and ValueError from C++)."""
    return (OSError, EOFError, zlib.error, RuntimeError, ValueError)
