"""XML dumps cut into their record elements (a wiki's ``<page>``, a directory's ``<Topic>``) by
byte search, before any XML parser sees them.

Each element is then parsed alone (small, fast, in C), so a damaged element is one
error naming its offset while the next ones are read, and an element over the size cap is
streamed past (only a few bytes are kept while looking for its end) and reported as too
large: never held whole. Offsets are those of the decompressed stream.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO

from services.archives.compression import decode_errors

# Decoded bytes read at a time. Small enough that a read running into damage (which
# indexed_bzip2 answers with an error and no bytes at all) loses little before it.
CHUNK = 128 * 1024


@dataclass
class Element:
    offset: int
    tag: bytes  # the opening tag it was found by, e.g. b"<page>"
    data: bytes | None  # None when over the cap or cut short
    truncated: bool = False  # the stream ended inside it
    damage: str = ""  # why it ended there, when the decompressor failed

    @property
    def too_large(self) -> bool:
        return self.data is None and not self.truncated


class _Buffer:
    """The stream's bytes from the current element on; ``offset`` is that of ``buf[0]``."""

    def __init__(self, stream: IO[bytes], base: int) -> None:
        self.stream, self.buf, self.pos, self.offset, self.eof = stream, b"", 0, base, False
        # One underlying read at a time where the stream offers it: a buffered read that
        # gathers several and meets damage loses what it gathered.
        self.read = getattr(stream, "read1", stream.read)
        self.damage = ""

    def more(self) -> bool:
        """Append a chunk, dropping what lies before ``pos`` (indexes shift by ``pos``)."""
        if self.eof:
            return False
        try:
            chunk = self.read(CHUNK)
        except decode_errors() as exc:
            self.eof, self.damage = (
                True,
                f"the data does not decompress past here ({exc or type(exc).__name__})",
            )
            return False
        if not chunk:
            self.eof = True
            return False
        self.offset += self.pos
        self.buf, self.pos = self.buf[self.pos :] + chunk, 0
        return True


def split(stream: IO[bytes], base: int, stop: int, tags: dict[bytes, bytes], cap: int) -> Iterator[Element]:
    """The elements opened by one of ``tags`` (opening -> closing tag) that start in
    [base, stop) of the decompressed stream; ``stream`` is positioned at ``base``."""
    b = _Buffer(stream, base)
    longest = max(len(t) for t in tags)
    while True:
        found = [(i, tag) for tag in tags if (i := b.buf.find(tag, b.pos)) >= 0]
        if not found:
            b.pos = max(b.pos, len(b.buf) - longest + 1)
            if not b.more():
                if b.damage and b.offset + len(b.buf) < stop:
                    yield Element(b.offset + len(b.buf), b"", None, truncated=True, damage=b.damage)
                return
            continue
        b.pos, tag = min(found)
        start = b.offset + b.pos
        if start >= stop:
            return
        close = tags[tag]
        j = b.buf.find(close, b.pos)
        while j < 0:
            resume = max(0, len(b.buf) - len(close) + 1 - b.pos)  # where to search after ``more``
            if len(b.buf) - b.pos > cap:
                yield _past(b, start, tag, close)
                break
            if not b.more():
                yield Element(start, tag, None, truncated=True, damage=b.damage)
                return
            j = b.buf.find(close, resume)
        else:
            end = j + len(close)
            yield Element(start, tag, b.buf[b.pos : end])
            b.pos = end
            continue
        if b.eof and b.pos >= len(b.buf):
            return


def _past(b: _Buffer, start: int, tag: bytes, close: bytes) -> Element:
    """Stream past an element over the cap, keeping only what may begin its closing tag."""
    while True:
        b.pos = max(b.pos, len(b.buf) - len(close) + 1)
        if not b.more():
            return Element(start, tag, None, truncated=True, damage=b.damage)
        j = b.buf.find(close, b.pos)
        if j >= 0:
            b.pos = j + len(close)
            return Element(start, tag, None)
