"""ARC files (the Internet Archive's format before WARC; v1, and v2's longer header line),
gzip record by record or plain, to ``ArchiveRecord``s.

A record is one header line, ``URL IP-address archive-date content-type length`` (v2 puts
five more fields before the length), then ``length`` bytes: the HTTP response as
captured. The first record (``filedesc://``) describes the file and is skipped. A header
line with missing fields is damage: reported with its offset, and reading goes on at
the next gzip member or the next line that reads as an ARC header.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import IO

from services.archives.compression import DamageError
from services.archives.formats.framing import Frame, Header, HeaderParser, first_line, frames
from services.archives.formats.http import NotKeptError, payload, split_http
from services.archives.records import ArchiveRecord, Skip, damaged, skipped

_HEADER_LINE = re.compile(rb"\S+:\S* \S+ \d{12,14} \S+ (?:\S+ ){0,5}\d+\r?\n\Z")
_FIELDS = "URL IP-address archive-date content-type length"


class ArcHeader(HeaderParser):
    trailer = b"\n"

    def parse(self, stream: IO[bytes]) -> Header | None:
        line = first_line(stream, "ARC header")
        if not line:
            return None
        parts = line.split()
        if len(parts) < 5:
            raise DamageError(0, f"ARC header has {len(parts)} fields, needs 5 ({_FIELDS}): {line[:60]!r}")
        if not parts[-1].isdigit():
            raise DamageError(0, f"ARC header's last field (the length) is {parts[-1][:20]!r}, not a number")
        fields = {
            "url": parts[0].decode("utf-8", "replace"),
            "ip": parts[1].decode("latin-1"),
            "date": parts[2].decode("latin-1"),
            "type": parts[3].decode("latin-1"),
        }
        return Header(fields, int(parts[-1]), "1" if len(parts) == 5 else "2")

    def starts_record(self, line: bytes) -> bool:
        return bool(_HEADER_LINE.match(line))


ARC = ArcHeader()


def arc_date(value: str) -> float | None:
    """An ARC archive-date (YYYYMMDDhhmmss, UTC; 12 digits in the oldest files) as epoch seconds."""
    try:
        return datetime.strptime(value[:14].ljust(14, "0"), "%Y%m%d%H%M%S").replace(tzinfo=UTC).timestamp()
    except ValueError:
        return None


def read_arc(
    fh: IO[bytes], name: str, start: int, stop: int, *, cap: int, fetched_at: float, every_type: bool = False
) -> Iterator[ArchiveRecord]:
    """The records that start in [start, stop) of an ARC file named ``name`` (for messages);
    ``every_type``: payloads of every media type kept (``http.payload``)."""
    for frame in frames(fh, ARC, start, stop, cap=cap):
        yield to_record(frame, name, cap, fetched_at, every_type)


def to_record(
    frame: Frame, name: str, cap: int, default_time: float, every_type: bool = False
) -> ArchiveRecord:
    if frame.damage is not None or frame.header is None:
        damage = frame.damage or DamageError(frame.offset, "unreadable record")
        why = Skip.TRUNCATED if damage.truncated else Skip.CORRUPT
        return damaged(name, frame.offset, default_time, why, damage.what)
    fields = frame.header.fields
    url = fields["url"]
    when = arc_date(fields["date"]) or default_time
    if url.startswith(("filedesc:", "dns:")):
        return skipped(url, frame.offset, when, Skip.RECORD_TYPE, url.split(":", 1)[0])
    if frame.too_large:
        return skipped(url, frame.offset, when, Skip.TOO_LARGE, "response")
    block = frame.block or b""
    http = split_http(block)
    status, headers, body = http if http is not None else (200, [("Content-Type", fields["type"])], block)
    record = ArchiveRecord(url, frame.offset, when, ip=fields["ip"] if fields["ip"] != "-" else "")
    try:
        record.payload = payload(status, headers, body, cap, every_type)
    except NotKeptError as skip:
        return skipped(url, frame.offset, when, skip.why, skip.detail)
    return record
