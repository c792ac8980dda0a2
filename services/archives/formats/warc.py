"""WARC files (1.1, 1.0, 0.18 and 0.17; gzip record by record, or plain) to ``ArchiveRecord``s.

- ``response`` records with an HTTP message become payloads (``http``: de-chunked,
  content-decoded, HTML and PDF kept); ``resource`` records (a document stored
  as it is) too, typed by the record's Content-Type.
- ``revisit`` records name an earlier capture (WARC-Refers-To, WARC-Refers-To-Target-URI +
  WARC-Refers-To-Date, or the same WARC-Payload-Digest): ``batches`` finds it when the
  bundle is registered and hands the reader a ``resolve`` that returns its payload, which
  then appears under the revisit's URL and date. Not found: ``unresolved_revisit``.
- ``request``, ``metadata``, ``warcinfo``, ``conversion``, ``continuation`` and DNS
  responses are skipped, counted by type.
- A version other than those above is skipped record by record (``unknown_version``,
  the error naming the file, the offset and the versions known): its lengths still
  frame the file, so nothing after it is lost.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import IO

from services.archives.compression import DamageError
from services.archives.formats.framing import Frame, Header, HeaderParser, first_line, frames, read_line
from services.archives.formats.http import NotKeptError, payload, split_http
from services.archives.records import ArchiveRecord, Payload, Skip, damaged, skipped

KNOWN_VERSIONS = frozenset({"1.1", "1.0", "0.18", "0.17"})
KEPT_TYPES = frozenset({"response", "resource", "revisit"})
_VERSION_LINE = re.compile(rb"WARC/(\d+\.\d+)\r?\n\Z")

# The original a revisit names, as (status, headers, raw body), or None.
Original = tuple[int, list[tuple[str, str]], bytes]
Resolve = Callable[[int], "Original | None"]


class WarcHeader(HeaderParser):
    trailer = b"\r\n\r\n"

    def parse(self, stream: IO[bytes]) -> Header | None:
        line = first_line(stream, "WARC version")
        if not line:
            return None
        match = _VERSION_LINE.match(line)
        if not match:
            raise DamageError(0, f"not a WARC record (first line {line[:40]!r})")
        fields: dict[str, str] = {}
        size, last = 0, ""
        while True:
            line = read_line(stream, "WARC header")
            if not line:
                raise DamageError(0, "the file ends inside a WARC header", truncated=True)
            if line in (b"\r\n", b"\n"):
                break
            size += len(line)
            if size > 256 * 1024:
                raise DamageError(0, "WARC header over 256 KiB")
            if line[:1] in (b" ", b"\t") and last:
                fields[last] += " " + line.strip().decode("utf-8", "replace")
                continue
            name, colon, value = line.partition(b":")
            if not colon:
                raise DamageError(0, f"WARC header line without a colon: {line[:40]!r}")
            last = name.strip().lower().decode("latin-1")
            fields[last] = value.strip().decode("utf-8", "replace")
        try:
            length = int(fields.get("content-length", ""))
        except ValueError:
            raise DamageError(
                0, f"WARC Content-Length {fields.get('content-length')!r} is not a number"
            ) from None
        if length < 0:
            raise DamageError(0, f"WARC Content-Length {length} is negative")
        return Header(fields, length, match.group(1).decode())

    def starts_record(self, line: bytes) -> bool:
        return bool(_VERSION_LINE.match(line))


WARC = WarcHeader()


def warc_date(value: str) -> float | None:
    """WARC-Date (ISO 8601, UTC, with or without fractions of a second) as epoch seconds."""
    value = value.strip()
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).timestamp()


def target_uri(fields: dict[str, str]) -> str:
    return fields.get("warc-target-uri", "").strip().strip("<>")


def read_warc(
    fh: IO[bytes],
    name: str,
    start: int,
    stop: int,
    *,
    cap: int,
    fetched_at: float,
    resolve: Resolve | None = None,
    every_type: bool = False,
) -> Iterator[ArchiveRecord]:
    """The records that start in [start, stop) of a WARC file named ``name`` (for messages);
    ``every_type``: payloads of every media type kept (``http.payload``)."""
    for frame in frames(fh, WARC, start, stop, cap=cap):
        yield to_record(frame, name, cap, fetched_at, resolve, every_type)


def to_record(
    frame: Frame,
    name: str,
    cap: int,
    default_time: float,
    resolve: Resolve | None,
    every_type: bool = False,
) -> ArchiveRecord:
    if frame.damage is not None or frame.header is None:
        damage = frame.damage or DamageError(frame.offset, "unreadable record")
        why = Skip.TRUNCATED if damage.truncated else Skip.CORRUPT
        return damaged(name, frame.offset, default_time, why, damage.what)
    fields = frame.header.fields
    url = target_uri(fields)
    when = warc_date(fields.get("warc-date", "")) or default_time
    if frame.header.version not in KNOWN_VERSIONS:
        what = f"WARC/{frame.header.version} (this reader knows {', '.join(sorted(KNOWN_VERSIONS))})"
        return damaged(name, frame.offset, when, Skip.UNKNOWN_VERSION, what, url)
    kind = fields.get("warc-type", "").lower()
    if kind not in KEPT_TYPES or url.startswith("dns:"):
        return skipped(url, frame.offset, when, Skip.RECORD_TYPE, "dns" if url.startswith("dns:") else kind)
    record = ArchiveRecord(url, frame.offset, when, ip=fields.get("warc-ip-address", ""))
    if frame.too_large:
        return skipped(url, frame.offset, when, Skip.TOO_LARGE, kind)
    if kind == "revisit":
        original = resolve(frame.offset) if resolve is not None else None
        if original is None:
            return skipped(url, frame.offset, when, Skip.UNRESOLVED_REVISIT, "revisit")
        status, headers, body = original
    else:
        status, headers, body = message(frame.block or b"", fields)
    try:
        record.payload = payload(status, headers, body, cap, every_type)
    except NotKeptError as skip:
        return skipped(url, frame.offset, when, skip.why, skip.detail)
    return record


def message(block: bytes, fields: dict[str, str]) -> Original:
    """(status, headers, raw body) of a response or resource record's block."""
    http = (
        split_http(block)
        if "application/http" in fields.get("content-type", "").lower() or block[:5] == b"HTTP/"
        else None
    )
    if http is not None:
        return http
    return 200, [("Content-Type", fields.get("content-type", ""))], block


def original_at(fh: IO[bytes], offset: int, cap: int) -> Original | None:
    """The (status, headers, raw body) of the response or resource record at ``offset``, for a
    revisit that names it; None when no readable record is there."""
    for frame in frames(fh, WARC, offset, offset + 1, cap=cap):
        if frame.header is None or frame.block is None:
            return None
        return message(frame.block, frame.header.fields)
    return None


def payload_of(original: Original, cap: int) -> Payload:
    return payload(*original, cap)
