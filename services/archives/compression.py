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

import contextlib
import gzip
import io
import zlib
from collections.abc import Iterator
from typing import IO, Any, cast

from services.archives.errors import ArchiveError

GZIP_MAGIC = b"\x1f\x8b\x08"
BZ2_MAGIC = b"BZh"
_FEED = 64 * 1024  # compressed bytes handed to zlib at a time: what is left over is copied once


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


def bz2_block_map(reader: Any) -> dict[int, int]:
    """After ``reader`` (an ``indexed_bzip2`` file) was read to its end: compressed bit offset ->
    decompressed byte offset of every block, and of the end of the stream."""
    return {int(k): int(v) for k, v in reader.block_offsets().items()}


def seek_points(blocks: dict[int, int], start: int, end: int) -> list[list[int]]:
    """The (bit offset, byte offset) pairs a reader needs to read decoded bytes [start, end):
    the block holding ``start``, every block up to the first one at or past ``end``, or the
    end of the stream. indexed_bzip2 reads past the last one it is given, but then has to
    find each next block by searching bit by bit, several times slower."""
    ordered = sorted(blocks.items(), key=lambda kv: (kv[1], kv[0]))
    first = max((i for i, (_bit, byte) in enumerate(ordered) if byte <= start), default=0)
    last = next((i for i, (_bit, byte) in enumerate(ordered) if byte >= end), len(ordered) - 1)
    pairs = ordered[first : max(last, first + 1) + 1]
    return [[bit, byte] for bit, byte in pairs]


@contextlib.contextmanager
def open_decoded(
    fh: IO[bytes], codec: str, start: int = 0, points: list[list[int]] | None = None
) -> Iterator[IO[bytes]]:
    """The decompressed bytes of ``fh`` from byte ``start`` of the decompressed stream.

    indexed_bzip2's reader is always closed here: its threads abort the interpreter at
    exit when left open."""
    fh.seek(0)
    if codec == "plain":
        fh.seek(start)
        yield fh
    elif codec == "bz2":
        import indexed_bzip2

        with indexed_bzip2.IndexedBzip2File(fh, parallelization=1) as reader:
            if start:
                if points and len(points) >= 2:
                    reader.set_block_offsets({bit: byte for bit, byte in points})
                reader.seek(start)
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
