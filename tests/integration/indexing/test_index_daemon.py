"""`nimbus index daemon`: requested and scheduled builds, one at a time, on SQLite and MariaDB,
with the inline runner; a killed daemon's build is failed by the next, a stopped one hands its
build back; CloudWatch hears each outcome and the index's age."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import boto3
import pytest
from sqlalchemy import func, select

from services.cli import main
from services.cloudwatch import INDEX_AGE, INDEX_BUILD_FAILURES, INDEX_BUILDS_SUCCEEDED, MetricsPublisher
from services.config import Settings
from services.indexing import builds
from services.indexing.build import BuildResult
from services.indexing.daemon import STALE_AFTER, IndexDaemon
from services.search.service import SearchService
from services.storage.blobs.blobstore import open_blobstore
from services.storage.formats.segment import SEGMENT_FORMAT, pack_segment
from services.storage.sql.engines import make_engine, session_factory
from services.storage.sql.index_versions import activate_index, active_index
from services.storage.sql.models import IndexBuild, IndexVersion
from services.storage.sql.schema import init_db
from services.text.analysis.analyze import analyzer_version
from tests.integration.conftest import write_corpus
from tests.polling import wait_for

CORPUS = [
    [
        {"url": "http://wings.test/", "title": "Wings", "text": "Swept wings delay drag.", "links": ["http://wings.test/flaps"]},
        {"url": "http://wings.test/flaps", "title": "Flaps", "text": "Flaps add lift at low speed."},
    ]
]  # fmt: skip
BACKENDS = ["sqlite", pytest.param("mariadb", marks=pytest.mark.mariadb)]


class Recorder:
    """A CloudWatch client that keeps what it was sent."""

    def __init__(self) -> None:
        self.data: list[dict] = []

    def put_metric_data(self, Namespace: str, MetricData: list[dict]) -> None:  # noqa: N803 - boto3's names
        self.data += MetricData

    def values(self, name: str) -> list[float]:
        return [d["Value"] for d in self.data if d["MetricName"] == name]


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def metrics(recorder: Recorder) -> MetricsPublisher:
    return MetricsPublisher("Nimbus", "test", lambda: recorder)


@pytest.fixture(params=BACKENDS)
def indexer(request: pytest.FixtureRequest, settings: Settings) -> Settings:
    """The test's settings (inline runner, file blobs) on SQLite or on a private MariaDB database."""
    tuned = settings.with_overrides(pagerank_max_iterations=5)
    if request.param == "mariadb":
        return tuned.with_overrides(database_url=request.getfixturevalue("mysql_url"))
    return tuned


def _sessions(settings: Settings):
    engine = make_engine(settings.database_url)
    init_db(engine)
    return engine, session_factory(engine)


def _ask(settings: Settings, who: str = "alice", runner: str = "") -> int:
    engine, sessions = _sessions(settings)
    try:
        with sessions.begin() as session:
            return builds.request_build(session, who, time.time(), runner=runner).id
    finally:
        engine.dispose()


def _rows(settings: Settings) -> list[builds.BuildView]:
    engine, sessions = _sessions(settings)
    try:
        with sessions() as session:
            return builds.recent_builds(session, 100)
    finally:
        engine.dispose()


def _active(settings: Settings) -> tuple[str | None, int]:
    """The active segment and the number of index versions."""
    engine, sessions = _sessions(settings)
    try:
        with sessions() as session:
            active = active_index(session)
            versions = session.scalar(select(func.count()).select_from(IndexVersion)) or 0
            return (None if active is None else active.segment), versions
    finally:
        engine.dispose()


def _cloudwatch(endpoint: str, stack: str) -> dict[str, float]:
    """Each metric's sum over the last hour for ``stack``, as moto's CloudWatch has it."""
    client = boto3.client("cloudwatch", endpoint_url=endpoint, region_name="us-east-1")
    dimension = [{"Name": "Stack", "Value": stack}]
    sums = {}
    for metric in client.list_metrics(Namespace="Nimbus", Dimensions=dimension)["Metrics"]:
        assert metric["Dimensions"] == dimension
        points = client.get_metric_statistics(
            Namespace="Nimbus",
            MetricName=metric["MetricName"],
            Dimensions=dimension,
            StartTime=time.time() - 3600,
            EndTime=time.time() + 60,
            Period=60,
            Statistics=["Sum"],
        )["Datapoints"]
        sums[metric["MetricName"]] = sum(p["Sum"] for p in points)
    return sums


def test_a_requested_build_is_built_published_and_reported(indexer: Settings, moto_server: str) -> None:
    write_corpus(open_blobstore(indexer.blob_url), indexer.database_url, CORPUS)
    stack = f"t-{uuid.uuid4().hex[:8]}"
    reporting = indexer.with_overrides(
        cloudwatch_namespace="Nimbus", stack_name=stack, aws_endpoint_url=moto_server, aws_region="us-east-1"
    )
    asked = _ask(indexer)
    daemon = IndexDaemon(reporting)
    try:
        ended = daemon.step()
    finally:
        daemon.close()
    assert ended is not None and ended.id == asked
    assert (ended.state, ended.worker, ended.runner, ended.error) == (
        "succeeded",
        daemon.worker,
        "inline",
        "",
    )
    assert "build: 4/4 publish" in ended.progress and ended.last_progress.startswith("build: published")
    assert ended.finished_at is not None and ended.started_at is not None
    assert _active(indexer) == (ended.segment, 1)  # the search service's next look serves it
    sums = _cloudwatch(moto_server, stack)
    assert sums[INDEX_BUILDS_SUCCEEDED] == 1 and INDEX_BUILD_FAILURES not in sums
    assert 0 <= sums[INDEX_AGE] < 600  # just published


class Refusing:
    def put_metric_data(self, **_: object) -> None:
        raise RuntimeError("AccessDenied")


def test_two_daemons_and_one_request_make_one_build(indexer: Settings) -> None:
    write_corpus(open_blobstore(indexer.blob_url), indexer.database_url, CORPUS)
    refusing = MetricsPublisher("Nimbus", "test", Refusing)  # CloudWatch says no: builds go on
    daemons = [IndexDaemon(indexer, metrics=refusing, poll=0.01, beat_every=0.05) for _ in range(2)]
    threads = [threading.Thread(target=d.run) for d in daemons]
    for thread in threads:
        thread.start()
    try:
        asked = _ask(indexer)
        wait_for(lambda: _rows(indexer)[0].state == "succeeded", timeout=60, what="the build")
    finally:
        for daemon in daemons:
            daemon.stop()
        for thread in threads:
            thread.join(30)
    assert sorted(d.counters["builds"] for d in daemons) == [0, 1]
    (row,) = _rows(indexer)
    assert row.id == asked and row.worker == next(d.worker for d in daemons if d.counters["builds"])
    assert _active(indexer)[1] == 1
    assert refusing.failures >= 1  # the build's outcome, at least, was refused


@pytest.mark.mariadb
def test_a_row_another_daemon_is_taking_is_skipped_not_waited_for(mysql_url: str) -> None:
    engine = make_engine(mysql_url)
    init_db(engine)
    sessions = session_factory(engine)
    with sessions.begin() as session:
        first = builds.request_build(session, "alice", 1.0).id
        second = builds.request_build(session, "bob", 2.0).id
    holding = sessions()
    holding.begin()
    try:
        assert builds.take_next(holding, "a", "inline", 3.0).id == first  # locked, not committed
        with sessions.begin() as other:  # SKIP LOCKED: the next row, at once
            assert builds.take_next(other, "b", "inline", 3.0).id == second
        with sessions.begin() as other:
            assert builds.take_next(other, "c", "inline", 3.0) is None
        holding.commit()
    finally:
        holding.close()
        engine.dispose()


def _nimbus(settings: Settings, *argv: str) -> subprocess.CompletedProcess[str]:
    """`nimbus ARGV` as the operator runs it on the indexer instance: a process of its own."""
    env = {
        **os.environ,
        "NIMBUS_DATABASE_URL": settings.database_url,
        "NIMBUS_BLOB_URL": settings.blob_url,
        "NIMBUS_VAR_DIR": str(settings.var_dir),
    }
    return subprocess.run(
        [sys.executable, "-m", "services.cli", *argv], env=env, capture_output=True, text=True, timeout=120
    )


def test_a_failed_build_keeps_the_served_index(
    settings: Settings, metrics: MetricsPublisher, recorder: Recorder, monkeypatch, capsys
) -> None:
    """Through the commands an operator uses on the instance: `index now --wait`, `index status`."""
    store = open_blobstore(settings.blob_url)
    write_corpus(store, settings.database_url, CORPUS)
    daemon = IndexDaemon(settings, metrics=metrics, poll=0.02, beat_every=0.05)
    thread = threading.Thread(target=daemon.run)
    thread.start()
    try:
        built = _nimbus(settings, "index", "now", "--wait")
        assert built.returncode == 0, built.stderr
        assert "index build 1 succeeded: published index/segment-" in built.stdout
        assert "build: 1/4 link graph" in built.stderr and "build: 4/4 publish" in built.stderr
        served = _active(settings)
        store.delete("records/test-000.rec.gz")  # the crawl's blocks are gone: the build fails
        failed = _nimbus(settings, "index", "now", "--wait")
        assert failed.returncode == 1
        assert (
            "nimbus index now: index build 2 failed: MRLinkGraph failed on the inline runner" in failed.stderr
        )
    finally:
        daemon.stop()
        thread.join(30)
    assert _active(settings) == served  # still the first build's segment, still one version
    assert recorder.values(INDEX_BUILDS_SUCCEEDED) == [1] and recorder.values(INDEX_BUILD_FAILURES) == [1]
    for name, value in {
        "NIMBUS_DATABASE_URL": settings.database_url,
        "NIMBUS_BLOB_URL": settings.blob_url,
    }.items():
        monkeypatch.setenv(name, value)
    assert main(["index", "status"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["build", "state", "requested", "by", "runner", "started", "(UTC)", "took"]
    assert out[1].split()[:2] == ["2", "failed"] and out[1].split()[3] == "inline"
    assert out[2].startswith("       error: MRLinkGraph failed") and "last progress: build: 1/4" in out[3]
    assert out[4].split()[:2] == ["1", "succeeded"] and out[5] == f"       segment: {served[0]}"


def _fake_build(calls: list[Settings]):
    def build(settings: Settings, *, progress: bool, report) -> BuildResult:
        calls.append(settings)
        report("build: hello")
        return BuildResult(1, "index/segment-fake.nseg", 1, 1, 1, 1, 0.0, 0.0)

    return build


def test_the_schedule_adds_a_build_when_due(settings: Settings, metrics: MetricsPublisher) -> None:
    now = [1000.0]
    calls: list[Settings] = []
    daemon = IndexDaemon(
        settings.with_overrides(index_every=100),
        clock=lambda: now[0],
        metrics=metrics,
        build=_fake_build(calls),
    )
    try:
        seen = []
        for at in (1000.0, 1099.0, 1100.0, 1150.0, 1199.0, 1200.0):
            now[0] = at
            ended = daemon.step()
            seen.append(None if ended is None else (ended.requested_by, ended.requested_at, ended.state))
        assert seen == [
            None, None, ("schedule", 1100.0, "succeeded"), None, None, ("schedule", 1200.0, "succeeded")
        ]  # fmt: skip
        assert _rows(settings)[0].progress == "build: hello" and len(calls) == 2
        _ask(settings, "bob", runner="local")  # asked for between two scheduled builds
        now[0] = 1250.0
        ended = daemon.step()
        assert ended is not None and (ended.requested_by, ended.runner) == ("bob", "local")
        assert calls[-1].index.mr_runner == "local"
        now[0] = 1300.0  # the schedule counts from the last build asked for, whoever asked
        assert daemon.step() is None
    finally:
        daemon.close()
    off = IndexDaemon(settings.with_overrides(index_every=0), clock=lambda: 1e9, build=_fake_build(calls))
    try:
        assert off.step() is None and len(_rows(settings)) == 3  # 0: only on request
    finally:
        off.close()


def _activate_segment_of(
    settings: Settings, analyzer: str | None, name: str, segment_format: int | None = SEGMENT_FORMAT
) -> None:
    meta: dict[str, object] = {} if analyzer is None else {"analyzer": analyzer}
    if segment_format is not None:
        meta["format"] = segment_format
    open_blobstore(settings.blob_url).put(name, pack_segment({}, meta))
    engine, sessions = _sessions(settings)
    try:
        with sessions.begin() as session:
            activate_index(session, name, 0, 0)
    finally:
        engine.dispose()


def test_a_segment_of_another_analyzer_is_rebuilt_once(settings: Settings, metrics: MetricsPublisher) -> None:
    calls: list[Settings] = []
    quiet = settings.with_overrides(index_every=0, update_every=0)
    _activate_segment_of(quiet, analyzer_version(), "index/segment-same.nseg")
    same = IndexDaemon(quiet, clock=lambda: 1000.0, metrics=metrics, build=_fake_build(calls))
    try:
        assert same.step() is None and not calls  # this release's analyzer: nothing to do
    finally:
        same.close()
    _activate_segment_of(quiet, None, "index/segment-old.nseg")  # before analyzers had versions
    for start in (1, 2):  # a second start (or a failed rebuild) asks no more
        daemon = IndexDaemon(quiet, metrics=metrics, build=_fake_build(calls))  # the real clock
        try:
            ended = daemon.step()
        finally:
            daemon.close()
        if start == 1:
            assert ended is not None and ended.requested_by == builds.ANALYZER and ended.state == "succeeded"
        else:
            assert ended is None
    assert len(calls) == 1


def test_a_segment_of_an_older_format_is_rebuilt_once(settings: Settings, metrics: MetricsPublisher) -> None:
    """A release that reads another segment format (9 packs its postings; 8 is refused)
    rebuilds at once, as for an analyzer change, instead of search answering nothing until
    the daily build."""
    calls: list[Settings] = []
    quiet = settings.with_overrides(index_every=0, update_every=0)
    _activate_segment_of(quiet, analyzer_version(), "index/segment-f8.nseg", SEGMENT_FORMAT - 1)
    for start in (1, 2):  # a second start (or a failed rebuild) asks no more
        daemon = IndexDaemon(quiet, metrics=metrics, build=_fake_build(calls))
        try:
            ended = daemon.step()
        finally:
            daemon.close()
        if start == 1:
            assert ended is not None and ended.requested_by == builds.FORMAT and ended.state == "succeeded"
        else:
            assert ended is None
    assert len(calls) == 1


def test_the_index_age_goes_out_every_five_minutes(settings: Settings, metrics, recorder) -> None:
    engine, sessions = _sessions(settings)
    with sessions.begin() as session:
        activate_index(session, "index/segment-x.nseg", 1, 1, now=900.0)
    engine.dispose()
    now = [1000.0]
    daemon = IndexDaemon(settings.with_overrides(index_every=0), clock=lambda: now[0], metrics=metrics)
    try:
        for at in (1000.0, 1100.0, 1299.0, 1300.0):
            now[0] = at
            daemon.step()
    finally:
        daemon.close()
    assert recorder.values(INDEX_AGE) == [100.0, 400.0]
    assert {d["Unit"] for d in recorder.data} == {"Seconds"}


def _daemon_process(settings: Settings, tmp_path: Path) -> tuple[subprocess.Popen, list[str]]:
    """`nimbus index daemon` in a process of its own, with a build that runs for a long time
    (PageRank on MapReduce that never converges), and its stderr lines as they come."""
    env = {
        **os.environ,
        "NIMBUS_DATABASE_URL": settings.database_url,
        "NIMBUS_BLOB_URL": settings.blob_url,
        "NIMBUS_VAR_DIR": str(settings.var_dir),
        "NIMBUS_MR_RUNNER": "inline",
        "NIMBUS_INDEX_EVERY": "0",
        "NIMBUS_PAGERANK_ENGINE": "mapreduce",
        "NIMBUS_PAGERANK_TOLERANCE": "0",
        "NIMBUS_PAGERANK_MAX_ITERATIONS": "1000000",
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "services.cli", "index", "daemon"],
        env=env,
        cwd=tmp_path,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(process.stderr), daemon=True).start()  # type: ignore[arg-type]
    wait_for(lambda: any("3/4 pagerank" in line for line in lines), timeout=90, what="the build's PageRank")
    return process, lines


def test_a_killed_daemons_build_fails_and_a_stopped_ones_is_handed_back(
    settings: Settings, metrics: MetricsPublisher, recorder: Recorder, tmp_path: Path
) -> None:
    write_corpus(open_blobstore(settings.blob_url), settings.database_url, CORPUS)
    first = _ask(settings)
    process, _ = _daemon_process(settings, tmp_path)
    process.kill()  # SIGKILL: no goodbye
    process.wait(30)
    (row,) = _rows(settings)
    assert (row.id, row.state) == (first, "running")
    later = IndexDaemon(
        settings.with_overrides(index_every=0), clock=lambda: time.time() + STALE_AFTER + 1, metrics=metrics
    )
    try:
        assert later.step() is None  # nothing left to build: the dead one's row is not retried
    finally:
        later.close()
    (row,) = _rows(settings)
    assert row.state == "failed" and row.error.startswith(f"indexer died: no heartbeat from {row.worker}")
    assert recorder.values(INDEX_BUILD_FAILURES) == [1]

    second = _ask(settings)
    process, lines = _daemon_process(settings, tmp_path)
    process.send_signal(signal.SIGTERM)  # systemd's stop
    assert process.wait(60) == 0, "".join(lines[-30:])
    wait_for(lambda: any("stopped" in line for line in lines), timeout=10, what="the goodbye")
    rows = _rows(settings)
    assert [r.state for r in rows] == ["requested", "failed"] and rows[0].id == second
    assert rows[0].worker == "" and "asked for again, for the next indexer" in rows[0].progress
    assert _active(settings) == (None, 0)
    engine, sessions = _sessions(settings)
    with sessions() as session:
        assert session.scalar(select(func.count()).where(IndexBuild.state == "running")) == 0
    engine.dispose()


def test_between_builds_the_daemon_merges_what_was_committed(
    settings: Settings, metrics: MetricsPublisher
) -> None:
    """NIMBUS_UPDATE_EVERY: a page committed after the active version is searchable after the
    daemon's next update, with no build asked for; an index of a release before updates is
    rebuilt once, so updates can follow it."""
    now = [1000.0]
    quiet = settings.with_overrides(index_every=0, update_every=30)
    _activate_segment_of(quiet, analyzer_version(), "index/segment-unmarked.nseg")
    store = open_blobstore(quiet.blob_url)
    write_corpus(store, quiet.database_url, CORPUS, commit_seq=1)
    daemon = IndexDaemon(quiet, clock=lambda: now[0], metrics=metrics)
    try:
        assert daemon.step() is None  # the update finds no commit mark: it asks for a build
        rebuilt = daemon.step()
        assert (
            rebuilt is not None and rebuilt.requested_by == builds.UNMARKED and rebuilt.state == "succeeded"
        )
        write_corpus(
            store,
            quiet.database_url,
            [
                [
                    {
                        "url": "http://wings.test/slats",
                        "title": "Slats",
                        "text": "Slats open at the leading edge.",
                    }
                ]
            ],
            first_doc=2,
            commit_seq=2,
        )
        now[0] += 10  # not yet due
        assert daemon.step() is None and daemon.counters["updates"] == 0
        now[0] += 30
        assert daemon.step() is None and daemon.counters["updates"] == 1
    finally:
        daemon.close()
    service = SearchService(quiet, recheck_seconds=0.0)
    assert [hit.url for hit in service.search("leading edge slats").hits] == ["http://wings.test/slats"]
