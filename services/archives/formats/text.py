"""Text files (plain, gzip or bz2: mail folders, logs, one record a line) cut into records by
``start`` and ``end`` patterns, as Yioop's text archives are.

Patterns are regular expressions matched against each line: a line matching ``start``
begins a record (and ends the one before); a line matching ``end`` ends one (and is part
of it). With only ``end``, a record begins at the line after the last end; with neither,
every line is a record. Each record is a document: its title the first group of the
``title`` pattern's first match (``^Subject: (.*)`` for mail), else its first non-blank
line; its URL ``url_template`` filled in with ``{file}``, ``{offset}`` and the start
pattern's named groups, else ``https://<bundle>.collection.invalid/<file>/<offset>``:
stable, since the offset of a record in its file does not change.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO
from urllib.parse import quote

from services.archives.formats.jsonl import collection_host, lines
from services.archives.records import ArchiveRecord, Document, Skip, damaged, skipped
from services.text.errors import BadUrlError
from services.text.urls import normalize_url

MAX_TITLE = 200


@dataclass(frozen=True)
class Patterns:
    start: re.Pattern[bytes] | None
    end: re.Pattern[bytes] | None
    title: re.Pattern[bytes] | None = None

    @classmethod
    def of(cls, start: str, end: str, title: str = "") -> Patterns:
        return cls(*(re.compile(p.encode()) if p else None for p in (start, end, title)))


@dataclass
class TextRecord:
    offset: int
    data: bytes | None  # None when over the cap
    groups: dict[str, str]


def records(stream: IO[bytes], start: int, stop: int, patterns: Patterns, cap: int) -> Iterator[TextRecord]:
    """The records that start in [start, stop) (``stream`` at ``start``, a record start)."""
    parts: list[bytes] = []
    size, begin, open_ = 0, start, False
    groups: dict[str, str] = {}
    for offset, line in lines(stream, start, 2**62, cap):
        match = patterns.start.search(line) if patterns.start is not None and line is not None else None
        if match is not None and open_:
            yield TextRecord(begin, b"".join(parts) if size <= cap else None, groups)
            open_ = False
        if not open_:
            if offset >= stop:
                return
            if patterns.start is not None and match is None and patterns.end is None:
                continue  # before the first start: not a record
            parts, size, begin, open_ = [], 0, offset, True
            groups = {
                k: v.decode("utf-8", "replace") for k, v in (match.groupdict() if match else {}).items() if v
            }
        size += len(line) if line is not None else cap + 1
        if size <= cap and line is not None:
            parts.append(line)
        ends = line is not None and patterns.end is not None and patterns.end.search(line) is not None
        if ends or (patterns.start is None and patterns.end is None):
            yield TextRecord(begin, b"".join(parts) if size <= cap else None, groups)
            open_ = False
    if open_:
        yield TextRecord(begin, b"".join(parts) if size <= cap else None, groups)


def read_text(
    stream: IO[bytes],
    name: str,
    file: str,
    start: int,
    stop: int,
    *,
    patterns: Patterns,
    collection: str,
    url_template: str,
    cap: int,
    fetched_at: float,
    language: str = "",
) -> Iterator[ArchiveRecord]:
    host = collection_host(collection)
    for record in records(stream, start, stop, patterns, cap):
        url = _url(url_template, host, file, record)
        if url is None:
            yield damaged(name, record.offset, fetched_at, Skip.CORRUPT, "the record's URL is not usable")
            continue
        if record.data is None:
            yield skipped(url, record.offset, fetched_at, Skip.TOO_LARGE, "text")
            continue
        text = record.data.decode("utf-8", "replace").strip()
        if not text:
            yield skipped(url, record.offset, fetched_at, Skip.EMPTY, "text")
            continue
        yield ArchiveRecord(
            url,
            record.offset,
            fetched_at,
            document=Document(_title(record.data, text, patterns), text, [], language),
        )


def _title(data: bytes, text: str, patterns: Patterns) -> str:
    if patterns.title is not None:
        for line in data.splitlines():
            match = patterns.title.search(line)
            if match:
                return (
                    (match.group(1) if match.groups() else match.group(0))
                    .decode("utf-8", "replace")
                    .strip()[:MAX_TITLE]
                )
    return next((line.strip() for line in text.splitlines() if line.strip()), "")[:MAX_TITLE]


def _url(template: str, host: str, file: str, record: TextRecord) -> str | None:
    try:
        if template:
            values = {k: quote(v, safe="") for k, v in record.groups.items()}
            return normalize_url(template.format(file=quote(file), offset=record.offset, **values))
        return normalize_url(f"https://{host}/{quote(file)}/{record.offset}")
    except (BadUrlError, KeyError, IndexError, ValueError):
        return None
