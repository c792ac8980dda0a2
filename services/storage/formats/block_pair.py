"""Writing one content block and its record block: the unit every writer of documents stores.

The crawler's committer (and any other writer of documents) stores documents this
way (content blocks and record blocks, blocks before rows: ``documents``). This
module does the part they share: name the pair, add each body to the content
block and each record, which names its content block and index, to the record
block, put both blobs, and say where each document landed so the caller can
write its rows. A failure leaves no half pair behind.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, fields
from typing import TypeVar

from services.storage.blobs.blobstore import BlobStore
from services.storage.formats.blocks import ENTRY_SIZE, PREAMBLE_SIZE, ContentBlockWriter, ContentType
from services.storage.formats.records import Record, RecordBlockWriter

T = TypeVar("T")


def cut_blocks(
    docs: Iterable[T], body_size: Callable[[T], int], max_docs: int, max_bytes: int
) -> Iterator[list[T]]:
    """Group documents into blocks of at most ``max_docs`` documents and ``max_bytes`` bytes
    of content block (a single larger document gets a block of its own), streaming."""
    block: list[T] = []
    size = PREAMBLE_SIZE
    for doc in docs:
        grown = size + ENTRY_SIZE + body_size(doc)
        if block and (len(block) >= max_docs or grown > max_bytes):
            yield block
            block, grown = [], PREAMBLE_SIZE + ENTRY_SIZE + body_size(doc)
        block.append(doc)
        size = grown
    if block:
        yield block


@dataclass(frozen=True)
class Placement:
    """Where one document's bytes and record are: the columns of its documents row."""

    content_block: str
    content_index: int
    content_offset: int
    record_block: str
    record_offset: int
    record_length: int

    def columns(self) -> dict[str, object]:
        # Not dataclasses.asdict, which deep-copies field by field (docs/benchmarks.md).
        return {name: getattr(self, name) for name in PLACEMENT_COLUMNS}


# The documents table's columns that say where a document's bytes and record are.
PLACEMENT_COLUMNS = tuple(f.name for f in fields(Placement))


def write_block_pair(
    blobs: BlobStore,
    docs: Sequence[tuple[bytes, ContentType, Record]],
    first_doc_num: int,
    max_block_bytes: int,
) -> tuple[list[Placement], list[str]]:
    """Store ``(body, type, record)`` documents as one content block and one record block.

    Sets each record's ``content_block`` and ``content_index`` before storing
    it. Returns the documents' placements, in order, and the two blob names.
    """
    stem = f"{first_doc_num:010d}-{uuid.uuid4().hex[:8]}"
    content_name, record_name = f"content/{stem}.ncb", f"records/{stem}.rec.gz"
    content = ContentBlockWriter(max_bytes=max_block_bytes)
    records = RecordBlockWriter()
    spots: list[tuple[int, int, int]] = []
    for body, content_type, record in docs:
        index = content.add(body, content_type, bytes.fromhex(record.url_id), bytes.fromhex(record.doc_id))
        record.content_block, record.content_index = content_name, index
        offset, length = records.add(record)
        spots.append((index, offset, length))
    placements = [
        Placement(content_name, index, entry.offset, record_name, offset, length)
        for (index, offset, length), entry in zip(spots, content.entries(), strict=True)
    ]
    blobs.put(content_name, content.to_bytes())
    try:
        blobs.put(record_name, records.to_bytes())
    except BaseException:
        blobs.delete(content_name)
        raise
    return placements, [content_name, record_name]
