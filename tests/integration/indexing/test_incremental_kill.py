"""kill -9 of `nimbus index update` (a delta) or `nimbus index update --merge` after its
segment is stored but before it is activated: search stays on the previous version, nothing is
lost, and the next update publishes everything committed since (the orphaned blob is
harmless)."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from services.config import Settings
from services.indexing.build import build_index
from services.indexing.incremental import update_index
from services.search.service import SearchService
from services.storage.blobs.blobstore import open_blobstore
from services.storage.sql.engines import make_engine, session_factory
from services.storage.sql.index_versions import active_index
from tests.integration.conftest import Page, write_corpus
from tests.polling import wait_for

OLD = [[Page("http://kill.test/", "Anchorage", "Ships wait at the anchorage for the pilot.")]]
NEW = [[Page("http://kill.test/pilot", "Pilot boat", "The pilot boat meets ships beyond the breakwater.")]]


def _active(settings: Settings) -> tuple[int, str]:
    engine = make_engine(settings.database_url)
    try:
        with session_factory(engine)() as session:
            version = active_index(session)
            assert version is not None
            return version.id, version.segment
    finally:
        engine.dispose()


def _urls(settings: Settings, query: str) -> list[str]:
    return [hit.url for hit in SearchService(settings, recheck_seconds=0.0).search(query).hits]


@pytest.mark.parametrize("merge", [[], ["--merge"]], ids=["delta", "merge"])
def test_a_killed_update_leaves_search_on_the_previous_version(
    settings: Settings, tmp_path: Path, merge: list[str]
) -> None:
    store = open_blobstore(settings.blob_url)
    write_corpus(store, settings.database_url, OLD, commit_seq=1)
    build_index(settings, progress=False)
    before = _active(settings)
    write_corpus(store, settings.database_url, NEW, first_doc=1, commit_seq=2)
    segments = set(store.list("index/"))

    # Hold the database's write lock, so the update stores its segment and then waits to
    # activate it: it is killed right there, deterministically.
    database = settings.database_url.removeprefix("sqlite:///")
    lock = sqlite3.connect(database, isolation_level=None)
    lock.execute("BEGIN EXCLUSIVE")
    env = {
        **os.environ,
        "NIMBUS_DATABASE_URL": settings.database_url,
        "NIMBUS_BLOB_URL": settings.blob_url,
        "NIMBUS_VAR_DIR": str(settings.var_dir),
        "NIMBUS_MR_RUNNER": "inline",
    }
    update = subprocess.Popen(
        [sys.executable, "-m", "services.cli", "index", "update", *merge, "--quiet"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        wait_for(
            lambda: set(store.list("index/")) - segments or update.poll() is not None,
            timeout=120,
            what="the update's segment in the blob store",
        )
        assert update.poll() is None, update.communicate()
        os.kill(update.pid, signal.SIGKILL)
        update.wait(30)
    finally:
        if update.poll() is None:
            update.kill()
        lock.execute("ROLLBACK")
        lock.close()
    orphan = set(store.list("index/")) - segments
    assert len(orphan) == 1 and update.returncode == -signal.SIGKILL

    assert _active(settings) == before  # search stays on the previous version ...
    assert _urls(settings, "anchorage") == ["http://kill.test/"]
    assert _urls(settings, "breakwater") == []
    again = update_index(settings, progress=False)  # ... and the next update loses nothing
    assert again.new_documents == 1 and again.version_id is not None and again.version_id != before[0]
    assert _urls(settings, "breakwater") == ["http://kill.test/pilot"]
    assert _urls(settings, "anchorage") == ["http://kill.test/"]
