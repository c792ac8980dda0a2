"""The base of jobs whose input is a manifest of record-block names.

Each input line names one record block in the blob store (the report's
"list of block names as input"), so a map task reads whole blocks with one
GET each and the number of map tasks scales with the number of blocks. The
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
        entries = sorted((int(row[1]), *(int(x) for x in row[2:])) for row in group)
        nums = ",".join(":".join(str(x) for x in entry) for entry in entries)
        yield f"{block}\t{nums}\n"


@dataclass(frozen=True)
class Wanted:
    """Which records of a block are current: by doc_num, and by position where the line says."""

    nums: frozenset[int]
    positions: dict[int, int]  # record position in the block -> its doc_num

    def __len__(self) -> int:
        return len(self.nums)


def parse_manifest_line(line: str) -> tuple[str, Wanted | None]:
    """(block name, the records it holds that are current, or None for "every record")."""
    name, tab, nums = line.strip("\r\n").partition("\t")
    name = name.strip()
    if not tab:
        return name, None
    listed: set[int] = set()
    positions: dict[int, int] = {}
    try:
        for entry in nums.split(","):
            if not entry.strip():
                continue
            num, colon, index = entry.partition(":")
            listed.add(int(num))
            if colon:
                positions[int(index)] = int(num)
    except ValueError as exc:
        raise ManifestError(
            f"manifest line for {name!r} has a bad doc_num list ({exc}): expected "
            "'<block>\\t<doc_num>[:<index>],...'; rebuild it with `nimbus index`"
        ) from exc
    return name, Wanted(frozenset(listed), positions)


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
    for position, record in enumerate(records):
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
        data = self.store().get(name)
        if wanted is None:  # stream: nothing to compare
            count = 0
            for record in iter_records(data, name=name):
                count += 1
                yield record
            self.increment_counter("blocks", "records", count)  # once a block: each is a line
            return  # the runner parses
        kept, stale = current_records(iter_records(data, name=name), wanted)
        if stale:
            self.increment_counter("blocks", "stale_records_skipped", stale)
        missing = len(wanted) - len(kept)
        if missing:
            # The documents table names a record the block lacks: a stale manifest.
            self.increment_counter("blocks", "listed_records_missing", missing)
        self.increment_counter("blocks", "records", len(kept))
        yield from kept
