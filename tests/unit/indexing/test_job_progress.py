"""The index job's progress line: records read of the total, the rate, the time left."""

from __future__ import annotations

import threading
from pathlib import Path

from mapreduce.task_progress import TaskProgress
from services.indexing.job_progress import JobProgress, progress_line
from tests.polling import wait_for


def test_the_line_gives_the_share_the_rate_and_the_time_left() -> None:
    assert progress_line(25_000, 100_000, 5.0) == (
        "    25,000 of 100,000 records read, 25 % (5,000 records/s, ETA 15 s)"
    )
    assert progress_line(0, 100_000, 5.0) == "    0 of 100,000 records read, 0 % (0 records/s)"
    assert progress_line(300, None, 2.0) == "    300 records read (150 records/s)"


def test_a_line_is_said_when_the_tasks_count_moves_and_none_after_the_job(tmp_path: Path) -> None:
    lines: list[str] = []
    said = threading.Event()

    def say(line: str) -> None:
        lines.append(line)
        said.set()

    folder = tmp_path / "progress"
    with JobProgress(folder, 1_000, say, every=0.01) as progress:
        TaskProgress(str(folder)).records(400, final=True)
        wait_for(said.is_set, timeout=10, what="a progress line")
    assert not progress._thread.is_alive()  # the job's end stops the looks
    assert len(lines) == 1  # one line per change of the count, not one per look
    assert lines[0].startswith("    400 of 1,000 records read, 40 %")
