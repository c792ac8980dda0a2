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

import bz2
import contextlib
import io
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any

from services.archives.bundle import ArchiveType, Bundle
from services.archives.compression import (
    Bz2Streams,
    bz2_block_map,
    bz2_damaged,
    decode_errors,
    open_decoded,
    seek_points,
    sniff,
)
from services.archives.formats import arc, jsonl, mediawiki, odp, sql, text, warc
from services.archives.formats.framing import frames
from services.archives.records import ArchiveRecord, Skip, damaged

TO_END = 2**62  # the end of the last batch of a file: fits a signed 64-bit column
DEFAULT_MAX_RECORD_BYTES = 10 * 1024 * 1024  # the crawler's NIMBUS_MAX_BODY_BYTES default
_HEAD = 1024 * 1024  # the first decoded bytes of a dump hold its <siteinfo>


@dataclass(frozen=True)
class Batch:
    file: str  # relative to the bundle; "" for sql
    start: int
    end: int
    records_hint: int
    seek_state: dict[str, Any] = field(default_factory=dict)  # JSON-serializable


def plan_batches(bundle: Bundle, batch_size: int | None = None) -> list[Batch]:
    """Registration: the bundle's batches, file by file in name order."""
    size = batch_size or bundle.batch_size
    if bundle.type in (ArchiveType.WARC, ArchiveType.ARC):
        return _web_archive_batches(bundle, size)
    if bundle.type == ArchiveType.SQL:
        return _sql_batches(bundle, size)
    batches: list[Batch] = []
    for name in bundle.files:
        with bundle.location.open(name) as fh:
            codec = sniff(fh.read(4))
            if bundle.type == ArchiveType.MEDIAWIKI:
                batches += _mediawiki_batches(bundle, name, fh, codec, size)
            elif bundle.type == ArchiveType.ODP:
                batches += _marker_batches(name, fh, codec, size, odp.TOPIC, {"format": "odp"})
            elif bundle.type == ArchiveType.JSONL:
                batches += _line_batches(name, fh, codec, size)
            else:
                batches += _text_batches(bundle, name, fh, codec, size)
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
            _query(bundle), state.get("from"), state.get("to"), cap=max_record_bytes,
            fetched_at=fetched_at if fetched_at is not None else time.time(), language=bundle.language,
        )  # fmt: skip
        return
    name = bundle.location.describe(batch.file)
    when = fetched_at if fetched_at is not None else bundle.location.modified(batch.file)
    with bundle.location.open(batch.file) as fh:
        if kind in ("warc", "arc"):
            yield from _read_web_archive(bundle, batch, fh, name, max_record_bytes, when, every_type)
            return
        if state.get("coords") == "streams":
            decoded: contextlib.AbstractContextManager[IO[bytes]] = _bz2_streams(fh, batch.start, batch.end)
            start, stop = 0, TO_END
        else:
            codec, indexed = state.get("codec", "plain"), not state.get("damaged", False)
            decoded = open_decoded(fh, codec, batch.start, state.get("bz2"), indexed=indexed)
            start, stop = batch.start, batch.end
        last = batch.start
        try:
            with decoded as stream:
                for record in _decoded_records(
                    bundle, batch, stream, name, start, stop, max_record_bytes, when
                ):
                    last = record.offset
                    yield record
        except decode_errors() as exc:
            why = Skip.TRUNCATED if isinstance(exc, EOFError) else Skip.CORRUPT
            detail = str(exc) or type(exc).__name__
            what = f"{state.get('codec', '')} data past the record here does not decompress ({detail})"
            yield damaged(name, last, when, why, what)


def _decoded_records(
    bundle: Bundle, batch: Batch, stream: IO[bytes], name: str, start: int, stop: int, cap: int, when: float
) -> Iterator[ArchiveRecord]:
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


# --- web archives ---------------------------------------------------------------------------


def _web_format(fh: IO[bytes], codec: str) -> str:
    """``warc`` or ``arc``, from the first record's first bytes (``warc`` when they cannot be
    read: the reader then reports the damage)."""
    head = b""
    with (
        contextlib.suppress(*decode_errors()),
        open_decoded(fh, "gzip" if codec == "gzip" else "plain") as stream,
    ):
        head = stream.read(64)
    return "arc" if head.lstrip().startswith(b"filedesc:") else "warc"


@dataclass
class _Capture:
    file: str
    offset: int


def _web_archive_batches(bundle: Bundle, size: int) -> list[Batch]:
    """Cut every WARC and ARC file at member (or record) starts, and find the original of each
    revisit record in the whole bundle (by WARC-Refers-To, by target URI and date, by payload
    digest), so that a worker resolves a revisit with one ranged read."""
    by_id: dict[str, _Capture] = {}
    by_uri_date: dict[tuple[str, str], _Capture] = {}
    by_digest: dict[str, _Capture] = {}
    revisits: list[tuple[str, int, dict[str, str]]] = []
    cuts: list[tuple[str, str, str, list[int], int]] = []  # file, format, codec, starts, records
    for name in bundle.files:
        with bundle.location.open(name) as fh:
            codec = sniff(fh.read(4))
            kind = _web_format(fh, codec)
            parser = warc.WARC if kind == "warc" else arc.ARC
            starts: list[int] = []
            count = 0
            for frame in frames(fh, parser, 0, TO_END, cap=0, blocks=False):
                count += 1
                if frame.header is None:
                    continue
                if not starts or starts[-1] != frame.offset:
                    starts.append(frame.offset)
                fields = frame.header.fields
                rtype = fields.get("warc-type", "")
                if kind == "warc" and rtype in ("response", "resource"):
                    capture = _Capture(name, frame.offset)
                    by_id.setdefault(fields.get("warc-record-id", ""), capture)
                    by_uri_date.setdefault((warc.target_uri(fields), fields.get("warc-date", "")), capture)
                    digest = fields.get("warc-payload-digest", "")
                    if digest:
                        by_digest.setdefault(digest, capture)
                elif kind == "warc" and rtype == "revisit":
                    revisits.append((name, frame.offset, fields))
            cuts.append((name, kind, codec, starts, count))
    originals: dict[str, dict[str, list[Any]]] = {}
    for name, offset, fields in revisits:
        refers = (
            fields.get("warc-refers-to-target-uri", "").strip("<>"),
            fields.get("warc-refers-to-date", ""),
        )
        found = (
            by_id.get(fields.get("warc-refers-to", ""))
            or by_uri_date.get(refers)
            or by_digest.get(fields.get("warc-payload-digest", ""))
        )
        if found is not None:
            originals.setdefault(name, {})[str(offset)] = [found.file, found.offset]
    batches = []
    for name, kind, codec, starts, count in cuts:
        mapped = originals.get(name, {})
        for i in range(0, max(len(starts), 1), size):
            start = (
                starts[i] if i else 0
            )  # the first batch also reads (and reports) what precedes the first record
            end = starts[i + size] if i + size < len(starts) else TO_END
            state: dict[str, Any] = {
                "format": kind,
                "codec": codec,
                "coords": "members" if codec == "gzip" else "records",
            }
            inside = {k: v for k, v in mapped.items() if start <= int(k) < end}
            if inside:
                state["revisits"] = inside
            hint = min(size, len(starts) - i) if starts else count
            batches.append(Batch(name, start, end, hint, state))
    return batches


def _read_web_archive(
    bundle: Bundle, batch: Batch, fh: IO[bytes], name: str, cap: int, when: float, every_type: bool
) -> Iterator[ArchiveRecord]:
    state = batch.seek_state
    if state["format"] == "arc":
        yield from arc.read_arc(
            fh, name, batch.start, batch.end, cap=cap, fetched_at=when, every_type=every_type
        )
        return
    originals: dict[str, list[Any]] = state.get("revisits", {})

    def resolve(offset: int) -> warc.Original | None:
        where = originals.get(str(offset))
        if where is None:
            return None
        if where[0] == batch.file:
            with bundle.location.open(batch.file) as other:
                return warc.original_at(other, int(where[1]), cap)
        with bundle.location.open(where[0]) as other:
            return warc.original_at(other, int(where[1]), cap)

    yield from warc.read_warc(
        fh, name, batch.start, batch.end, cap=cap, fetched_at=when, resolve=resolve, every_type=every_type
    )


# --- decoded streams: dumps, lines, text records ------------------------------------------


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


def _marker_batches(
    name: str, fh: IO[bytes], codec: str, size: int, marker: bytes, state: dict[str, Any]
) -> list[Batch]:
    with open_decoded(fh, codec) as stream:
        offsets = _marker_offsets(_chunks(stream), marker)
        blocks, broken = _blocks(stream, codec), bz2_damaged(stream)
    return _cut(name, offsets, size, {**state, "codec": codec, "coords": "decoded"}, blocks, broken)


def _mediawiki_batches(bundle: Bundle, name: str, fh: IO[bytes], codec: str, size: int) -> list[Batch]:
    index = bundle.indexes.get(name)
    if index is not None and codec == "bz2":
        return _multistream_batches(bundle, name, index, fh, size)
    with open_decoded(fh, codec) as stream:
        head = b"".join(_chunks(io.BufferedReader(_Limited(stream, _HEAD))))
    site = _site(bundle, head)
    return _marker_batches(name, fh, codec, size, b"<page>", {"format": "mediawiki", "site": site.to_state()})


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
    with _bz2_streams(fh, 0, streams[0] if streams else 1) as first:
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
def _bz2_streams(fh: IO[bytes], start: int, stop: int) -> Iterator[IO[bytes]]:
    yield io.BufferedReader(Bz2Streams(fh, start, stop), 1024 * 1024)


def _line_batches(name: str, fh: IO[bytes], codec: str, size: int) -> list[Batch]:
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


def _text_batches(bundle: Bundle, name: str, fh: IO[bytes], codec: str, size: int) -> list[Batch]:
    offsets: list[int] = []
    with open_decoded(fh, codec) as stream:
        with contextlib.suppress(*decode_errors()):
            for record in text.records(stream, 0, TO_END, _patterns(bundle), cap=_SCAN_CAP):
                offsets.append(record.offset)
        blocks, broken = _blocks(stream, codec), bz2_damaged(stream)
    return _cut(name, offsets, size, {"format": "text", "codec": codec, "coords": "decoded"}, blocks, broken)


# --- sql ------------------------------------------------------------------------------------


def _query(bundle: Bundle) -> sql.Query:
    return sql.Query(
        bundle.query.strip().rstrip(";"), bundle.database_url_env, bundle.key_column, bundle.url_column,
        bundle.url_template, bundle.title_column, bundle.text_column, bundle.name,
    )  # fmt: skip


def _sql_batches(bundle: Bundle, size: int) -> list[Batch]:
    keys = list(sql.keys(_query(bundle)))
    batches = []
    for i in range(0, len(keys), size):
        upper = keys[i + size] if i + size < len(keys) else None
        state = {"format": "sql", "from": _json_key(keys[i]), "to": _json_key(upper)}
        batches.append(Batch("", i, min(i + size, len(keys)), min(size, len(keys) - i), state))
    return batches


def _json_key(key: Any) -> Any:
    return key if key is None or isinstance(key, int | str) else str(key)
