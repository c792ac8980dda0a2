"""The base of jobs whose input is a manifest of record-block names.

Each input line names one record block in the blob store (the report's
"list of block names as input"), so a map task reads whole blocks (or its share of
one, below) with one GET each and the number of map tasks scales with the number of blocks. The
store is named by passthrough options, never by environment variables: the
task sees exactly what the driver (``services.indexing.runner``) decided.

A recrawl that changed a page appends its new record to the current block
and repoints the document row, so old blocks keep stale versions. A
manifest line therefore also says which documents' CURRENT record each block
holds: ``<block>\t<doc_num>,<doc_num>,...`` (from the documents table), and
the mapper skips every other record (counter ``blocks/stale_records_skipped``).
A document recrawled twice within one block's lifetime has two records there;
records are only appended, so the later one is the current one. A line with a
bare block name (hand-made inputs) reads every record of the block.

An entry may also say where the record is: ``<doc_num>:<index>`` (the record's
position in its block, the documents row's ``content_index``). The record at
that position is the document's, whatever doc_num it carries: crawl workers
write blocks before the committer numbers the documents (``services.crawler.
ordered_commit``), so their records carry -1 and get their number here.

A block may be dealt to several map tasks (``services.indexing.manifest``: parts even by
records, where a whole block would leave one task the longer): each task's line then ends
in its share of the block's positions, ``\t<first>-<end>`` (``<end>`` left out: to the
block's end), and where the documents table knows them, the bytes those records lie in,
``@<byte>-<byte>`` (a ranged read: nothing before or after them is fetched or inflated).
Its entries all name positions within it; records outside it are another line's, neither
read nor counted stale here.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import groupby

from mrjob.protocol import StandardJSONProtocol

from mapreduce.errors import ManifestError
from mapreduce.task_output import BufferedOutputJob
from services.storage.blobs.blobstore import BlobStore, open_blobstore
from services.storage.formats.records import Record, iter_records


def manifest_lines(current: Iterable[tuple[str, int] | tuple[str, int, int]]) -> Iterator[str]:
    """Manifest lines (with newline) from (record_block, doc_num[, content_index]) rows of the
    documents table.

    The rows must come ordered by block (``ORDER BY record_block, doc_num``), so one
    block's doc_nums are in memory at a time, never the whole table. A block
    holding no current record has no row, so it is not listed and never read.
    """
    for block, entries in block_entries(current):
        yield manifest_line(block, entries)


def block_entries(
    current: Iterable[tuple[str, int] | tuple[str, int, int] | tuple[str, int, int, int]],
) -> Iterator[tuple[str, list[tuple[int, ...]]]]:
    """Each block's entries, (doc_num[, content_index[, record_offset]]) ascending, from rows
    ordered by block (``manifest_lines``); a block that comes twice or whose name would break
    the line format is refused."""
    done: set[str] = set()
    for block, group in groupby(current, key=lambda row: row[0]):
        if block in done:
            raise ManifestError(
                f"record block {block!r} came twice: pass the documents ordered by record_block"
            )
        done.add(block)
        if "\t" in block or "\n" in block:
            raise ManifestError(
                f"record block name {block!r} contains a tab or newline; "
                "rename the block (the manifest is tab-separated)"
            )
        yield block, sorted((int(row[1]), *(int(x) for x in row[2:])) for row in group)


@dataclass(frozen=True)
class Span:
    """A line's share of its block: the records at positions ``first`` .. ``end`` - 1
    (``end`` None: to the block's end), lying in bytes ``byte_first`` .. ``byte_end`` - 1
    of the block when the line says (``byte_end`` None: to its end)."""

    first: int
    end: int | None = None
    byte_first: int | None = None
    byte_end: int | None = None

    def text(self) -> str:
        positions = f"{self.first}-{_blank(self.end)}"
        if self.byte_first is None:
            return positions
        return f"{positions}@{self.byte_first}-{_blank(self.byte_end)}"

    @classmethod
    def parse(cls, text: str) -> Span:
        """A span's text; a ValueError names what is wrong with it."""
        positions, at, places = text.partition("@")
        first, dash, end = positions.partition("-")
        byte_first, byte_dash, byte_end = places.partition("-")
        if not dash or (at and not byte_dash):
            raise ValueError(f"span {text!r} is not <first>-<end>[@<byte>-<byte>]")
        if at and (end.strip() == "") != (byte_end.strip() == ""):
            raise ValueError(f"span {text!r} ends at a position or a byte but not both")
        span = cls(
            int(first),
            int(end) if end.strip() else None,
            int(byte_first) if at else None,
            int(byte_end) if at and byte_end.strip() else None,
        )
        if (span.end is not None and span.end <= span.first) or (
            span.byte_first is not None and span.byte_end is not None and span.byte_end <= span.byte_first
        ):
            raise ValueError(f"span {text!r} is empty")
        return span

    def holds(self, position: int) -> bool:
        return self.first <= position and (self.end is None or position < self.end)


def _blank(value: int | None) -> str:
    return "" if value is None else str(value)


def manifest_line(block: str, entries: Iterable[tuple[int, ...]], span: Span | None = None) -> str:
    """One block's line: its entries, (doc_num[, content_index]; what follows them in a tuple
    is not written); ``span``: its share when the block is dealt to several tasks."""
    nums = ",".join(":".join(str(x) for x in entry[:2]) for entry in entries)
    if span is None:
        return f"{block}\t{nums}\n"
    return f"{block}\t{nums}\t{span.text()}\n"


@dataclass(frozen=True)
class Wanted:
    """Which records of a block are current: by doc_num, and by position where the line says."""

    nums: frozenset[int]
    positions: dict[int, int]  # record position in the block -> its doc_num
    span: Span | None = None  # the line's share of the block; None: all of it

    def __len__(self) -> int:
        return len(self.nums)


def parse_manifest_line(line: str) -> tuple[str, Wanted | None]:
    """(block name, the records it holds that are current, or None for "every record")."""
    name, tab, rest = line.strip("\r\n").partition("\t")
    name = name.strip()
    if not tab:
        return name, None
    nums, _, span_text = rest.partition("\t")
    listed: set[int] = set()
    positions: dict[int, int] = {}
    span: Span | None = None
    try:
        for entry in nums.split(","):
            if not entry.strip():
                continue
            num, colon, index = entry.partition(":")
            listed.add(int(num))
            if colon:
                positions[int(index)] = int(num)
        if span_text.strip():
            span = Span.parse(span_text.strip())
    except ValueError as exc:
        raise ManifestError(
            f"manifest line for {name!r} has a bad doc_num list or span ({exc}): expected "
            "'<block>\\t<doc_num>[:<index>],...[\\t<first>-<end>[@<byte>-<byte>]]'; "
            "rebuild it with `nimbus index`"
        ) from exc
    if span is not None:
        outside = [i for i in positions if not span.holds(i)]
        if len(positions) != len(listed) or outside:
            raise ManifestError(
                f"manifest line for {name!r} reads positions {span_text.strip()} but lists "
                f"{'a record outside them' if outside else 'a doc_num without its position'}; "
                "rebuild it with `nimbus index`"
            )
    return name, Wanted(frozenset(listed), positions, span)


def current_records(records: Iterable[Record], wanted: Wanted | None) -> tuple[list[Record], int]:
    """(records to index, stale records skipped) of one block, in block order.

    With ``wanted`` None every record counts. A doc_num listed with its position
    takes the record there (renumbered). Otherwise only doc_nums in ``wanted``,
    and of a doc_num that occurs twice only its last record (appended later, so
    newer); everything else is a stale version.
    """
    if wanted is None:
        kept = list(records)
        return kept, 0
    latest: dict[int, Record] = {}
    seen = 0
    # A line's share of a block: ``records`` are those of its span (``iter_records``).
    for position, record in enumerate(records, start=wanted.span.first if wanted.span else 0):
        seen += 1
        num = wanted.positions.get(position)
        if num is not None:
            record.doc_num = num
        elif wanted.positions or record.doc_num not in wanted.nums:
            continue
        latest.pop(record.doc_num, None)  # re-insert: block order of the latest version
        latest[record.doc_num] = record
    return list(latest.values()), seen - len(latest)


class RecordBlockJob(BufferedOutputJob):
    # The standard json module everywhere: floats round-trip exactly
    # (ujson/rapidjson, which mrjob prefers when installed, may not).
    INTERNAL_PROTOCOL = StandardJSONProtocol
    OUTPUT_PROTOCOL = StandardJSONProtocol

    _store: BlobStore | None = None
    _counts: Counter[tuple[str, str]] | None = None

    def count(self, group: str, name: str, amount: int = 1) -> None:
        """Add to a counter in memory; ``flush_counts`` reports the sums.

        ``increment_counter`` writes a line to stderr that the runner parses:
        once per key in a reducer that sees 100,000 keys, that costs seconds.
        """
        if self._counts is None:
            self._counts = Counter()
        if amount:
            self._counts[group, name] += amount

    def flush_counts(self) -> None:
        """Report the counters summed by ``count`` (a task's ``*_final``)."""
        for (group, name), amount in (self._counts or {}).items():
            self.increment_counter(group, name, amount)
        self._counts = None

    def configure_args(self) -> None:
        super().configure_args()
        self.add_passthru_arg(
            "--blob-url", required=True, help="blob store holding the record blocks (file://... or s3://...)"
        )
        self.add_passthru_arg(
            "--aws-endpoint-url", default=None, help="S3-compatible endpoint (moto, MinIO); AWS when omitted"
        )

    def store(self) -> BlobStore:
        if self._store is None:
            self._store = open_blobstore(self.options.blob_url, self.options.aws_endpoint_url)
        return self._store

    def block_records(self, line: str) -> Iterator[Record]:
        """The current records of the block a manifest line names (blank lines are skipped)."""
        name, wanted = parse_manifest_line(line)
        if not name:
            return
        self.increment_counter("blocks", "read")
        span = wanted.span if wanted is not None else None
        if span is not None and span.byte_first is not None:
            # Only the span's bytes: its first record is at ``byte_first``.
            data = self.store().get(name, span.byte_first, span.byte_end)
            records = iter_records(data, name=name)
        else:
            data = self.store().get(name)
            records = iter_records(
                data, name=name, start=span.first if span else 0, stop=span.end if span else None
            )
        if wanted is None:  # stream: nothing to compare
            count = 0
            for record in records:
                count += 1
                yield record
            self.increment_counter("blocks", "records", count)  # once a block: each is a line
            return  # the runner parses
        kept, stale = current_records(_counted(records, span, name), wanted)
        if stale:
            self.increment_counter("blocks", "stale_records_skipped", stale)
        missing = len(wanted) - len(kept)
        if missing:
            # The documents table names a record the block lacks: a stale manifest.
            self.increment_counter("blocks", "listed_records_missing", missing)
        self.increment_counter("blocks", "records", len(kept))
        yield from kept


def _counted(records: Iterator[Record], span: Span | None, name: str) -> Iterator[Record]:
    """``records``, checked to be as many as ``span`` says where it gives both its ends: a
    byte range that is not its positions' (a manifest older than the block's last rewrite)
    would number other records as the listed documents."""
    count = 0
    for record in records:
        count += 1
        yield record
    if span is not None and span.end is not None and count != span.end - span.first:
        raise ManifestError(
            f"{name}: the manifest's span {span.text()} holds {count} records, not "
            f"{span.end - span.first}: the block changed since the manifest was written; "
            "rebuild it with `nimbus index`"
        )
