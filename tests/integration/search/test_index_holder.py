"""IndexHolder: how often it asks for the active version, and what it does on failure."""

from __future__ import annotations

import os
import threading
import time

import numpy as np
import pytest

from services.search.errors import SearchIndexError
from services.search.retrieval.index_holder import IndexHolder, fetch_segment, prune_segments
from services.search.retrieval.segment import SegmentIndex
from services.storage.blobs.blobstore import open_blobstore
from services.storage.formats.segment import pack_segment
from services.storage.formats.segment_codec import compact_segment
from services.storage.sql.engines import make_engine, session_factory
from services.storage.sql.index_versions import activate_index
from tests.integration.search.search_corpus import Doc, commit_documents, publish_index, segment_arrays

DOCS = [
    Doc("http://a.test/1", "Albedo", "Albedo measures reflected light."),
    Doc("http://a.test/2", "Autism", "Autism is a developmental condition."),
]


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def parts(settings):
    commit_documents(settings, DOCS, 0, "c1")
    engine = make_engine(settings.database_url)
    blobs = open_blobstore(settings.blob_url)
    yield settings, session_factory(engine), blobs
    engine.dispose()


def test_rechecks_at_most_every_interval_then_swaps(parts):
    settings, sessions, blobs = parts
    clock = FakeClock()
    holder = IndexHolder(sessions, blobs, settings.var_dir / "segments", 2.0, clock)
    assert holder.current() is None  # nothing published yet
    clock.now += 2.0
    v1 = publish_index(settings, DOCS, "v1")
    first = holder.current()
    assert first is not None and first.version_id == v1
    v2 = publish_index(settings, DOCS, "v2")
    clock.now += 1.5
    assert holder.current() is first  # within the interval: no database query, same object
    assert holder._loader is None  # nothing looked up, nothing loading
    clock.now += 0.5
    # The look is due: this request finds v2 and starts its load in the background, answering
    # from v1 (unless the load was quick enough to swap before it returned: then from v2).
    assert holder.current().version_id in (v1, v2)
    assert holder.wait_for_load(30)
    second = holder.current()
    assert second.version_id == v2 and second is not first
    assert first.term_id("albedo") is not None  # the old object still answers


def test_no_request_waits_for_a_new_version_to_load(parts, monkeypatch):
    """The request that finds a new version answers from the loaded one at once, however long
    the new one takes to load; the requests after it start no second load; the swap follows
    when the load ends."""
    settings, sessions, blobs = parts
    clock = FakeClock()
    v1 = publish_index(settings, DOCS, "v1")
    holder = IndexHolder(sessions, blobs, settings.var_dir / "segments", 2.0, clock)
    first = holder.current()
    assert first.version_id == v1 and holder.fresh()
    v2 = publish_index(settings, DOCS, "v2")
    loading, release = threading.Event(), threading.Event()
    opened = []
    real_open = holder._open

    def slow_open(version_id, names):
        opened.append(version_id)
        loading.set()
        assert release.wait(30)  # the load goes on until the test lets it end
        return real_open(version_id, names)

    monkeypatch.setattr(holder, "_open", slow_open)
    clock.now += 2.0
    assert holder.current() is first  # answered while the load has not even started or ended
    assert loading.wait(30)
    for _ in range(5):  # the load is under way: the same version, no second look or load
        clock.now += 5.0
        assert holder.current() is first
    release.set()
    assert holder.wait_for_load(30)
    assert holder.current().version_id == v2 and opened == [v2]


def test_a_failed_load_in_the_background_keeps_the_version_and_says_why(parts, monkeypatch):
    settings, sessions, blobs = parts
    clock = FakeClock()
    publish_index(settings, DOCS, "v1")
    holder = IndexHolder(sessions, blobs, settings.var_dir / "segments", 2.0, clock)
    first = holder.current()
    v2 = publish_index(settings, DOCS, "v2")

    def broken(version_id, names):
        raise OSError("segment cache unreadable")

    monkeypatch.setattr(holder, "_open", broken)
    clock.now += 2.0
    assert holder.current() is first
    assert holder.wait_for_load(30)
    assert holder.current() is first and "segment cache unreadable" in (holder.last_error or "")
    monkeypatch.undo()  # the cache readable again: the next look loads v2
    clock.now += 2.0
    holder.current()
    assert holder.wait_for_load(30) and holder.current().version_id == v2


def test_a_version_that_fails_to_load_keeps_the_old_one(parts):
    settings, sessions, blobs = parts
    v1 = publish_index(settings, DOCS, "v1")
    holder = IndexHolder(sessions, blobs, settings.var_dir / "segments", 0.0)
    assert holder.current().version_id == v1
    with sessions.begin() as s:
        activate_index(s, "index/segment-missing.nseg", 2, 5)
    assert holder.current().version_id == v1
    assert "segment-missing" in holder.last_error and "nimbus index" in holder.last_error
    blobs.put("index/segment-garbage.nseg", b"not a segment at all")
    with sessions.begin() as s:
        activate_index(s, "index/segment-garbage.nseg", 2, 5)
    assert holder.current().version_id == v1
    assert "segment-garbage" in holder.last_error


def test_segment_is_downloaded_once_and_checked_against_the_contract(parts, tmp_path):
    settings, _, blobs = parts
    publish_index(settings, DOCS, "v1")
    cache = tmp_path / "cache"
    path = fetch_segment(blobs, "index/segment-v1.nseg", cache)
    mtime = path.stat().st_mtime_ns
    assert fetch_segment(blobs, "index/segment-v1.nseg", cache) == path
    assert path.stat().st_mtime_ns == mtime
    assert [p.name for p in cache.iterdir()] == [path.name]  # no partial files left
    index = SegmentIndex.open(path)
    assert (index.num_docs, index.term(index.term_id("albedo"))) == (2, "albedo")
    assert index.term_id("zzz") is None and index.term_id("") is None
    with pytest.raises(SearchIndexError, match="not found"):
        fetch_segment(blobs, "index/segment-nope.nseg", cache)


def test_a_segment_breaking_the_contract_is_refused_by_name(tmp_path):
    arrays = segment_arrays(DOCS)
    arrays["idf"] = arrays["idf"].astype(np.float64)
    bad = tmp_path / "bad.nseg"
    bad.write_bytes(pack_segment(compact_segment(arrays), {"num_docs": 2}))
    with pytest.raises(SearchIndexError, match="'idf' has dtype float64"):
        SegmentIndex.open(bad)
    arrays = segment_arrays(DOCS)
    del arrays["pagerank"]
    bad.write_bytes(pack_segment(compact_segment(arrays), {"num_docs": 2}))
    with pytest.raises(SearchIndexError, match="'pagerank' is missing"):
        SegmentIndex.open(bad)


def test_old_segment_files_are_pruned_keeping_the_active_and_previous(parts):
    settings, sessions, blobs = parts
    cache = settings.var_dir / "segments"
    holder = IndexHolder(sessions, blobs, cache, 0.0)
    versions = []
    for name in ("v1", "v2"):
        publish_index(settings, DOCS, name)
        versions.append(holder.current())
    cache.joinpath("notes.txt").write_text("not a segment")
    abandoned, fresh = cache / ".part-dead.nseg", cache / ".part-live.nseg"
    abandoned.write_bytes(b"half")
    fresh.write_bytes(b"half")
    os.utime(abandoned, (time.time() - 2 * 3600,) * 2)
    publish_index(settings, DOCS, "v3")
    assert holder.current().segment == "index/segment-v3.nseg"
    assert sorted(p.name for p in cache.iterdir()) == [
        ".part-live.nseg",
        "index__segment-v2.nseg",
        "index__segment-v3.nseg",
        "notes.txt",
    ]
    assert versions[0].term_id("albedo") is not None  # a mapped, pruned file still answers
    assert not prune_segments(
        cache, [cache / "index__segment-v3.nseg", cache / "index__segment-v2.nseg"]
    )  # nothing more to do
