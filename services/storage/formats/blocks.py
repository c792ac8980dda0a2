"""Content blocks: the raw bytes of many fetched documents in one blob.

The layout follows the PennInSearch report, with a magic number and a version
added so that a wrong or damaged file is recognised at once::

    magic    8 bytes   b"NMBSCB01"
    count    uint32    number of documents
    entries  count x 57 bytes, one per document:
             docId   20 bytes  SHA-1 of the body
             length  uint64    body length in bytes
             type    uint8     ContentType code
             urlId   20 bytes  SHA-1 of the normalized URL
             offset  uint64    absolute offset of the body in the block
    bodies   back to back, in entry order

All integers are little-endian. The fixed-size entries let a reader fetch the
entry of document *i* with one ranged read and its body with a second; callers
that stored the offset and length (the documents table does) need only one.
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass
from enum import IntEnum

from services.storage.errors import BlockFormatError, BlockFullError

MAGIC = b"NMBSCB01"
_PREAMBLE = struct.Struct("<8sI")  # magic, count
_ENTRY = struct.Struct("<20sQB20sQ")  # docId, length, type, urlId, offset
PREAMBLE_SIZE = _PREAMBLE.size  # 12
ENTRY_SIZE = _ENTRY.size  # 57
MAX_BLOCK_BYTES = 200 * 1024 * 1024  # 200 MB: the report's content-block cap


class ContentType(IntEnum):
    OTHER = 0
    HTML = 1
    PDF = 2
    TEXT = 3

    @classmethod
    def from_mime(cls, mime: str | None) -> ContentType:
        """The type a Content-Type names, its parameters and case ignored; the aliases old
        servers send count (``application/x-pdf`` from old Apache configurations)."""
        mime = mime_type(mime or "")
        if mime in _HTML_TYPES:
            return cls.HTML
        if mime in _PDF_TYPES:
            return cls.PDF
        if mime.startswith("text/"):
            return cls.TEXT
        return cls.OTHER

    @property
    def mime(self) -> str:
        return {
            ContentType.HTML: "text/html",
            ContentType.PDF: "application/pdf",
            ContentType.TEXT: "text/plain",
        }.get(self, "application/octet-stream")


# Types that say "some bytes" rather than what they are: a download link's PDF is often sent
# so (application/octet-stream, or the force-a-download types of old PHP and ASP scripts).
# Their bodies are downloaded and their first bytes decide (the crawler's ``classify``, the
# archive readers).
SNIFFED_TYPES = frozenset(
    {
        "",
        "application/octet-stream",
        "binary/octet-stream",
        "application/x-octet-stream",
        "application/download",
        "application/x-download",
        "application/force-download",
        "application/unknown",
        "application/x-unknown",
        "application/binary",
        "unknown/unknown",
    }
)


def mime_type(content_type: str) -> str:
    """The media type of a Content-Type header: ``"Text/HTML; charset=x"`` -> ``"text/html"``."""
    return content_type.split(";", 1)[0].strip().lower()


_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml", "application/vnd.wap.xhtml+xml"})
_PDF_TYPES = frozenset(
    {
        "application/pdf",
        "application/x-pdf",
        "application/acrobat",
        "application/vnd.pdf",
        "applications/vnd.pdf",
        "text/pdf",
        "text/x-pdf",
    }
)


def sha1(data: bytes) -> bytes:
    return hashlib.sha1(data).digest()


@dataclass(frozen=True)
class BlockEntry:
    """Where one document sits in a content block."""

    index: int
    doc_id: bytes
    length: int
    content_type: ContentType
    url_id: bytes
    offset: int


class ContentBlockWriter:
    """Collects documents in memory and serialises them as one content block.

    The writer refuses a document that would push the block past ``max_bytes``
    (``BlockFullError``), so the caller flushes and starts a new block instead
    of producing an oversized one.
    """

    def __init__(self, max_bytes: int = MAX_BLOCK_BYTES) -> None:
        self.max_bytes = max_bytes
        self._bodies: list[bytes] = []
        self._meta: list[tuple[bytes, ContentType, bytes]] = []
        self._body_bytes = 0

    def __len__(self) -> int:
        return len(self._bodies)

    @property
    def size(self) -> int:
        """Bytes the block would occupy if serialised now."""
        return PREAMBLE_SIZE + ENTRY_SIZE * len(self._bodies) + self._body_bytes

    def fits(self, body_length: int) -> bool:
        return self.size + ENTRY_SIZE + body_length <= self.max_bytes

    def add(self, body: bytes, content_type: ContentType, url_id: bytes, doc_id: bytes | None = None) -> int:
        """Append a document; returns its index in the block. ``doc_id``: the body's SHA-1 when
        the caller has it already (readers check it against the bytes)."""
        if len(url_id) != 20:
            raise ValueError("url_id must be a 20-byte SHA-1 digest")
        if not self.fits(len(body)) and self._bodies:
            raise BlockFullError(
                f"content block would exceed {self.max_bytes} bytes; flush it and start a new one"
            )
        self._bodies.append(body)
        self._meta.append((doc_id or sha1(body), ContentType(content_type), url_id))
        self._body_bytes += len(body)
        return len(self._bodies) - 1

    def entries(self) -> list[BlockEntry]:
        offset = PREAMBLE_SIZE + ENTRY_SIZE * len(self._bodies)
        out = []
        for i, (body, (doc_id, ctype, url_id)) in enumerate(zip(self._bodies, self._meta, strict=True)):
            out.append(BlockEntry(i, doc_id, len(body), ctype, url_id, offset))
            offset += len(body)
        return out

    def to_bytes(self) -> bytes:
        entries = self.entries()
        parts = [_PREAMBLE.pack(MAGIC, len(entries))]
        parts += [_ENTRY.pack(e.doc_id, e.length, int(e.content_type), e.url_id, e.offset) for e in entries]
        parts += self._bodies
        return b"".join(parts)


def parse_preamble(data: bytes, name: str = "block") -> int:
    """Check the magic number and return the document count."""
    if len(data) < PREAMBLE_SIZE:
        raise BlockFormatError(f"{name}: truncated header ({len(data)} bytes, need {PREAMBLE_SIZE})")
    magic, count = _PREAMBLE.unpack_from(data, 0)
    if magic != MAGIC:
        raise BlockFormatError(f"{name}: not a Nimbus content block (magic {magic!r}, expected {MAGIC!r})")
    return int(count)


def parse_entry(data: bytes, index: int, block_size: int | None = None, name: str = "block") -> BlockEntry:
    """Decode one 57-byte header entry (``data`` holds exactly that entry)."""
    if len(data) < ENTRY_SIZE:
        raise BlockFormatError(f"{name}: truncated header entry {index}")
    doc_id, length, ctype, url_id, offset = _ENTRY.unpack_from(data, 0)
    try:
        content_type = ContentType(ctype)
    except ValueError as exc:
        raise BlockFormatError(f"{name}: entry {index} has unknown content type {ctype}") from exc
    if block_size is not None and offset + length > block_size:
        raise BlockFormatError(
            f"{name}: entry {index} points past the end of the block "
            f"(offset {offset} + length {length} > {block_size}); the block is truncated"
        )
    return BlockEntry(index, doc_id, length, content_type, url_id, offset)


def entry_range(index: int) -> tuple[int, int]:
    """Byte range [start, end) of header entry ``index``."""
    start = PREAMBLE_SIZE + ENTRY_SIZE * index
    return start, start + ENTRY_SIZE


def read_block(data: bytes, name: str = "block") -> list[tuple[BlockEntry, bytes]]:
    """Decode a whole block, checking every body against its docId."""
    count = parse_preamble(data, name)
    header_end = PREAMBLE_SIZE + ENTRY_SIZE * count
    if len(data) < header_end:
        raise BlockFormatError(
            f"{name}: header claims {count} documents but the block has only {len(data)} bytes"
        )
    out = []
    for i in range(count):
        start, end = entry_range(i)
        entry = parse_entry(data[start:end], i, len(data), name)
        body = data[entry.offset : entry.offset + entry.length]
        verify_body(entry, body, name)
        out.append((entry, body))
    return out


def verify_body(entry: BlockEntry, body: bytes, name: str = "block") -> None:
    if len(body) != entry.length or sha1(body) != entry.doc_id:
        raise BlockFormatError(
            f"{name}: document {entry.index} does not match its docId (corrupt or truncated block)"
        )
