"""A map task's count of records read, as the build reads it while the job runs."""

from __future__ import annotations

from pathlib import Path

from mapreduce.task_progress import REPORT_EVERY, TaskProgress, records_read


def test_tasks_counts_are_summed_written_at_most_every_second_and_always_at_the_end(tmp_path: Path) -> None:
    now = [100.0]
    first, second = (TaskProgress(str(tmp_path), clock=lambda: now[0]) for _ in range(2))
    assert records_read(tmp_path) == 0
    first.records(10)
    second.records(5)
    assert records_read(tmp_path) == 15
    first.records(20)  # within the same second: not written
    assert records_read(tmp_path) == 15
    now[0] += REPORT_EVERY
    first.records(30)
    assert records_read(tmp_path) == 35
    second.records(7, final=True)  # a task's end is always written
    assert records_read(tmp_path) == 37
    assert not list(tmp_path.glob("*.part"))


def test_without_a_folder_nothing_is_written_and_a_missing_folder_reads_zero(tmp_path: Path) -> None:
    TaskProgress(None).records(10, final=True)
    assert records_read(tmp_path / "none") == 0
    (tmp_path / "half.part").write_text("9")  # a task's file being written is not counted
    assert records_read(tmp_path) == 0
