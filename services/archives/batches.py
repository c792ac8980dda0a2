"""A bundle cut into batches at registration, and one batch read back by any worker.

``plan_batches(bundle)`` reads the bundle once and cuts each file at record starts, every
``batch_size`` records; ``read_batch(bundle, batch)`` reads exactly the records that
START inside ``[batch.start, batch.end)`` of ``batch.file``, from a local file or an S3
object alike, seeking straight to the batch. ``Batch.seek_state`` (JSON) carries what a
worker needs besides the offsets, so it never reads what lies before its batch:

==========================  ===========================  ===============================================
file                        offsets (``coords``)          ``seek_state`` besides ``format`` and ``codec``
==========================  ===========================  ===============================================
.warc.gz / .arc.gz          gzip member starts           ``revisits``: revisit offset -> (file, offset)
.warc / .arc (plain)        record starts                of its original, found at registration
single-stream .bz2 dump     ``<page>`` starts, decoded   ``bz2``: indexed_bzip2's two block offsets
multistream .bz2 + index    bz2 stream starts (index)    ``site`` (mediawiki: namespaces, URL, language)
.jsonl / text (any codec)   line or record starts        ``bz2`` when bz2
ODP .rdf.u8                 ``<Topic`` starts, decoded   ``bz2`` when bz2
sql                         key ranges                   ``from``, ``to`` (keys); start/end: row numbers
==========================  ===========================  ===============================================

The last batch of a file ends at ``TO_END``: whatever lies past the last record start
found at registration (a truncated tail, say) is read, and reported, by that batch.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import IO

from services.archives.batch import TO_END, Batch
from services.archives.bundle import ArchiveType, Bundle
from services.archives.compression import decode_errors, open_decoded, sniff
from services.archives.decoded_batches import (
    bz2_streams,
    decoded_records,
    line_batches,
    marker_batches,
    mediawiki_batches,
    text_batches,
)
from services.archives.formats import odp, sql
from services.archives.records import ArchiveRecord, Skip, damaged
from services.archives.sql_batches import query, sql_batches
from services.archives.web_archive_batches import read_web_archive, web_archive_batches

DEFAULT_MAX_RECORD_BYTES = 10 * 1024 * 1024  # the crawler's NIMBUS_MAX_BODY_BYTES default


def plan_batches(bundle: Bundle, batch_size: int | None = None) -> list[Batch]:
    """Registration: the bundle's batches, file by file in name order."""
    size = batch_size or bundle.batch_size
    if bundle.type in (ArchiveType.WARC, ArchiveType.ARC):
        return web_archive_batches(bundle, size)
    if bundle.type == ArchiveType.SQL:
        return sql_batches(bundle, size)
    batches: list[Batch] = []
    for name in bundle.files:
        with bundle.location.open(name) as fh:
            codec = sniff(fh.read(4))
            if bundle.type == ArchiveType.MEDIAWIKI:
                batches += mediawiki_batches(bundle, name, fh, codec, size)
            elif bundle.type == ArchiveType.ODP:
                batches += marker_batches(name, fh, codec, size, odp.TOPIC, {"format": "odp"})
            elif bundle.type == ArchiveType.JSONL:
                batches += line_batches(name, fh, codec, size)
            else:
                batches += text_batches(bundle, name, fh, codec, size)
    return batches


def read_batch(
    bundle: Bundle,
    batch: Batch,
    *,
    max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES,
    fetched_at: float | None = None,
    every_type: bool = False,
) -> Iterator[ArchiveRecord]:
    """The records that start inside ``batch``. ``max_record_bytes``: a record past it is
    counted ``too_large`` and streamed past; ``fetched_at``: the time of records whose
    archive gives none (default: the file's modification time; for sql, now): pass the
    registration time, so that a batch read again gives the same records; ``every_type``
    (web archives): payloads of every media type, not only what the crawler indexes (a
    replay of the archive, as the demo's sample web)."""
    state = batch.seek_state
    kind = state.get("format", "")
    if kind == "sql":
        yield from sql.read_rows(
            query(bundle), state.get("from"), state.get("to"), cap=max_record_bytes,
            fetched_at=fetched_at if fetched_at is not None else time.time(), language=bundle.language,
        )  # fmt: skip
        return
    name = bundle.location.describe(batch.file)
    when = fetched_at if fetched_at is not None else bundle.location.modified(batch.file)
    with bundle.location.open(batch.file) as fh:
        if kind in ("warc", "arc"):
            yield from read_web_archive(bundle, batch, fh, name, max_record_bytes, when, every_type)
            return
        if state.get("coords") == "streams":
            decoded: contextlib.AbstractContextManager[IO[bytes]] = bz2_streams(fh, batch.start, batch.end)
            start, stop = 0, TO_END
        else:
            codec, indexed = state.get("codec", "plain"), not state.get("damaged", False)
            decoded = open_decoded(fh, codec, batch.start, state.get("bz2"), indexed=indexed)
            start, stop = batch.start, batch.end
        last = batch.start
        try:
            with decoded as stream:
                for record in decoded_records(
                    bundle, batch, stream, name, start, stop, max_record_bytes, when
                ):
                    last = record.offset
                    yield record
        except decode_errors() as exc:
            why = Skip.TRUNCATED if isinstance(exc, EOFError) else Skip.CORRUPT
            detail = str(exc) or type(exc).__name__
            what = f"{state.get('codec', '')} data past the record here does not decompress ({detail})"
            yield damaged(name, last, when, why, what)
