"""Web archives (WARC, ARC) as batches: cut at gzip member (or record) starts, and each
revisit record's original found in the whole bundle at registration, so that the worker
reading a batch resolves a revisit with one ranged read (``seek_state["revisits"]``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any

from services.archives.batch import TO_END, Batch
from services.archives.bundle import Bundle
from services.archives.compression import decode_errors, open_decoded, sniff
from services.archives.formats import arc, warc
from services.archives.formats.framing import frames
from services.archives.records import ArchiveRecord


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


def web_archive_batches(bundle: Bundle, size: int) -> list[Batch]:
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


def read_web_archive(
    bundle: Bundle, batch: Batch, fh: IO[bytes], name: str, cap: int, when: float, every_type: bool
) -> Iterator[ArchiveRecord]:
    """The records of a web archive batch, each revisit resolved by one ranged read of its original."""
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
