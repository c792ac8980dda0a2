"""The indexer daemon's deltas and merges (services.indexing.daemon, background_merge,
merge_policy): a delta every NIMBUS_UPDATE_EVERY seconds when something was committed, a
merge once NIMBUS_MERGE_DELTAS deltas (or NIMBUS_MERGE_SHARE of the base) are in the version,
one at a time, in a thread of its own, deltas going on meanwhile and kept by the merge."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
from sqlalchemy.orm import Session, sessionmaker

from services.config import Settings
from services.indexing.build import build_index
from services.indexing.daemon import IndexDaemon
from services.indexing.errors import SupersededError
from services.indexing.incremental import UpdateResult
from services.indexing.index_rows import IndexColumns
from services.indexing.publish import VersionRef, publish_delta_segment, publish_segment
from services.indexing.segment_arrays import segment_arrays, segment_meta
from services.search.service import SearchService
from services.storage.blobs.blobstore import open_blobstore
from services.storage.formats.delta import DeltaDocs
from services.storage.sql.engines import make_engine, session_factory
from services.storage.sql.index_versions import active_index
from services.storage.sql.schema import init_db
from tests.integration.conftest import write_corpus

CORPUS = [
    [
        {"url": "http://wings.test/", "title": "Wings", "text": "Swept wings delay drag.", "links": ["http://wings.test/flaps"]},
        {"url": "http://wings.test/flaps", "title": "Flaps", "text": "Flaps add lift at low speed."},
    ]
]  # fmt: skip
SLATS = [[{"url": "http://wings.test/slats", "title": "Slats", "text": "Slats open at the leading edge."}]]
SPOILERS = [
    [{"url": "http://wings.test/spoilers", "title": "Spoilers", "text": "Spoilers dump lift on landing."}]
]


def _version(settings: Settings) -> VersionRef:
    engine = make_engine(settings.database_url)
    try:
        with session_factory(engine)() as session:
            active = active_index(session)
            assert active is not None
            return VersionRef.of(active)
    finally:
        engine.dispose()


def test_the_daemon_publishes_a_delta_per_tick_and_merges_at_the_policy_s_bound(settings: Settings) -> None:
    now = [1000.0]
    quiet = settings.with_overrides(index_every=0, update_every=30, merge_deltas=2, merge_share=100.0)
    store = open_blobstore(quiet.blob_url)
    write_corpus(store, quiet.database_url, CORPUS, commit_seq=1)
    base = build_index(quiet, progress=False).segment
    daemon = IndexDaemon(quiet, clock=lambda: now[0])
    try:
        assert daemon.step() is None and daemon.counters["updates"] == 0  # nothing committed
        write_corpus(store, quiet.database_url, SLATS, first_doc=2, commit_seq=2)
        now[0] += 10
        assert daemon.step() is None and daemon.counters["updates"] == 0  # not yet due
        now[0] += 30
        daemon.step()
        first = _version(quiet)
        assert daemon.counters["updates"] == 1 and first.segment == base and len(first.deltas) == 1
        assert daemon.counters["merges_started"] == 0  # one delta, of a third of the base: not due

        write_corpus(store, quiet.database_url, SPOILERS, first_doc=3, commit_seq=3)
        now[0] += 30
        daemon.step()  # the second delta, then the merge (inline runner: in this thread)
        merged = _version(quiet)
        assert daemon.counters["updates"] == 2 and daemon.counters["merges"] == 1
        assert merged.segment != base and merged.deltas == ()
        now[0] += 30
        daemon.step()  # nothing new: no delta, no merge
        assert daemon.counters["updates"] == 2 and daemon.counters["merges_started"] == 1
    finally:
        daemon.close()
    service = SearchService(quiet, recheck_seconds=0.0)
    assert [hit.url for hit in service.search("leading edge slats").hits] == ["http://wings.test/slats"]
    assert [hit.url for hit in service.search("spoilers landing").hits] == ["http://wings.test/spoilers"]


def _empty(created_at: float) -> tuple[dict[str, np.ndarray], dict]:
    arrays = segment_arrays(IndexColumns(), np.full(3, 1 / 3), 3)
    return arrays, segment_meta(arrays, pagerank_iterations=1, pagerank_damping=0.85, created_at=created_at)


class Fakes:
    """A delta publish and a merge without MapReduce: the daemon's orchestration alone. The
    merge reads the active version when it starts and waits for ``gate`` before publishing."""

    def __init__(self, sessions: sessionmaker[Session], store) -> None:
        self.sessions, self.store = sessions, store
        self.gate = threading.Event()
        self.merged: list[VersionRef] = []
        self.supersede = False
        self.made = 0

    def _stamp(self) -> float:
        self.made += 1
        return 1_000_000.0 + self.made

    def update(self, settings: Settings, **_: object) -> UpdateResult:
        with self.sessions() as session:
            extends = VersionRef.of(active_index(session))
        arrays, meta = _empty(self._stamp())
        meta.update(DeltaDocs(extends.segment).to_meta())
        done = publish_delta_segment(arrays, meta, self.store, self.sessions, extends=extends, num_terms=0)
        return UpdateResult(extends.id, done.version_id, done.segment, 3, 1, 0, 0.0)

    def merge(self, settings: Settings, *, progress: bool, deltas_only: bool) -> UpdateResult:
        assert deltas_only and not progress
        with self.sessions() as session:
            started = VersionRef.of(active_index(session))
        assert self.gate.wait(30)
        if self.supersede:
            raise SupersededError("a full build was published meanwhile")
        done = publish_segment(*_empty(self._stamp()), self.store, self.sessions, replaces=started)
        self.merged.append(started)
        return UpdateResult(started.id, done.version_id, done.segment, 3, 1, 0, 0.0)


def test_a_merge_runs_in_its_own_thread_while_deltas_go_on_and_keeps_them(
    settings: Settings, tmp_path: Path
) -> None:
    local = settings.with_overrides(mr_runner="local", index_every=0, update_every=30, merge_deltas=1)
    engine = make_engine(local.database_url)
    init_db(engine)
    sessions = session_factory(engine)
    store = open_blobstore(local.blob_url)
    base = publish_segment(*_empty(1_000_000.0), store, sessions).segment
    fakes = Fakes(sessions, store)
    now = [1000.0]
    daemon = IndexDaemon(local, clock=lambda: now[0], update=fakes.update, merge=fakes.merge)
    try:
        daemon.step()  # a delta; one delta is the bound: a merge starts, and waits
        assert daemon.merges.running and daemon.counters["merges_started"] == 1
        first = _version(local).deltas
        now[0] += 30
        daemon.step()  # the next delta is published while the merge runs; no second merge
        assert daemon.counters["updates"] == 2 and daemon.counters["merges_started"] == 1
        during = _version(local)
        assert during.segment == base and during.deltas[:1] == first and len(during.deltas) == 2

        fakes.gate.set()
        assert daemon.merges.thread is not None
        daemon.merges.thread.join(30)
        now[0] += 1
        daemon.step()  # reports the merge; no delta due yet
        after = _version(local)
        assert daemon.counters["merges"] == 1 and fakes.merged[0].deltas == first
        assert after.segment not in (base, *during.deltas) and after.deltas == during.deltas[1:]  # kept

        fakes.supersede = True  # the next merge finds a build published meanwhile: reported only
        now[0] += 30
        daemon.step()
        daemon.merges.thread.join(30)
        now[0] += 1
        daemon.step()
        assert daemon.counters["merges_started"] == 2 and daemon.counters["merges"] == 1
        assert daemon.counters["merge_failures"] == 0
    finally:
        fakes.gate.set()
        daemon.close()
        engine.dispose()
