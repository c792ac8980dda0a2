"""What `nimbus index status` prints of the builds, and how `index now --wait` follows a
build's progress tail without printing a line twice."""

from __future__ import annotations

from services.cli.index_commands import _new_lines
from services.indexing.builds import BuildView, status_lines


def _build(**fields: object) -> BuildView:
    base: dict[str, object] = {
        "id": 1, "state": "requested", "requested_at": 0.0, "requested_by": "schedule", "runner": "",
        "started_at": None, "heartbeat_at": None, "finished_at": None, "worker": "", "segment": "",
        "error": "", "progress": "",
    }  # fmt: skip
    return BuildView(**{**base, **fields})  # type: ignore[arg-type]


def test_status_shows_each_builds_outcome_and_where_a_running_one_is() -> None:
    views = [
        _build(id=3, state="running", runner="emr", started_at=86400.0,
               progress="build: 1/4\nbuild: 2/4 index"),
        _build(id=2, state="failed", requested_by="alice@laptop", runner="inline", started_at=0.0,
               finished_at=5.0, error="no documents: crawl first", progress="build: started"),
        _build(id=1, state="succeeded", requested_by="admin", runner="local", started_at=0.0,
               finished_at=3725.0, segment="index/segment-a.nseg", progress="build: published"),
        _build(id=4),
    ]  # fmt: skip
    lines = status_lines(views, now=86400.0 + 65)
    assert lines[0].split() == ["build", "state", "requested", "by", "runner", "started", "(UTC)", "took"]
    assert lines[1].split() == [
        "3",
        "running",
        "schedule",
        "emr",
        "1970-01-02",
        "00:00:00",
        "1",
        "min",
        "5",
        "s",
    ]
    assert lines[2] == "       last progress: build: 2/4 index"
    assert lines[3].split()[:4] == ["2", "failed", "alice@laptop", "inline"] and lines[3].endswith(" 5 s")
    assert lines[4:6] == ["       error: no documents: crawl first", "       last progress: build: started"]
    assert lines[6].endswith(" 1 h 2 min") and lines[7] == "       segment: index/segment-a.nseg"
    assert lines[8].split() == ["4", "requested", "schedule", "-", "-", "-"]
    assert status_lines([], 0.0) == ["no index builds yet: `nimbus index now` asks for one"]


def test_a_followed_progress_tail_prints_only_new_lines() -> None:
    assert _new_lines([], ["a", "b"]) == ["a", "b"]
    assert _new_lines(["a", "b"], ["a", "b"]) == []
    assert _new_lines(["a", "b"], ["a", "b", "c"]) == ["c"]
    assert _new_lines(["a", "b", "c"], ["b", "c", "d", "e"]) == ["d", "e"]  # the tail moved on
    assert _new_lines(["a", "b"], ["x", "y"]) == ["x", "y"]  # moved past all that was shown
