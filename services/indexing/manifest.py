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

from mapreduce.record_job import Span, block_entries, manifest_line
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
    """The job input from the documents table, dealt in contiguous runs of records over up to
    ``parts`` gzip files (``Manifest``: the files, the blocks and the documents listed).

    One line per record block (one per part it is dealt to, below):
    ``<block>\t<doc_nums whose current record is there>`` (see ``mapreduce.record_job``).
    Rows stream in (block, doc_num) order, so the table is never held as ORM objects.

    Hadoop and mrjob's runners give each gzip file to one map task whole, so
    the job runs exactly that many map tasks, balanced by the records they read
    (``deal_block``). (A single
    uncompressed manifest would be split by bytes instead, and its last, lone
    task keeps one core idle for a long tail of the index job
    (docs/performance-notes.md); one task per block pays a process start and
    imports per block.) Block names begin with their first doc_num, so
    contiguous runs of names give each task its own range of documents: the
    index reducer then joins a term's pieces from the tasks without decoding
    them (``mapreduce.postings_join.join_pieces``). Dealt round-robin, every
    task's pieces would span the whole collection and have to be merged, most
    of the reduce phase (docs/benchmarks.md).

    A block where one part ends and the next begins is dealt to both, each its run of the
    block's records by position (``record_job.manifest_line``'s span): whole blocks of up to
    10,000 records left one of the 100,000-document benchmark's two map tasks 55 % of the
    records, and the other core idle for the difference (docs/benchmarks.md).

    ``where`` limits the documents (an incremental update's: those newer than its base).
    """
    live = Document.removed_at.is_(None)  # a page a recrawl found gone or noindex is left out
    sizes_query = select(Document.record_block, func.count()).where(live)
    rows_query = select(
        Document.record_block, Document.doc_num, Document.content_index, Document.record_offset
    ).where(live)
    if where is not None:
        sizes_query, rows_query = sizes_query.where(where), rows_query.where(where)
    sizes = session.execute(sizes_query.group_by(Document.record_block).order_by(Document.record_block)).all()
    total = sum(int(size or 0) for _, size in sizes)
    count = max(1, min(parts, total))
    before: dict[str, int] = {}  # each block's first record in the whole run of records
    running = 0
    for block, size in sizes:
        before[block] = running
        running += int(size or 0)
    paths = [directory / f"manifest-{i:05d}.txt.gz" for i in range(count)]
    rows = session.execute(rows_query.order_by(Document.record_block, Document.doc_num))
    blocks = 0
    listed: list[int] = []

    def noted(row: tuple[str, int, int, int]) -> tuple[str, int, int, int]:
        listed.append(row[1])
        return row

    with contextlib.ExitStack() as stack:
        files = [stack.enter_context(gzip.open(path, "wt", encoding="utf-8")) for path in paths]
        for block, entries in block_entries(noted((b, n, x, o)) for b, n, x, o in rows):
            blocks += 1
            first = before.get(block)
            if first is None:  # committed after the sizes were read (a crawl racing the build)
                files[count - 1].write(manifest_line(block, entries))
                continue
            for part, share, span in deal_block(entries, first, total, count):
                files[part].write(manifest_line(block, share, span))
    return Manifest(paths, blocks, np.unique(np.array(listed, dtype=np.int64)))


def deal_block(
    entries: list[tuple[int, ...]], first: int, total: int, count: int
) -> list[tuple[int, list[tuple[int, ...]], Span | None]]:
    """A block's lines: (part, its entries, its ``Span`` or None for the whole block).

    The block's records are the ``first`` .. of ``total`` records dealt evenly over ``count``
    parts in order; record ``r`` goes to part ``r * count // total``. The block's entries
    (doc_num, content_index[, record_offset]) are taken in position order; where they fall in
    two parts or more, each part's run reads the positions from its first record to the next
    run's first (the first run from 0, the last to the block's end), so that every record of
    the block, current or stale, is in exactly one line's span; with the records' offsets,
    the span says their bytes too (each task reads only its own)."""
    parts = [min(count - 1, (first + i) * count // max(total, 1)) for i in range(max(len(entries), 1))]
    if parts[0] == parts[-1] or any(len(e) < 2 or e[1] < 0 for e in entries):
        return [(parts[0], entries, None)]
    by_position = sorted(entries, key=lambda e: e[1])
    with_bytes = all(len(e) >= 3 and e[2] >= 0 for e in entries)
    runs: list[tuple[int, list[tuple[int, ...]]]] = []
    for part, entry in zip(parts, by_position, strict=True):
        if runs and runs[-1][0] == part:
            runs[-1][1].append(entry)
        else:
            runs.append((part, [entry]))
    lines: list[tuple[int, list[tuple[int, ...]], Span | None]] = []
    for i, (part, run) in enumerate(runs):
        head = None if i == 0 else run[0]
        after = runs[i + 1][1][0] if i + 1 < len(runs) else None
        span = Span(
            0 if head is None else head[1],
            None if after is None else after[1],
            (0 if head is None else head[2]) if with_bytes else None,
            (None if after is None else after[2]) if with_bytes else None,
        )
        lines.append((part, sorted(run), span))
    return lines
