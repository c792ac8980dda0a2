"""Old index segments are deleted after a publish: the active one and the previous stay, and
a blob a kept version names (a base shared by its deltas' versions, a delta) is never deleted."""

from __future__ import annotations

import numpy as np
import pytest
from sqlalchemy import select

from services.indexing.errors import SupersededError
from services.indexing.index_rows import IndexColumns
from services.indexing.publish import (
    ORPHAN_AFTER,
    VersionRef,
    prune_segments,
    publish_delta_segment,
    publish_segment,
    segment_name,
)
from services.indexing.segment_arrays import segment_arrays, segment_meta
from services.storage.blobs.blobstore import BlobStore, open_blobstore
from services.storage.errors import SegmentContractError
from services.storage.formats.delta import DeltaDocs
from services.storage.sql.engines import make_engine, session_factory
from services.storage.sql.index_versions import active_index
from services.storage.sql.models import IndexVersion
from services.storage.sql.schema import init_db


@pytest.fixture(params=["file", "s3"])
def store(request, tmp_path) -> BlobStore:
    if request.param == "file":
        return open_blobstore(f"file://{tmp_path / 'blobs'}")
    bucket = request.getfixturevalue("s3_bucket")
    return open_blobstore(f"s3://{bucket}/nimbus", endpoint_url=request.getfixturevalue("moto_server"))


def publish(store: BlobStore, sessions, n: int, keep: int) -> str:
    """A segment of three documents without terms (the contract holds), created at time n."""
    arrays = segment_arrays(IndexColumns(), np.full(3, 1 / 3), 3)
    meta = segment_meta(arrays, pagerank_iterations=1, pagerank_damping=0.85, created_at=1_000_000.0 + n)
    return publish_segment(arrays, meta, store, sessions, keep=keep).segment


def test_publish_keeps_the_newest_segments_and_deletes_the_rest(store, tmp_path):
    engine = make_engine(f"sqlite:///{tmp_path / 'nimbus.db'}")
    init_db(engine)
    sessions = session_factory(engine)
    try:
        names = [publish(store, sessions, n, keep=0) for n in range(3)]  # 0: keep every one
        assert all(store.exists(name) for name in names)
        names.append(publish(store, sessions, 3, keep=2))
        assert [store.exists(name) for name in names] == [False, False, True, True]
        with sessions() as session:
            rows = session.scalars(select(IndexVersion.segment).order_by(IndexVersion.id)).all()
            assert rows == names[2:]  # the deleted segments' rows go with them
            assert active_index(session).segment == names[3]
        names.append(publish(store, sessions, 4, keep=1))  # only the active one
        assert [store.exists(name) for name in names[2:]] == [False, False, True]
    finally:
        engine.dispose()


def test_a_segment_that_cannot_be_deleted_keeps_its_row_for_the_next_publish(tmp_path):
    class Stubborn(type(open_blobstore(f"file://{tmp_path}"))):
        refuse = True

        def delete(self, name: str) -> None:
            if self.refuse and "segment" in name:
                raise PermissionError(f"{name}: read-only")
            super().delete(name)

    store = Stubborn(tmp_path / "blobs")
    engine = make_engine(f"sqlite:///{tmp_path / 'nimbus.db'}")
    init_db(engine)
    sessions = session_factory(engine)
    try:
        first = publish(store, sessions, 0, keep=1)
        second = publish(store, sessions, 1, keep=1)  # the delete fails: the publish does not
        assert store.exists(first) and store.exists(second)
        with sessions() as session:
            assert active_index(session).segment == second
            assert len(session.scalars(select(IndexVersion)).all()) == 2
        store.refuse = False
        third = publish(store, sessions, 2, keep=1)
        assert not store.exists(first) and not store.exists(second) and store.exists(third)
    finally:
        engine.dispose()


def test_publish_refuses_a_segment_that_breaks_the_contract_and_stores_nothing(tmp_path):
    """A publisher bug must never reach the search service: the contract is checked before the
    blob is written, so no blob and no version row appear."""
    store = open_blobstore(f"file://{tmp_path / 'blobs'}")
    engine = make_engine(f"sqlite:///{tmp_path / 'nimbus.db'}")
    init_db(engine)
    sessions = session_factory(engine)
    try:
        arrays = segment_arrays(IndexColumns(), np.full(3, 1 / 3), 3)
        arrays["idf"] = arrays["idf"].astype(np.float64)
        meta = segment_meta(arrays, pagerank_iterations=1, pagerank_damping=0.85, created_at=1.0)
        with pytest.raises(SegmentContractError, match="'idf' has dtype float64"):
            publish_segment(arrays, meta, store, sessions)
        assert list(store.list("index/")) == []
        with sessions() as session:
            assert session.scalars(select(IndexVersion)).all() == []
    finally:
        engine.dispose()


def publish_delta_of(store: BlobStore, sessions, n: int, keep: int) -> str:
    """A delta of the active version (three documents, none held), created at time n."""
    with sessions() as session:
        extends = VersionRef.of(active_index(session))
    arrays = segment_arrays(IndexColumns(), np.full(3, 1 / 3), 3)
    meta = segment_meta(arrays, pagerank_iterations=0, pagerank_damping=0.0, created_at=1_000_000.0 + n)
    meta.update(DeltaDocs(extends.segment).to_meta())
    return publish_delta_segment(arrays, meta, store, sessions, keep, extends=extends, num_terms=0).segment


def test_a_base_and_deltas_kept_versions_name_are_never_deleted(store, tmp_path):
    engine = make_engine(f"sqlite:///{tmp_path / 'nimbus.db'}")
    init_db(engine)
    sessions = session_factory(engine)
    try:
        base = publish(store, sessions, 0, keep=2)
        deltas = [publish_delta_of(store, sessions, n, keep=2) for n in range(1, 4)]
        assert all(store.exists(name) for name in [base, *deltas])  # every kept version names them
        with sessions() as session:
            rows = session.scalars(select(IndexVersion).order_by(IndexVersion.id)).all()
            assert [(r.segment, r.delta_segments) for r in rows] == [(base, deltas[:2]), (base, deltas)]
            ref = VersionRef.of(rows[0])  # a merge started from the version of two deltas ...
        merged = publish_segment(
            *_empty(4), store, sessions, keep=2, replaces=ref
        )  # ... keeps the third, published meanwhile
        assert merged.deltas == (deltas[2],)
        assert all(store.exists(name) for name in [base, *deltas, merged.segment])  # the previous is kept
        full = publish(store, sessions, 5, keep=2)
        assert [store.exists(name) for name in [base, *deltas[:2]]] == [False, False, False]
        assert store.exists(deltas[2]) and store.exists(merged.segment) and store.exists(full)
        full_again = publish(store, sessions, 6, keep=2)
        assert not store.exists(deltas[2]) and not store.exists(merged.segment)
        with sessions() as session:
            rows = session.scalars(select(IndexVersion).order_by(IndexVersion.id)).all()
            assert [(r.segment, r.delta_segments) for r in rows] == [(full, []), (full_again, [])]
    finally:
        engine.dispose()


def test_a_merge_or_delta_is_not_published_over_a_build_that_replaced_its_version(store, tmp_path):
    engine = make_engine(f"sqlite:///{tmp_path / 'nimbus.db'}")
    init_db(engine)
    sessions = session_factory(engine)
    try:
        publish(store, sessions, 0, keep=0)
        publish_delta_of(store, sessions, 1, keep=0)
        with sessions() as session:
            ref = VersionRef.of(active_index(session))
        publish(store, sessions, 2, keep=0)  # a full build
        blobs = set(store.list("index/"))
        with pytest.raises(SupersededError):
            publish_segment(*_empty(3), store, sessions, replaces=ref)
        arrays, meta = _empty(4)
        meta.update(DeltaDocs(ref.segment).to_meta())
        with pytest.raises(SupersededError):
            publish_delta_segment(arrays, meta, store, sessions, extends=ref, num_terms=0)
        assert set(store.list("index/")) == blobs  # no orphan
    finally:
        engine.dispose()


def _empty(n: int) -> tuple[dict[str, np.ndarray], dict]:
    arrays = segment_arrays(IndexColumns(), np.full(3, 1 / 3), 3)
    return arrays, segment_meta(
        arrays, pagerank_iterations=1, pagerank_damping=0.85, created_at=1_000_000.0 + n
    )


def test_a_segment_no_version_names_is_deleted_once_it_is_an_hour_old(store, tmp_path):
    """What a publish killed between its write and its activation leaves; a younger one may be
    a publish about to activate it."""
    engine = make_engine(f"sqlite:///{tmp_path / 'nimbus.db'}")
    init_db(engine)
    sessions = session_factory(engine)
    try:
        named = publish(store, sessions, 0, keep=0)
        now = 1_000_000.0 + 7200
        stale, young = segment_name(now - ORPHAN_AFTER - 1), segment_name(now - 60)
        for name in (stale, young, "index/notes.txt"):
            store.put(name, b"x")
        assert prune_segments(store, sessions, keep=2, now=now) == [stale]
        assert store.exists(named) and store.exists(young) and store.exists("index/notes.txt")
    finally:
        engine.dispose()
