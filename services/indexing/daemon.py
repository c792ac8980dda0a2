"""`nimbus index daemon`: the indexer's builds, on a schedule and on request, one at a time.

Each look (every ``POLL`` seconds, at once when stopped or when a build ends):

1. fail the running builds whose daemon died (``builds.fail_stale``: no heartbeat for
   ``STALE_AFTER`` seconds; failed, not retried: the reasons are there);
2. add the schedule's row when ``NIMBUS_INDEX_EVERY`` seconds have passed
   (``builds.schedule_if_due``; 0: builds only on request);
3. publish IndexAgeSeconds, at most every ``AGE_EVERY`` seconds;
4. take the oldest requested build (``builds.take_next``) and run it (none: a delta segment
   of what was committed, every ``NIMBUS_UPDATE_EVERY`` seconds, in this thread, and a merge of
   the deltas into the base when the merge policy says so, in a thread of its own:
   ``_update_if_due``, ``background_merge``, ``merge_policy``): ``build_index`` in a
   thread of this process, while this thread heartbeats the row every ``BEAT_EVERY``
   seconds with the build's progress lines, keeps publishing the index age, and watches
   for a stop. The row ends ``succeeded`` with its segment or ``failed`` with its error,
   and IndexBuildsSucceeded or IndexBuildFailures counts it.

A failed build publishes nothing, so the served index stays (``publish`` activates a new
version only in its last transaction). A stop (SIGTERM from systemd) during a build hands
the row back to ``requested`` for the next daemon and returns at once, leaving no row
running; the abandoned build thread (``abandoned``) cannot be interrupted and ends with the
process (its EMR cluster, pooled, stops itself when idle). Metrics never stop or slow a
build: they leave from their own thread (``MetricsPublisher.publish_soon``), and a failure
is only logged.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
import threading
import time
import uuid
from collections import Counter, deque
from collections.abc import Callable
from typing import Any, TypeVar

from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from services.cloudwatch import (
    INDEX_AGE,
    INDEX_BUILD_FAILURES,
    INDEX_BUILDS_SUCCEEDED,
    Datum,
    MetricsPublisher,
    metrics_publisher,
)
from services.config import Settings
from services.errors import NimbusError
from services.indexing import builds
from services.indexing.background_merge import BackgroundMerge, Merge
from services.indexing.build import BuildResult, build_index
from services.indexing.builds import BuildState, BuildView
from services.indexing.delta_build import publish_delta
from services.indexing.errors import NoBaseError, SupersededError
from services.indexing.incremental import UpdateResult, update_index
from services.storage.blobs.blobstore import open_blobstore
from services.storage.formats.segment import SEGMENT_FORMAT, read_meta
from services.storage.sql.engines import make_engine, session_factory
from services.storage.sql.index_versions import active_index
from services.storage.sql.retry import is_transient, retry_with_backoff
from services.storage.sql.schema import init_db
from services.text.analysis.analyze import analyzer_version

log = logging.getLogger(__name__)
T = TypeVar("T")

POLL = 5.0  # seconds between looks for work: `nimbus index now` waits at most this long
BEAT_EVERY = 10.0  # seconds between a running build's heartbeats (and progress writes)
# A running build silent this long is its dead daemon's: 18 missed beats, longer than an
# RDS Multi-AZ failover (typically 60-120 s), during which a live daemon cannot beat.
STALE_AFTER = 180.0
AGE_EVERY = 300.0  # IndexAgeSeconds: one data point per 5 minutes (the alarm's period)
DRAIN = 10.0  # seconds a stopping daemon waits for its last data points to reach CloudWatch
PROGRESS_LINES = 200  # a build's newest progress lines kept for its row

Build = Callable[..., BuildResult]  # build_index's signature: (settings, *, progress, report)
Update = Callable[..., UpdateResult]  # publish_delta's


class Progress:
    """A build's progress lines, newest last (bounded), written by the build's thread."""

    def __init__(self, echo: Callable[[str], None] | None = None) -> None:
        self.lines: deque[str] = deque(maxlen=PROGRESS_LINES)
        self.echo = echo
        self._lock = threading.Lock()

    def add(self, line: str) -> None:
        with self._lock:
            self.lines.append(line)
        if self.echo is not None:
            self.echo(line)

    def text(self) -> str:
        with self._lock:
            return "\n".join(self.lines)


def describe(exc: BaseException) -> str:
    """A failed build's error for the operator: Nimbus's own errors say what to do already."""
    return str(exc) if isinstance(exc, NimbusError) else f"{type(exc).__name__}: {exc}"


class IndexDaemon:
    """One indexer process (module docstring). ``clock`` gives the time written to rows and
    compared for the schedule, staleness and metrics (tests move it); ``build``, ``update`` (a
    delta) and ``merge`` are ``build_index``, ``publish_delta`` and ``update_index`` unless a
    test gives others."""

    def __init__(
        self,
        settings: Settings,
        *,
        clock: Callable[[], float] = time.time,
        metrics: MetricsPublisher | None = None,
        build: Build = build_index,
        update: Update = publish_delta,
        merge: Merge = update_index,
        poll: float = POLL,
        beat_every: float = BEAT_EVERY,
        echo: bool = False,
    ) -> None:
        self.settings = settings
        self.clock = clock
        self.metrics = metrics if metrics is not None else metrics_publisher(settings)
        self.build = build
        self.update = update
        self._updated_at: float | None = None
        self.poll = poll
        self.beat_every = beat_every
        self.echo = echo
        # Immediate transactions on SQLite: taking a row reads, then writes (builds.take_next).
        self.engine = make_engine(settings.database_url, immediate=True)
        init_db(self.engine)
        self.sessions = session_factory(self.engine)
        self.worker = f"{socket.gethostname()}/{os.getpid()}/{uuid.uuid4().hex[:6]}"
        self.started_at = clock()
        self.counters: Counter[str] = Counter()
        self.stopping = threading.Event()
        self._wake = threading.Event()
        self._age_at: float | None = None
        self._segment_checked = False  # the active segment's analyzer and format, compared once a start
        self.abandoned: threading.Thread | None = None  # a handed-back build's thread, still running
        self.merges = BackgroundMerge(
            settings, self.sessions, merge, self._say, self.counters, self._wake.set
        )

    def stop(self) -> None:
        """Stop at the next look; a build in progress is handed back (module docstring)."""
        self.stopping.set()
        self._wake.set()

    def run(self) -> None:
        """Look for work until stopped. A database that cannot be reached (a failover) is
        reported and tried again at the next look; the daemon goes on."""
        try:
            while not self.stopping.is_set():
                try:
                    self.step()
                except SQLAlchemyError as exc:
                    self.counters["database_errors"] += 1
                    log.warning("index daemon: database error (%s); looking again in %.0f s", exc, self.poll)
                self._pause(self.poll)
        finally:
            if self.merges.running and self.abandoned is None:  # it ends with the process
                self.abandoned = self.merges.thread
            self.close()

    def close(self) -> None:
        """Release the database; let the last data points leave (at most ``DRAIN`` seconds)."""
        self.metrics.drain(DRAIN)
        self.engine.dispose()

    def step(self) -> BuildView | None:
        """One look (module docstring); returns the build it ran, as it ended, if any."""
        now = self.clock()
        for dead in self._transaction(lambda s: builds.fail_stale(s, now, STALE_AFTER)):
            self.counters["died"] += 1
            log.warning("index build %d failed: %s", dead.id, dead.error)
            self.metrics.publish_soon(Datum(INDEX_BUILD_FAILURES, 1))
        if not self._segment_checked:
            self._check_segment(now)
        every = self.settings.index.index_every
        added = self._transaction(lambda s: builds.schedule_if_due(s, now, every, self.started_at))
        if added is not None:
            self._say(f"index build {added} scheduled (every {every} s)")
        self._publish_age(now)
        if self.stopping.is_set():
            return None
        taken = self._transaction(
            lambda s: builds.take_next(s, self.worker, self.settings.index.mr_runner, now)
        )
        if taken is not None:
            return self._run(taken)
        self._update_if_due(now)
        return None

    def _update_if_due(self, now: float) -> None:
        """A delta segment (``services.indexing.delta_build``) every ``update_every`` seconds
        between builds, then a merge when the policy says so (``background_merge``). On the
        local runner even where builds run on EMR: a delta is small, and an EMR cluster takes
        minutes to start. A failure is logged and counted; the served index stays, and the
        next update or build tries again."""
        self.merges.collect()
        every = self.settings.index.update_every
        if not every or (self._updated_at is not None and now - self._updated_at < every):
            return
        self._updated_at = now
        runner = "local" if self.settings.index.mr_runner == "emr" else None
        settings = self.settings.with_overrides(mr_runner=runner)
        if self._publish_delta(settings, now):
            self.merges.start_if_due(settings)  # also after a failed delta: a merge may mend it
            self.merges.collect()  # an inline merge has ended already

    def _publish_delta(self, settings: Settings, now: float) -> bool:
        """One delta (``_update_if_due``); False: there is no index a merge could start from."""
        try:
            result = self.update(settings, progress=False)
        except SupersededError as exc:  # a build published meanwhile: the next look starts from it
            self._say(f"index update not published: {exc}")
            return True
        except NoBaseError as exc:  # nothing to update yet; an old release's index: rebuild once
            if exc.stale:
                why = builds.UNMARKED
                added = self._transaction(lambda s: builds.request_rebuild_once(s, why, now))
                if added is not None:
                    self._say(f"index build {added} requested: {exc}")
            return False
        except Exception as exc:  # any failure: the served index stays (module docstring)
            self.counters["update_failures"] += 1
            log.warning("index update failed: %s", exc, exc_info=not isinstance(exc, NimbusError))
            return True
        if result.version_id is not None:
            self.counters["updates"] += 1
            self._say(
                f"index updated: version {result.version_id} ({result.segment}) adds or replaces "
                f"{result.new_documents} documents, through commit seq {result.through_seq}"
            )
        return True

    def _check_segment(self, now: float) -> None:
        """A release whose analyzer or segment format differs from the active segment's asks
        for a rebuild at once (``builds.request_if_unreadable``)."""
        segment = self._transaction(lambda s: a.segment if (a := active_index(s)) is not None else None)
        meta: dict[str, Any] | None = None
        if segment is not None:
            store = open_blobstore(self.settings.blob_url, self.settings.aws_endpoint_url)
            try:
                meta = dict(read_meta(lambda a, b: store.get(segment, a, b), segment))
            except (NimbusError, OSError) as exc:  # a missing segment: the schedule rebuilds it
                log.warning("cannot read the meta of %s: %s", segment, exc)
        self._segment_checked = True
        version, fmt = analyzer_version(), SEGMENT_FORMAT
        added = self._transaction(lambda s: builds.request_if_unreadable(s, meta, version, fmt, now))
        if added is not None:
            self._say(f"index build {added[0]} requested: {segment} {added[1]}")

    # -- one build --------------------------------------------------------------------------

    def _run(self, build: BuildView) -> BuildView | None:
        self.counters["builds"] += 1
        self._say(f"index build {build.id} started (asked by {build.requested_by}, runner {build.runner})")
        progress = Progress(
            (lambda line: self._say(f"index build {build.id}: {line}")) if self.echo else None
        )
        outcome: list[BuildResult | BaseException] = []
        done = threading.Event()

        def work() -> None:
            try:
                settings = self.settings.with_overrides(mr_runner=build.runner or None)
                outcome.append(self.build(settings, progress=False, report=progress.add))
            except Exception as exc:  # any failure ends the build as failed, with its words
                log.warning("index build %d failed", build.id, exc_info=not isinstance(exc, NimbusError))
                outcome.append(exc)
            finally:
                done.set()
                self._wake.set()

        thread = threading.Thread(target=work, name=f"index-build-{build.id}", daemon=True)
        thread.start()
        while not done.is_set():
            if self.stopping.is_set():
                self.abandoned = thread
                return self._hand_back(build, progress)
            self._quietly(lambda: self._beat(build, progress, self.clock()), "heartbeat")
            self._quietly(lambda: self._publish_age(self.clock()), "index age")
            self._pause(self.beat_every)
        return self._end(build, outcome[0], progress)

    def _beat(self, build: BuildView, progress: Progress, now: float) -> None:
        mine = self._transaction(lambda s: builds.beat(s, build.id, self.worker, now, progress.text()))
        if not mine:
            log.warning("index build %d was given up for dead; its outcome still goes to its row", build.id)

    def _end(
        self, build: BuildView, result: BuildResult | BaseException, progress: Progress
    ) -> BuildView | None:
        now = self.clock()
        if isinstance(result, BuildResult):
            state, segment, error = BuildState.SUCCEEDED, result.segment, ""
            self.counters["succeeded"] += 1
            self._say(f"index build {build.id} succeeded: published {segment}")
        else:
            state, segment, error = BuildState.FAILED, "", describe(result)
            self.counters["failed"] += 1
            self._say(f"index build {build.id} failed: {error}")

        def finish(session: Session) -> BuildView | None:
            builds.finish(
                session, build.id, self.worker, now, state=state, progress=progress.text(), segment=segment,
                error=error,
            )  # fmt: skip
            return builds.get_build(session, build.id)

        ended = self._retrying(lambda: self._transaction(finish), f"ending index build {build.id}")
        if state == BuildState.SUCCEEDED:
            self.metrics.publish_soon(Datum(INDEX_BUILDS_SUCCEEDED, 1))
            self._quietly(lambda: self._publish_age(now, force=True), "index age")
        else:
            self.metrics.publish_soon(Datum(INDEX_BUILD_FAILURES, 1))
        return ended

    def _hand_back(self, build: BuildView, progress: Progress) -> BuildView | None:
        self.counters["handed_back"] += 1
        note = f"stopped (the indexer {self.worker} was asked to stop): asked for again, for the next indexer"
        self._say(f"index build {build.id} {note}")

        def hand_back(session: Session) -> BuildView | None:
            builds.beat(session, build.id, self.worker, self.clock(), progress.text())
            builds.hand_back(session, build.id, self.worker, note)
            return builds.get_build(session, build.id)

        return self._quietly(lambda: self._transaction(hand_back), "handing the build back")

    # -- metrics, time, the database ------------------------------------------------------------

    def _publish_age(self, now: float, *, force: bool = False) -> None:
        """IndexAgeSeconds of the active index; nothing while none was ever published."""
        if not self.metrics.enabled:
            return
        if not force and self._age_at is not None and now - self._age_at < AGE_EVERY:
            return
        self._age_at = now
        with self.sessions() as session:
            active = active_index(session)
            created = None if active is None else active.created_at
        if created is not None:
            self.metrics.publish_soon(Datum(INDEX_AGE, max(0.0, now - created), "Seconds"))

    def _pause(self, seconds: float) -> None:
        self._wake.wait(seconds)
        self._wake.clear()

    def _say(self, message: str) -> None:
        if self.echo:
            # The process's own stderr: the inline runner swaps sys.stderr while a task runs.
            print(message, file=sys.__stderr__, flush=True)

    def _transaction(self, work: Callable[[Session], T]) -> T:
        with self.sessions.begin() as session:
            return work(session)

    def _retrying(self, work: Callable[[], T], what: str) -> T:
        """Through a failover: a build's outcome must reach its row, or it would read as dead."""
        return retry_with_backoff(
            work,
            what=what,
            retry_on=lambda exc: is_transient(exc) and not self.stopping.is_set(),
            wait=self.stopping.wait,
        )

    def _quietly(self, work: Callable[[], T], what: str) -> T | None:
        """``work()``; a database error is logged, not raised: the build goes on."""
        try:
            return work()
        except SQLAlchemyError as exc:
            self.counters["database_errors"] += 1
            log.warning("index daemon: %s failed (%s); trying again later", what, exc)
            return None
