"""The queue of index builds (the ``index_builds`` table): asked for, taken, heartbeaten, ended.

Every writer of the table goes through these functions: ``nimbus index now`` and the admin
API ask (``request_build``), the indexer's daemon adds the schedule's rows
(``schedule_if_due``), takes the oldest asked-for row (``take_next``), renews it while it
builds (``beat``) and ends it (``finish``); a row whose heartbeat stopped is failed by the
next daemon (``fail_stale``). Readers (``nimbus index status``, the admin API) get plain
records from ``recent_builds``.

Invariants: a row is ``running`` only while a daemon heartbeats it; at most one daemon takes
a row (``take_next`` is a compare-and-set on its state, after ``FOR UPDATE SKIP LOCKED`` on
MySQL); a build's outcome is written only by the daemon that ran it (``worker``).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any, cast

from sqlalchemy import CursorResult, Update, func, select, update
from sqlalchemy.orm import Session

from services.storage.sql.index_versions import active_index
from services.storage.sql.models import IndexBuild

SCHEDULE = "schedule"  # requested_by of the rows the schedule adds
ANALYZER = "analyzer change"  # requested_by of a rebuild for a segment of another analyzer
FORMAT = "segment format change"  # ... for a segment in a format this release does not read
UNMARKED = "no commit mark"  # ... for a segment built before incremental updates (none can follow it)
MAX_PROGRESS_CHARS = 16_000  # the tail of a build's progress kept in its row (a TEXT column)


class BuildState(StrEnum):
    REQUESTED = "requested"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


PENDING = (BuildState.REQUESTED, BuildState.RUNNING)


@dataclass(frozen=True)
class BuildView:
    """One build as the operator sees it (``nimbus index status``, ``GET /admin/api/index``)."""

    id: int
    state: str
    requested_at: float
    requested_by: str
    runner: str  # "" until taken: the daemon's NIMBUS_MR_RUNNER then
    started_at: float | None
    heartbeat_at: float | None
    finished_at: float | None
    worker: str
    segment: str
    error: str
    progress: str  # the build's progress lines (their tail), newest last

    @property
    def last_progress(self) -> str:
        lines = self.progress.splitlines()
        return lines[-1] if lines else ""

    def seconds(self, now: float) -> float | None:
        """How long it ran (so far, while running); None before it started."""
        if self.started_at is None:
            return None
        return (self.finished_at if self.finished_at is not None else now) - self.started_at

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "last_progress": self.last_progress}

    def asked_lines(self, poll: float) -> list[str]:
        """What ``nimbus index now`` says, locally and through the admin API alike."""
        return [
            f"index build {self.id} asked for: the indexer (`nimbus index daemon`) starts it within "
            f"{poll:.0f} s; `nimbus index status` follows it"
        ]


def _view(row: IndexBuild) -> BuildView:
    return BuildView(
        id=row.id,
        state=row.state,
        requested_at=row.requested_at,
        requested_by=row.requested_by,
        runner=row.runner,
        started_at=row.started_at,
        heartbeat_at=row.heartbeat_at,
        finished_at=row.finished_at,
        worker=row.worker,
        segment=row.segment,
        error=row.error,
        progress=row.progress,
    )


def _changed(session: Session, statement: Update) -> int:
    """How many rows an UPDATE changed (matched, on MySQL: the engine counts found rows)."""
    done = cast(CursorResult[Any], session.execute(statement))
    return done.rowcount


def _new_row(requested_by: str, runner: str, now: float) -> IndexBuild:
    return IndexBuild(
        state=BuildState.REQUESTED,
        requested_at=now,
        requested_by=requested_by,
        runner=runner,
        worker="",
        segment="",
        progress="",
        error="",
    )


def request_build(session: Session, requested_by: str, now: float, runner: str = "") -> BuildView:
    """Ask for a build, which the indexer takes within its poll (oldest first).

    ``requested_by``: "schedule", "admin" (the admin API), a user's name; ``runner``: inline,
    local or emr ("": the indexer's own NIMBUS_MR_RUNNER)."""
    row = _new_row(requested_by[:255], runner, now)
    session.add(row)
    session.flush()  # its id
    return _view(row)


def recent_builds(session: Session, n: int = 10) -> list[BuildView]:
    """The ``n`` newest builds, newest first."""
    rows = session.scalars(select(IndexBuild).order_by(IndexBuild.id.desc()).limit(n))
    return [_view(row) for row in rows]


def get_build(session: Session, build_id: int) -> BuildView | None:
    row = session.get(IndexBuild, build_id)
    return None if row is None else _view(row)


def schedule_if_due(session: Session, now: float, every: float, since: float) -> int | None:
    """Add a ``schedule`` row when the last build asked for (or, with none, the active
    index's publication, or else ``since``: the daemon's start) is ``every`` seconds old and
    nothing is pending; returns its id. ``every`` 0: never.

    Counting from the last build asked for, whatever its outcome, keeps a failing build from
    being retried in a loop (its failure is the alarm's business) and lets an operator's
    ``nimbus index now`` stand in for the schedule's next build. The newest row is locked
    first, so two daemons deciding at once on MySQL take turns and add one row."""
    if every <= 0:
        return None
    newest = session.scalars(
        select(IndexBuild).order_by(IndexBuild.id.desc()).limit(1).with_for_update()
    ).first()
    pending = session.scalar(select(func.count()).where(IndexBuild.state.in_(PENDING)))
    if pending:
        return None
    if newest is not None:
        last = newest.requested_at
    else:
        active = active_index(session)
        last = active.created_at if active is not None else since
    if now - last < every:
        return None
    return request_build(session, SCHEDULE, now).id


def request_if_unreadable(
    session: Session, meta: Mapping[str, Any] | None, analyzer: str, segment_format: int, now: float
) -> tuple[int, str] | None:
    """Add a rebuild when the active segment (its ``meta``; None: no active segment) was built
    with another analyzer or in another segment format than this release's, nothing is
    pending, and no such rebuild was asked for since it was published (a failing one is not
    retried in a loop); returns its id and why. Search refuses that segment until the
    rebuild publishes, and an update cannot merge into it."""
    if meta is None:
        return None
    built = str(meta.get("analyzer", "1"))
    if built != analyzer:
        why, said = ANALYZER, f"was built with analyzer {built}, this release's is {analyzer}"
    elif "format" in meta and int(meta["format"]) != segment_format:
        said = f"is in segment format {meta['format']}, this release reads format {segment_format}"
        why = FORMAT
    else:
        return None
    added = request_rebuild_once(session, why, now)
    return None if added is None else (added, said)


def request_rebuild_once(session: Session, why: str, now: float) -> int | None:
    """Add a build requested by ``why`` unless a build is pending or ``why`` already asked for
    one since the active version was published (a failing one is not retried in a loop);
    returns its id."""
    if session.scalar(select(func.count()).where(IndexBuild.state.in_(PENDING))):
        return None
    active = active_index(session)
    asked = session.scalar(
        select(func.count()).where(
            IndexBuild.requested_by == why,
            IndexBuild.requested_at >= (active.created_at if active is not None else 0.0),
        )
    )
    if asked:
        return None
    return request_build(session, why, now).id


def take_next(session: Session, worker: str, runner: str, now: float) -> BuildView | None:
    """The oldest requested build, now ``running`` for ``worker``; None when there is none or
    another daemon took it first. The row's own runner wins over ``runner`` (the daemon's)."""
    row = session.scalars(
        select(IndexBuild)
        .where(IndexBuild.state == BuildState.REQUESTED)
        .order_by(IndexBuild.id)
        .limit(1)
        .with_for_update(skip_locked=True)
    ).first()
    if row is None:
        return None
    taken = _changed(
        session,
        update(IndexBuild)
        .where(IndexBuild.id == row.id, IndexBuild.state == BuildState.REQUESTED)
        .values(
            state=BuildState.RUNNING,
            runner=row.runner or runner,
            worker=worker,
            started_at=now,
            heartbeat_at=now,
            progress="",
            error="",
        )
        .execution_options(synchronize_session=False),
    )
    if taken != 1:  # SQLite has no row locks: another daemon's UPDATE came first
        return None
    session.refresh(row)
    return _view(row)


def beat(session: Session, build_id: int, worker: str, now: float, progress: str) -> bool:
    """Renew ``worker``'s running build and store its progress; False when the row is no
    longer that worker's running build (``fail_stale`` gave it up for dead)."""
    done = _changed(
        session,
        update(IndexBuild)
        .where(
            IndexBuild.id == build_id,
            IndexBuild.worker == worker,
            IndexBuild.state == BuildState.RUNNING,
        )
        .values(heartbeat_at=now, progress=progress[-MAX_PROGRESS_CHARS:])
        .execution_options(synchronize_session=False),
    )
    return bool(done)


def finish(
    session: Session,
    build_id: int,
    worker: str,
    now: float,
    *,
    state: BuildState,
    progress: str,
    segment: str = "",
    error: str = "",
) -> bool:
    """End ``worker``'s build. The worker that ran it has the last word, even over a
    ``fail_stale`` that took its silence for death: what it reports is what happened."""
    done = _changed(
        session,
        update(IndexBuild)
        .where(IndexBuild.id == build_id, IndexBuild.worker == worker)
        .values(
            state=state,
            finished_at=now,
            heartbeat_at=now,
            segment=segment,
            error=error[:MAX_PROGRESS_CHARS],
            progress=progress[-MAX_PROGRESS_CHARS:],
        )
        .execution_options(synchronize_session=False),
    )
    return bool(done)


def hand_back(session: Session, build_id: int, worker: str, note: str) -> bool:
    """``worker`` stops before its build ended (SIGTERM): the row is asked for again, so the
    next daemon (after a restart or a rollout) builds it; ``note`` is added to its progress."""
    row = session.get(IndexBuild, build_id, with_for_update=True)
    if row is None or row.worker != worker or row.state != BuildState.RUNNING:
        return False
    row.state = BuildState.REQUESTED
    row.worker, row.started_at, row.heartbeat_at = "", None, None
    row.progress = (row.progress + "\n" + note).strip()[-MAX_PROGRESS_CHARS:]
    return True


def fail_stale(session: Session, now: float, stale_after: float) -> list[BuildView]:
    """Fail the running builds whose heartbeat is older than ``stale_after`` seconds: their
    daemon died (killed, out of memory, its instance gone). Returns them.

    They are failed, not retried: a build that kills its indexer (memory, a crash in a
    native library) would kill every retry, and the queue would never move on; a daemon
    that only lost the database for a while may still be building, and a retry would run
    the same build twice. The failure is counted (IndexBuildFailures), the served index
    stays, and the schedule or ``nimbus index now`` asks again."""
    rows = session.scalars(
        select(IndexBuild)
        .where(IndexBuild.state == BuildState.RUNNING, IndexBuild.heartbeat_at < now - stale_after)
        .with_for_update(skip_locked=True)
    ).all()
    for row in rows:
        silent = now - (row.heartbeat_at or now)
        row.state = BuildState.FAILED
        row.finished_at = now
        row.error = (
            f"indexer died: no heartbeat from {row.worker} for {silent:.0f} s; not retried "
            "(ask again: nimbus index now)"
        )
    return [_view(row) for row in rows]


def _when(at: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(at)) if at else "-"


def _took(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    whole = int(seconds)
    if whole < 60:
        return f"{seconds:.0f} s"
    if whole < 3600:
        return f"{whole // 60} min {whole % 60} s"
    return f"{whole // 3600} h {whole % 3600 // 60} min"


def status_lines(views: list[BuildView], now: float) -> list[str]:
    """What ``nimbus index status`` prints: a line per build, newest first, then its
    segment or error and its last progress line, indented."""
    if not views:
        return ["no index builds yet: `nimbus index now` asks for one"]
    lines = [f"{'build':>6} {'state':10} {'requested by':20} {'runner':7} {'started (UTC)':19}  took"]
    for b in views:
        lines.append(
            f"{b.id:>6} {b.state:10} {b.requested_by[:20]:20} {b.runner or '-':7} "
            f"{_when(b.started_at):19}  {_took(b.seconds(now))}"
        )
        if b.segment:
            lines.append(f"{'':7}segment: {b.segment}")
        if b.error:
            lines.append(f"{'':7}error: {b.error}")
        if b.last_progress and b.state != BuildState.SUCCEEDED:
            lines.append(f"{'':7}last progress: {b.last_progress}")
    return lines
