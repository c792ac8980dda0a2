"""Records of a web archive file (WARC or ARC), cut by their declared lengths: ``Frame``s.

Shared by ``warc`` and ``arc``, which differ only in how a record's header reads
(``HeaderParser``). A file is either compressed record by record (each gzip member a
record, offsets those of the members) or plain (offsets those of the records). A
record over the size cap is streamed past (a plain file seeks over it, a gzip member
is inflated and discarded piecewise) and comes out as a ``too_large`` frame: never
held whole. DamageError comes out as a frame with ``damage`` set, naming the offset, and
reading goes on: at the next gzip member, or, in a plain file, at the next line that
starts a record.

Written here rather than taken from warcio or fastwarc: warcio stops at the first damaged
record, fastwarc stops or (quirks mode) skips it without a word, both end silently at a
truncated gzip member, and fastwarc reads no ARC (docs/benchmarks.md, "Archive readers").
"""

from __future__ import annotations

import io
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import IO

from services.archives.compression import DamageError, GzipMembers, Member, sniff

MAX_LINE = 64 * 1024
MAX_HEADER = 256 * 1024  # a record header past this is garbage, not a header
_STREAM_BUFFER = 16384


@dataclass
class Header:
    fields: dict[str, str]  # WARC: lower-cased names; ARC: url, ip, date, type
    length: int  # the block's declared length
    version: str = ""


@dataclass
class Frame:
    offset: int
    header: Header | None = None
    block: bytes | None = None  # None when too large, or when blocks were not asked for
    too_large: bool = False
    damage: DamageError | None = None
    extra: dict[str, str] = field(default_factory=dict)


class HeaderParser(ABC):
    """How one kind of archive writes a record's header, and how a record ends."""

    trailer = b"\r\n\r\n"

    @abstractmethod
    def parse(self, stream: IO[bytes]) -> Header | None:
        """The next record's header, or None at a clean end; ``DamageError`` (offset 0) when bad."""

    @abstractmethod
    def starts_record(self, line: bytes) -> bool:
        """Whether a line of a plain file can begin a record (for reading on after damage)."""


def frames(
    fh: IO[bytes], parser: HeaderParser, start: int, stop: int, *, cap: int, blocks: bool = True
) -> Iterator[Frame]:
    """The records that start in [start, stop) of ``fh``; ``cap``: the largest block read."""
    fh.seek(0)
    gzipped = sniff(fh.read(4)) == "gzip"
    if gzipped:
        yield from _gzip_frames(fh, parser, start, stop, cap, blocks)
    else:
        yield from _plain_frames(fh, parser, start, stop, cap, blocks)


def _gzip_frames(
    fh: IO[bytes], parser: HeaderParser, start: int, stop: int, cap: int, blocks: bool
) -> Iterator[Frame]:
    members = GzipMembers(fh, getattr(fh, "name", ""), start, stop)
    while True:
        try:
            member = members.next()
        except DamageError as damage:
            yield Frame(damage.offset, damage=damage)
            continue
        if member is None:
            return
        stream = io.BufferedReader(member, _STREAM_BUFFER)
        try:
            while True:
                header = parser.parse(stream)
                if header is None:
                    break
                yield _frame(stream, member.start, header, parser, cap, blocks, in_member=True)
            member.drain()
        except DamageError as damage:
            yield Frame(member.start, damage=DamageError(member.start, damage.what, damage.truncated))
            if member.end is None:
                try:
                    member.drain()
                except DamageError:
                    members.skip_member(member)


def _plain_frames(
    fh: IO[bytes], parser: HeaderParser, start: int, stop: int, cap: int, blocks: bool
) -> Iterator[Frame]:
    fh.seek(start)
    while True:
        _skip_blank_lines(fh)
        offset = fh.tell()
        if offset >= stop:
            return
        try:
            header = parser.parse(fh)
            if header is None:
                return
            yield _frame(fh, offset, header, parser, cap, blocks, in_member=False)
        except DamageError as damage:
            yield Frame(offset, damage=DamageError(offset, damage.what, damage.truncated))
            if damage.truncated or not _resync(fh, parser, offset + 1):
                return


def _frame(
    stream: IO[bytes],
    offset: int,
    header: Header,
    parser: HeaderParser,
    cap: int,
    blocks: bool,
    in_member: bool,
) -> Frame:
    if header.length > cap or not blocks:
        _skip(stream, header.length, in_member)
        block = None
    else:
        block = stream.read(header.length)
        if len(block) < header.length:
            raise DamageError(
                0, f"the file ends inside the record ({len(block):,} of {header.length:,} bytes)", True
            )
    _end_of_record(stream, parser, header)
    return Frame(offset, header, block, too_large=header.length > cap)


def _skip(stream: IO[bytes], length: int, in_member: bool) -> None:
    if not in_member and stream.seekable():
        here = stream.tell()
        stream.seek(here + length)
        if stream.read(1):
            stream.seek(-1, io.SEEK_CUR)
        elif stream.tell() < here + length:
            raise DamageError(0, "the file ends inside the record", True)
        return
    left = length
    while left > 0:
        got = stream.read(min(left, _STREAM_BUFFER))
        if not got:
            raise DamageError(0, "the file ends inside the record", True)
        left -= len(got)


def _end_of_record(stream: IO[bytes], parser: HeaderParser, header: Header) -> None:
    """A record ends with its trailer (CR/LF bytes); anything else means the declared length
    was wrong, and the record's bytes cannot be trusted."""
    peeked = _peek(stream, len(parser.trailer) + 8)
    ends = len(peeked) - len(peeked.lstrip(b"\r\n"))
    after = peeked[ends:]
    if ends == 0 and after:
        raise DamageError(
            0, f"declared length {header.length:,} does not end at the record's end (next: {after[:16]!r})"
        )
    stream.read(min(ends, len(parser.trailer)))


def _peek(stream: IO[bytes], size: int) -> bytes:
    peek = getattr(stream, "peek", None)
    if peek is not None:
        return bytes(peek(size)[:size])
    here = stream.tell()
    data = stream.read(size)
    stream.seek(here)
    return data


def _skip_blank_lines(fh: IO[bytes]) -> None:
    while True:
        head = _peek(fh, 1)
        if head not in (b"\r", b"\n"):
            return
        fh.read(1)


def _resync(fh: IO[bytes], parser: HeaderParser, after: int) -> bool:
    """Move to the next line at or after ``after`` that starts a record (plain files)."""
    fh.seek(after)
    fh.readline(MAX_LINE)  # the rest of the damaged line
    while True:
        at = fh.tell()
        line = fh.readline(MAX_LINE)
        if not line:
            return False
        if parser.starts_record(line):
            fh.seek(at)
            return True


def read_line(stream: IO[bytes], what: str) -> bytes:
    line = stream.readline(MAX_LINE)
    if len(line) >= MAX_LINE and not line.endswith(b"\n"):
        raise DamageError(0, f"{what} line over {MAX_LINE // 1024} KiB")
    return line


def first_line(stream: IO[bytes], what: str) -> bytes:
    """A record header's first line, past the blank lines between records; b"" at the end."""
    line = read_line(stream, what)
    while line in (b"\n", b"\r\n"):
        line = read_line(stream, what)
    return line


LineCheck = Callable[[bytes], bool]
__all__ = ["Frame", "Header", "HeaderParser", "Member", "first_line", "frames", "read_line"]
