"""Content-block format: round trip, single-document ranged reads, corruption."""

from __future__ import annotations

import hashlib

import pytest

from services.storage.blobs.blobstore import FileBlobStore
from services.storage.errors import BlockFormatError, BlockFullError
from services.storage.formats.blocks import (
    ENTRY_SIZE,
    PREAMBLE_SIZE,
    ContentBlockWriter,
    ContentType,
    entry_range,
    parse_entry,
    parse_preamble,
    read_block,
)

DOCS = [
    (b"<html><title>one</title></html>", ContentType.HTML, "http://a.test/1"),
    (b"%PDF-1.4 not really", ContentType.PDF, "http://a.test/2.pdf"),
    (b"", ContentType.HTML, "http://a.test/empty"),
    (bytes(range(256)) * 40, ContentType.OTHER, "http://a.test/bin"),
]


def _uid(url: str) -> bytes:
    return hashlib.sha1(url.encode()).digest()


def _block() -> tuple[ContentBlockWriter, bytes]:
    writer = ContentBlockWriter()
    for body, ctype, url in DOCS:
        writer.add(body, ctype, _uid(url))
    return writer, writer.to_bytes()


def test_round_trip_keeps_every_body_and_its_ids():
    _, data = _block()
    docs = read_block(data)
    assert [body for _, body in docs] == [d[0] for d in DOCS]
    for (entry, body), (_, ctype, url) in zip(docs, DOCS, strict=True):
        assert entry.doc_id == hashlib.sha1(body).digest()
        assert entry.url_id == _uid(url)
        assert entry.content_type == ctype
    assert len(data) == PREAMBLE_SIZE + ENTRY_SIZE * len(DOCS) + sum(len(d[0]) for d in DOCS)


def test_single_document_read_by_ranges(tmp_path):
    store = FileBlobStore(tmp_path)
    _, data = _block()
    store.put("content/b1.ncb", data)
    assert parse_preamble(store.get("content/b1.ncb", 0, PREAMBLE_SIZE)) == len(DOCS)
    start, end = entry_range(3)
    entry = parse_entry(store.get("content/b1.ncb", start, end), 3)
    body = store.get("content/b1.ncb", entry.offset, entry.offset + entry.length)
    assert body == DOCS[3][0]


def test_entries_match_serialised_offsets():
    writer, data = _block()
    for entry in writer.entries():
        assert data[entry.offset : entry.offset + entry.length] == DOCS[entry.index][0]


def test_wrong_magic_is_named():
    _, data = _block()
    with pytest.raises(BlockFormatError, match="not a Nimbus content block"):
        read_block(b"XXXXXXXX" + data[8:], "content/x.ncb")


def test_truncated_header_is_reported():
    _, data = _block()
    with pytest.raises(BlockFormatError, match="truncated header"):
        parse_preamble(data[:5])
    with pytest.raises(BlockFormatError, match="claims 4 documents"):
        read_block(data[: PREAMBLE_SIZE + ENTRY_SIZE * 2])


def test_truncated_body_is_reported():
    _, data = _block()
    with pytest.raises(BlockFormatError, match="past the end|truncated"):
        read_block(data[:-10])


def test_flipped_byte_in_body_fails_the_docid_check():
    _, data = _block()
    corrupt = bytearray(data)
    corrupt[-1] ^= 0xFF
    with pytest.raises(BlockFormatError, match="does not match its docId"):
        read_block(bytes(corrupt))


def test_size_cap_refuses_a_document_that_does_not_fit():
    writer = ContentBlockWriter(max_bytes=PREAMBLE_SIZE + 2 * ENTRY_SIZE + 100)
    writer.add(b"x" * 60, ContentType.TEXT, _uid("u1"))
    with pytest.raises(BlockFullError):
        writer.add(b"y" * 60, ContentType.TEXT, _uid("u2"))
    assert len(writer) == 1
    assert writer.size <= writer.max_bytes


def test_content_type_from_mime():
    assert ContentType.from_mime("text/html; charset=utf-8") is ContentType.HTML
    assert ContentType.from_mime("application/pdf") is ContentType.PDF
    assert ContentType.from_mime(None) is ContentType.OTHER
