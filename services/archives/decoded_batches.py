"""Files read through a decoded stream as batches: MediaWiki and ODP dumps, JSON lines and
text records, in any codec. Registration decodes the file once, recording where each record
starts (decoded offsets) and, for bz2, indexed_bzip2's block map so that a worker seeks
into the middle of the file; Wikipedia's multistream dumps are cut at the bz2 streams their
index lists, without decoding them (``coords``: ``streams``).
"""

from __future__ import annotations

import bz2
import contextlib
import io
from collections.abc import Iterable, Iterator
from typing import IO, Any

from services.archives.batch import TO_END, Batch
from services.archives.bundle import Bundle
from services.archives.compression import (
    Bz2Streams,
    bz2_block_map,
    bz2_damaged,
    decode_errors,
    open_decoded,
    seek_points,
    sniff,
)
from services.archives.formats import jsonl, mediawiki, odp, text
from services.archives.records import ArchiveRecord

_HEAD = 1024 * 1024  # the first decoded bytes of a dump hold its <siteinfo>


def decoded_records(
    bundle: Bundle, batch: Batch, stream: IO[bytes], name: str, start: int, stop: int, cap: int, when: float
) -> Iterator[ArchiveRecord]:
    """The records of a batch read through a decoded stream (``read_batch`` opens it)."""
    state = batch.seek_state
    kind = state["format"]
    if kind == "mediawiki":
        site = mediawiki.Site.from_state(state["site"])
        records = mediawiki.read_pages(
            stream, name, start, stop, site=site, keep=frozenset(bundle.namespaces), cap=cap, fetched_at=when
        )
        if state.get("coords") == "streams":
            records = _at(records, batch.start)
        yield from records
    elif kind == "odp":
        yield from odp.read_odp(stream, name, start, stop, cap=cap, fetched_at=when, language=bundle.language)
    elif kind == "jsonl":
        yield from jsonl.read_jsonl(
            stream,
            name,
            start,
            stop,
            collection=bundle.name,
            cap=cap,
            fetched_at=when,
            language=bundle.language,
        )
    else:
        yield from text.read_text(
            stream, name, batch.file, start, stop, patterns=_patterns(bundle), collection=bundle.name,
            url_template=bundle.url_template, cap=cap, fetched_at=when, language=bundle.language,
        )  # fmt: skip


def _at(records: Iterable[ArchiveRecord], offset: int) -> Iterator[ArchiveRecord]:
    """Pages of a multistream batch carry the batch's stream offset (where to look for them)."""
    for record in records:
        record.offset = offset
        if record.error:
            record.error = record.error.replace(
                " at byte ", f" in the bz2 streams from byte {offset:,}, at decoded byte ", 1
            )
        yield record


def _cut(
    name: str,
    offsets: list[int],
    size: int,
    state: dict[str, Any],
    blocks: dict[int, int],
    damaged: bool = False,
) -> list[Batch]:
    """Batches of ``size`` records from the record starts ``offsets``; ``damaged``: the bz2 file
    is damaged (indexed_bzip2 refuses it: workers read it with the standard module)."""
    if damaged:
        state = {**state, "damaged": True}
    batches: list[Batch] = []
    for i in range(0, max(len(offsets), 1), size):
        start = offsets[i] if i else 0  # the first batch also reads what precedes the first record
        end = offsets[i + size] if i + size < len(offsets) else TO_END
        batch_state = dict(state)
        if blocks and start:
            batch_state["bz2"] = seek_points(blocks, start, end)
        batches.append(Batch(name, start, end, min(size, len(offsets) - i) if offsets else 0, batch_state))
    return batches


def _chunks(stream: IO[bytes]) -> Iterator[bytes]:
    """The decoded stream in chunks, up to damage (which the batch reaching it reports). Small
    reads: a read that reaches damage returns nothing, so less is lost before it."""
    read = getattr(stream, "read1", stream.read)  # one underlying read: see elements._Buffer
    with contextlib.suppress(*decode_errors()):
        while chunk := read(128 * 1024):
            yield chunk


def _blocks(stream: IO[bytes], codec: str) -> dict[int, int]:
    """indexed_bzip2's block map once the stream has been read through ({} for other codecs,
    or when damage stopped the read: workers then decode from the start)."""
    return bz2_block_map(stream) if codec == "bz2" and not bz2_damaged(stream) else {}


def _marker_offsets(chunks: Iterable[bytes], marker: bytes) -> list[int]:
    offsets, base, carry = [], 0, b""
    for chunk in chunks:
        data = carry + chunk
        at = data.find(marker)
        while at >= 0:
            offsets.append(base - len(carry) + at)
            at = data.find(marker, at + 1)
        carry = data[-(len(marker) - 1) :]
        base += len(chunk)
    return offsets


def marker_batches(
    name: str, fh: IO[bytes], codec: str, size: int, marker: bytes, state: dict[str, Any]
) -> list[Batch]:
    """Batches of a decoded stream whose records start at ``marker`` (``<page>``, ``<Topic``)."""
    with open_decoded(fh, codec) as stream:
        offsets = _marker_offsets(_chunks(stream), marker)
        blocks, broken = _blocks(stream, codec), bz2_damaged(stream)
    return _cut(name, offsets, size, {**state, "codec": codec, "coords": "decoded"}, blocks, broken)


def mediawiki_batches(bundle: Bundle, name: str, fh: IO[bytes], codec: str, size: int) -> list[Batch]:
    """A MediaWiki dump cut at ``<page>`` starts, or a multistream dump at its index's streams."""
    index = bundle.indexes.get(name)
    if index is not None and codec == "bz2":
        return _multistream_batches(bundle, name, index, fh, size)
    with open_decoded(fh, codec) as stream:
        head = b"".join(_chunks(io.BufferedReader(_Limited(stream, _HEAD))))
    site = _site(bundle, head)
    return marker_batches(name, fh, codec, size, b"<page>", {"format": "mediawiki", "site": site.to_state()})


class _Limited(io.RawIOBase):
    """The first ``size`` bytes of a stream."""

    def __init__(self, stream: IO[bytes], size: int) -> None:
        self._stream, self._left = stream, size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self._stream.read(min(len(buffer), self._left))
        self._left -= len(data)
        buffer[: len(data)] = data
        return len(data)


def _site(bundle: Bundle, head: bytes) -> mediawiki.Site:
    first_page = head.find(b"<page>")
    return mediawiki.read_site(
        head[: first_page if first_page >= 0 else len(head)],
        language=bundle.language, url_template=bundle.url_template, bundle_name=bundle.name,
    )  # fmt: skip


def _multistream_batches(bundle: Bundle, name: str, index: str, fh: IO[bytes], size: int) -> list[Batch]:
    """Wikipedia's multistream dumps: bz2 streams of 100 pages each, their offsets listed in
    the index file (``offset:page id:title`` a line), so registration reads only the index
    and the first stream (the ``<siteinfo>``)."""
    raw = bundle.location.read_bytes(index)
    listing = bz2.decompress(raw) if sniff(raw[:4]) == "bz2" else raw
    counts: dict[int, int] = {}
    for line in listing.splitlines():
        field, _colon, _rest = line.partition(b":")
        if field.strip().isdigit():
            counts[int(field)] = counts.get(int(field), 0) + 1
    streams = sorted(counts)
    with bz2_streams(fh, 0, streams[0] if streams else 1) as first:
        head = b"".join(_chunks(io.BufferedReader(_Limited(first, _HEAD))))
    state = {
        "format": "mediawiki",
        "codec": "bz2",
        "coords": "streams",
        "site": _site(bundle, head).to_state(),
    }
    batches: list[Batch] = []
    first_stream, pages = 0, 0
    for i, offset in enumerate(streams):
        if pages == 0:
            first_stream = offset
        pages += counts[offset]
        if pages >= size or i == len(streams) - 1:
            end = streams[i + 1] if i + 1 < len(streams) else TO_END
            batches.append(Batch(name, first_stream, end, pages, dict(state)))
            pages = 0
    return batches


@contextlib.contextmanager
def bz2_streams(fh: IO[bytes], start: int, stop: int) -> Iterator[IO[bytes]]:
    """The bz2 streams from byte ``start`` up to ``stop``, decoded as one stream."""
    yield io.BufferedReader(Bz2Streams(fh, start, stop), 1024 * 1024)


def line_batches(name: str, fh: IO[bytes], codec: str, size: int) -> list[Batch]:
    """JSON lines cut every ``size`` lines."""
    offsets, base = [0], 0
    with open_decoded(fh, codec) as stream:
        for chunk in _chunks(stream):
            at = chunk.find(b"\n")
            while at >= 0:
                offsets.append(base + at + 1)
                at = chunk.find(b"\n", at + 1)
            base += len(chunk)
        blocks, broken = _blocks(stream, codec), bz2_damaged(stream)
    if offsets[-1] >= base:
        offsets.pop()  # the file ends with a newline: no line starts there
    return _cut(name, offsets, size, {"format": "jsonl", "codec": codec, "coords": "decoded"}, blocks, broken)


def _patterns(bundle: Bundle) -> text.Patterns:
    return text.Patterns.of(bundle.start, bundle.end, bundle.title)


_SCAN_CAP = 64 * 1024  # registration keeps this much of a text record while looking for its end


def text_batches(bundle: Bundle, name: str, fh: IO[bytes], codec: str, size: int) -> list[Batch]:
    """Text records (the bundle's start and end patterns) cut every ``size`` records."""
    offsets: list[int] = []
    with open_decoded(fh, codec) as stream:
        with contextlib.suppress(*decode_errors()):
            for record in text.records(stream, 0, TO_END, _patterns(bundle), cap=_SCAN_CAP):
                offsets.append(record.offset)
        blocks, broken = _blocks(stream, codec), bz2_damaged(stream)
    return _cut(name, offsets, size, {"format": "text", "codec": codec, "coords": "decoded"}, blocks, broken)
