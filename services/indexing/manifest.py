"""The index build's input: the manifest of record blocks, dealt over map tasks.

One line per record block, ``<block>\t<doc_nums whose current record is there>``
(the format is the jobs' own: ``mapreduce.record_job``), written from the
documents table, so records a recrawl superseded are skipped by the mappers.
"""

from __future__ import annotations

import contextlib
import gzip
import os
from pathlib import Path
from typing import NamedTuple

import numpy as np
from sqlalchemy import ColumnElement, func, select
from sqlalchemy.orm import Session

from mapreduce.record_job import manifest_lines
from services.config import Settings
from services.storage.sql.models import Document

MANIFEST_PARTS = 64  # map tasks per job on EMR at most; beyond that a task reads several blocks


def manifest_parts(settings: Settings) -> int:
    """Map tasks per job: ``NIMBUS_MR_MAP_TASKS``, or one per core on one machine (each
    task costs a process start and imports; more tasks than cores only queue),
    ``MANIFEST_PARTS`` on EMR."""
    if settings.index.mr_map_tasks > 0:
        return settings.index.mr_map_tasks
    return MANIFEST_PARTS if settings.index.mr_runner == "emr" else max(1, os.cpu_count() or 1)


class Manifest(NamedTuple):
    """What ``write_manifest_parts`` wrote."""

    paths: list[Path]
    blocks: int  # record blocks listed
    # The documents listed, ascending: exactly what a job over the files reads, whatever was
    # committed between this and the build's other queries (a crawl racing the build).
    docs: np.ndarray

    @property
    def docs_end(self) -> int:
        """One past the largest doc_num listed (0: none)."""
        return int(self.docs[-1]) + 1 if self.docs.shape[0] else 0


def write_manifest_parts(
    session: Session,
    directory: Path,
    parts: int = MANIFEST_PARTS,
    where: ColumnElement[bool] | None = None,
) -> Manifest:
    """The job input from the documents table, dealt in contiguous runs of blocks over up to
    ``parts`` gzip files (``Manifest``: the files, the blocks and the documents listed).

    One line per record block: ``<block>\t<doc_nums whose current record is there>``
    (see ``mapreduce.record_job``). Rows stream in (block, doc_num) order, so the
    table is never held as ORM objects.

    Hadoop and mrjob's runners give each gzip file to one map task whole, so
    the job runs exactly that many map tasks, balanced by the records they read (``deal``). (A single
    uncompressed manifest would be split by bytes instead, and its last, lone
    task keeps one core idle for a long tail of the index job
    (docs/performance-notes.md); one task per block pays a process start and
    imports per block.) Block names begin with their first doc_num, so
    contiguous runs of names give each task its own range of documents: the
    index reducer then joins a term's pieces from the tasks without decoding
    them (``mapreduce.postings_wire.join_pieces``). Dealt round-robin, every
    task's pieces would span the whole collection and have to be merged, most
    of the reduce phase (docs/benchmarks.md).

    ``where`` limits the documents (an incremental update's: those newer than its base).
    """
    live = Document.removed_at.is_(None)  # a page a recrawl found gone or noindex is left out
    sizes_query = select(Document.record_block, func.count()).where(live)
    rows_query = select(Document.record_block, Document.doc_num, Document.content_index).where(live)
    if where is not None:
        sizes_query, rows_query = sizes_query.where(where), rows_query.where(where)
    sizes = session.execute(sizes_query.group_by(Document.record_block).order_by(Document.record_block)).all()
    part_of = dict(
        zip([block for block, _ in sizes], deal([int(size or 0) for _, size in sizes], parts), strict=True)
    )
    count = max(1, min(parts, len(sizes)))
    paths = [directory / f"manifest-{i:05d}.txt.gz" for i in range(count)]
    rows = session.execute(rows_query.order_by(Document.record_block, Document.doc_num))
    blocks = 0
    listed: list[int] = []

    def noted(row: tuple[str, int, int]) -> tuple[str, int, int]:
        listed.append(row[1])
        return row

    with contextlib.ExitStack() as stack:
        files = [stack.enter_context(gzip.open(path, "wt", encoding="utf-8")) for path in paths]
        for line in manifest_lines(noted((b, n, x)) for b, n, x in rows):
            # A block committed after the sizes were read (a crawl racing the build): the last part.
            files[part_of.get(line.partition("\t")[0], count - 1)].write(line)
            blocks += 1
    return Manifest(paths, blocks, np.unique(np.array(listed, dtype=np.int64)))


def deal(sizes: list[int], parts: int) -> list[int]:
    """The part (0 .. min(parts, blocks) - 1) of each block, given the blocks' sizes (their
    current records) in order: contiguous runs, each part at least one block, the parts'
    sizes as even as runs allow (a block goes where its middle falls).

    Why records and not a count of blocks: a crawl's blocks differ (the 100,000-document
    benchmark's hold 499 to 8,570 records), and a map task's time follows its records;
    dealt nine blocks each, one of two index map tasks read 53,207 records, the other
    34,126, and the job waited for the larger (docs/performance-notes.md). Their compressed
    bytes balanced worse there (46,580 and 40,753 records: CPU 12.8 and 11.5 s)."""
    count = max(1, min(parts, len(sizes)))
    total = sum(sizes)
    out: list[int] = []
    before = 0
    for i, size in enumerate(sizes):
        wanted = int((before + size / 2) * count // total) if total else i * count // len(sizes)
        previous = out[-1] if out else -1
        # No part skipped and none left empty: one step at most, and room for the blocks left.
        part = max(min(wanted, previous + 1, count - 1), previous, count - (len(sizes) - i))
        out.append(part)
        before += size
    return out
