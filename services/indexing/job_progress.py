"""The index job's progress line while its tasks run on this machine: the records the tasks
have read (``mapreduce.task_progress``), their rate and the time left, every few seconds."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

from mapreduce.task_progress import records_read

SAY_EVERY = 5.0  # seconds between lines


def progress_line(done: int, total: int | None, seconds: float) -> str:
    """``done of total records (rate/s, ETA)``; the total and ETA left out when unknown."""
    rate = done / seconds if seconds > 0 else 0.0
    if not total:
        return f"    {done:,} records read ({rate:,.0f} records/s)"
    share = 100 * done / total
    left = f", ETA {max(total - done, 0) / rate:,.0f} s" if rate > 0 else ""
    return f"    {done:,} of {total:,} records read, {share:.0f} % ({rate:,.0f} records/s{left})"


class JobProgress:
    """While open, a thread that says ``progress_line`` every ``every`` seconds (``SAY_EVERY``)
    when the count has moved."""

    def __init__(
        self,
        folder: Path,
        total: int | None,
        say: Callable[[str], None],
        every: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.folder, self.total, self.say, self.clock = folder, total, say, clock
        self.every = SAY_EVERY if every is None else every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="index-progress", daemon=True)

    def __enter__(self) -> JobProgress:
        self.folder.mkdir(parents=True, exist_ok=True)
        self._started = self.clock()
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        shown = 0
        while not self._stop.wait(self.every):
            done = records_read(self.folder)
            if done != shown:
                shown = done
                line = progress_line(done, self.total, self.clock() - self._started)
                self.say(line)
