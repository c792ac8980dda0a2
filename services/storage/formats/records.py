"""Record blocks: one parsed record per document, beside its content block.

No later stage parses HTML or PDF again (Common Crawl's WARC/WET/WAT split is
the model): MapReduce jobs read records, the search service reads snippets
from them. A record block is a sequence of gzip members, one JSON record per
member. The concatenation is itself a valid gzip stream (a job reads the
whole block with ``gzip``), and each member can be fetched alone with a
ranged read at the offset and length kept in the documents table.
"""

from __future__ import annotations

import io
import json
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field, fields
from typing import Any

import ujson
from isal import igzip, isal_zlib

from services.storage.errors import BlockFormatError

# ISA-L's inflate error (igzip_lib.IsalError, no OSError); its stub declares it as an
# instance, it is a class. Anything inflating with ISA-L catches this one name.
INFLATE_ERROR: type[Exception] = isal_zlib.error  # type: ignore[assignment]


@dataclass
class Link:
    url: str
    anchor: str = ""


class LinksPickledFlat:
    """For a dataclass with a ``links: list[Link]`` field: its pickle holds the links as two
    plain lists. Pickle's cost grows with every dataclass instance, and a page has ~20 links
    (the crawler's write-ahead spool pickles every page: docs/benchmarks.md)."""

    links: list[Link]

    def __getstate__(self) -> dict[str, Any]:
        links = self.links
        return {**self.__dict__, "links": ([k.url for k in links], [k.anchor for k in links])}

    def __setstate__(self, state: dict[str, Any]) -> None:
        urls, anchors = state["links"]
        self.__dict__.update(state, links=[Link(u, a) for u, a in zip(urls, anchors, strict=True)])


@dataclass
class Record:
    doc_num: int
    url: str
    url_id: str  # hex SHA-1 of the normalized URL
    doc_id: str  # hex SHA-1 of the content bytes
    content_type: str
    title: str = ""
    text: str = ""
    description: str = ""
    lang: str = ""
    links: list[Link] = field(default_factory=list)
    fetched_at: float = 0.0
    content_block: str = ""
    content_index: int = -1
    noarchive: bool = False  # robots noarchive: the search service shows no cached copy
    keywords: str = ""  # <meta name=keywords>: indexed with the description (the meta field)
    # What a reader sees beside the text: menus, headers, footers, sidebars and link lists cut
    # out of it, and form words no text holds; indexed as the nav field, at a low weight
    # (services.ranking.bm25f), never shown in snippets. Records written before it have none.
    nav: str = ""

    def to_json(self) -> str:
        # The same JSON as dataclasses.asdict, built directly: asdict deep-copies
        # every field and link, which costs more than compressing the record.
        data = {name: getattr(self, name) for name in _RECORD_FIELDS}
        data["links"] = [{"url": link.url, "anchor": link.anchor} for link in self.links]
        # ujson: several times the standard encoder on a page's record; its floats
        # round-trip exactly (shortest repr), and readers use the standard decoder.
        return ujson.dumps(data, ensure_ascii=False, escape_forward_slashes=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any], links: bool = True) -> Record:
        """``links=False`` leaves ``links`` empty: a page's hundred links as objects cost more
        than its inflate and parse together, and a snippet needs only the text."""
        listed = data.get("links", []) if links else []
        made = [Link(**link) if isinstance(link, dict) else Link(*link) for link in listed]
        return cls(**{**data, "links": made})


_RECORD_FIELDS = tuple(f.name for f in fields(Record))


class RecordBlockWriter:
    def __init__(self) -> None:
        self._buf = io.BytesIO()
        self.count = 0

    def add(self, record: Record) -> tuple[int, int]:
        """Append a record; returns (offset, length) of its gzip member.

        ISA-L at level 1: a standard gzip member, several times faster than zlib's level 1 and
        smaller (docs/benchmarks.md); compressing records is much of the crawl's work off the GIL."""
        member = igzip.compress(record.to_json().encode("utf-8"), compresslevel=1, mtime=0)
        offset = self._buf.tell()
        self._buf.write(member)
        self.count += 1
        return offset, len(member)

    @property
    def size(self) -> int:
        return self._buf.tell()

    def to_bytes(self) -> bytes:
        return self._buf.getvalue()


def decode_record(member: bytes, name: str = "record block", links: bool = True) -> Record:
    """Decode one record from its gzip member (a ranged read); ``links=False``: without its
    links (``Record.from_dict``)."""
    try:
        # ISA-L's inflate and ujson, faster than gzip and json: a results page decodes ten records.
        data = ujson.loads(isal_zlib.decompress(member, 31))  # 31: gzip framing
        return Record.from_dict(data, links)
    except (OSError, EOFError, zlib.error, INFLATE_ERROR, ValueError, TypeError) as exc:
        raise BlockFormatError(f"{name}: corrupt record ({exc})") from exc


def _members(data: bytes, name: str) -> Iterator[bytes]:
    """The decompressed gzip members of a block, in order.

    ISA-L's inflate (``isal_zlib``, zlib's interface, faster than zlib; both
    MapReduce jobs read every block) reads one member at a time from 64 KB
    views of the block: not ``gzip.decompress``, which copies the rest of the
    buffer after every member (quadratic in a block's records), nor the gzip
    module's Python-level member loop; each record's JSON is then parsed on
    its own. Figures: docs/performance-notes.md.
    """
    view, at, end = memoryview(data), 0, len(data)
    while at < end:
        member = isal_zlib.decompressobj(31)  # 31: a gzip header and trailer
        parts = []
        try:
            while not member.eof:
                if at >= end:
                    raise BlockFormatError(
                        f"{name}: corrupt or truncated record block (the last record ends early)"
                    )
                piece = view[at : at + 65536]
                at += len(piece)
                parts.append(member.decompress(piece))
        except INFLATE_ERROR as exc:
            raise BlockFormatError(f"{name}: corrupt or truncated record block ({exc})") from exc
        at -= len(member.unused_data)
        yield b"".join(parts)


def leading_records(head: bytes) -> Iterator[Record]:
    """The records whose gzip members lie whole within ``head``, the first bytes of a block (a
    ranged read): a look at a block without reading all of it. A member cut off at the end
    ends the records; a corrupt one is an error, as in ``iter_records``."""
    view, at, end = memoryview(head), 0, len(head)
    while at < end:
        member = isal_zlib.decompressobj(31)  # 31: a gzip header and trailer
        try:
            data = member.decompress(view[at:])
        except INFLATE_ERROR as exc:
            raise BlockFormatError(f"corrupt record block ({exc})") from exc
        if not member.eof:
            return  # the rest of this member is past the bytes read
        at = end - len(member.unused_data)
        try:
            yield Record.from_dict(ujson.loads(data))
        except (ValueError, TypeError, AttributeError) as exc:
            raise BlockFormatError(f"corrupt record in a block's first bytes ({exc})") from exc


def iter_records(
    data: bytes, name: str = "record block", start: int = 0, stop: int | None = None
) -> Iterator[Record]:
    """The records of a whole block, in order: those at positions ``start`` to ``stop`` - 1
    (a map task's share of a block dealt to two, ``mapreduce.record_job``). The records
    before ``start`` are inflated and parsed, to count them (a member may hold several), but
    not made into records; reading ends at ``stop``."""
    position = 0
    for index, member in enumerate(_members(data, name)):
        if stop is not None and position >= stop:
            return
        try:
            # ujson: faster than the standard decoder on a page's record; its floats are exact.
            objects = [ujson.loads(member)]
        except ValueError:
            objects = _concatenated_json(member, name, index)  # several records in one member
        for obj in objects:
            if position < start or (stop is not None and position >= stop):
                position += 1
                continue
            position += 1
            try:
                record = Record.from_dict(obj)
            except (TypeError, AttributeError) as exc:  # JSON, but not a record
                raise BlockFormatError(f"{name}: record {index} is not a record ({exc})") from exc
            yield record


def _concatenated_json(member: bytes, name: str, index: int) -> list[dict[str, Any]]:
    decoder = json.JSONDecoder()
    try:
        s = member.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BlockFormatError(f"{name}: corrupt record {index} ({exc})") from exc
    objects, pos, end = [], 0, len(s)
    while pos < end:
        try:
            obj, pos = decoder.raw_decode(s, pos)
        except ValueError as exc:
            raise BlockFormatError(f"{name}: corrupt record {index} at character {pos} ({exc})") from exc
        objects.append(obj)
    return objects
