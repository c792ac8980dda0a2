"""How far an index job's map tasks have got, on this machine's runners: each task writes the
records it has read so far into a file of its own in a folder the build names
(``mr_index --progress-dir``), and the build sums the files while the job runs
(``services.indexing.job_progress``). mrjob's local runner reports a task's counters only
when it ends: a million-document build was silent for minutes. EMR's steps report their own
progress (``services.indexing.emr_options.show_emr_progress``)."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable
from pathlib import Path

REPORT_EVERY = 1.0  # seconds between a task's writes


class TaskProgress:
    """One task's count of records read, written at most every ``REPORT_EVERY`` seconds (and
    when it ends) to a file named for the task alone: the inline runner runs every task in
    one process."""

    def __init__(self, folder: str | None, clock: Callable[[], float] = time.monotonic) -> None:
        self.path = Path(folder) / uuid.uuid4().hex if folder else None
        self._clock = clock
        self._written = -REPORT_EVERY

    def records(self, count: int, *, final: bool = False) -> None:
        if self.path is None:
            return
        now = self._clock()
        if not final and now - self._written < REPORT_EVERY:
            return
        self._written = now
        partial = self.path.with_suffix(".part")
        partial.write_text(str(count))
        os.replace(partial, self.path)  # a reader sees the old count or the new, never half


def records_read(folder: Path) -> int:
    """The records every task in ``folder`` has read so far (0 before any has written)."""
    total = 0
    for path in folder.iterdir() if folder.is_dir() else ():
        if path.suffix:
            continue  # a task's file being written
        try:
            total += int(path.read_text() or 0)
        except (OSError, ValueError):  # gone or replaced meanwhile: counted at the next look
            continue
    return total
