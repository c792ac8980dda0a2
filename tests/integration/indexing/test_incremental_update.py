"""Incremental index updates (services.indexing.incremental) against the full build: the
documents committed after the active version are indexed and merged in, and search then
answers exactly as after a full build of the same documents (PageRank aside, which only a
full build recomputes); a recrawled page's old version is never shown; what waits for the
next full build is what the module says; a purged host's pages leave at the next update."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from services.admin import operations
from services.config import Settings
from services.crawler.frontier.ledger import BatchState
from services.indexing.build import build_index
from services.indexing.errors import BuildError
from services.indexing.incremental import update_index
from services.search.service import SearchService
from services.storage.blobs.blobstore import open_blobstore
from services.storage.formats.segment import open_segment
from services.storage.sql.engines import make_engine, session_factory
from services.storage.sql.index_versions import active_index
from services.storage.sql.models import FetchBatch
from tests.integration.conftest import Page, write_corpus

FIRST = [
    [
        Page(
            "http://old.test/",
            "Old harbour",
            "Boats rest in the old harbour at night.",
            links=["http://old.test/fish"],
        ),
        Page("http://old.test/fish", "Fish market", "The fish market opens before dawn by the harbour."),
        Page("http://old.test/tide", "Tides", "Tide tables for the harbour and the bay, updated daily."),
    ],
    [Page("http://old.test/lamp", "Lighthouse", "The lighthouse lamp turns all night over the bay.")],
]
# New pages link to each other and to old ones, and an old page is recrawled with a link to a
# new one: anchor text crosses between old and new pages both ways.
SECOND = [
    [
        Page(
            "http://new.test/",
            "New quay",
            "The new quay takes ferries to the island.",
            links=["http://new.test/ferry", "http://old.test/"],
        ),
        Page("http://new.test/ferry", "Ferry times", "Ferries leave the quay every hour for the island."),
        Page(
            "http://old.test/tide",
            "Tides",
            "Tide tables moved to the harbour office notice board.",
            links=["http://new.test/ferry"],
            recrawl_of=2,
        ),
    ]
]
QUERIES = [
    "harbour",
    "island ferry",
    "quay",
    "tide tables",
    "lighthouse bay",
    "updated daily",
    "notice board",
]


def results(settings: Settings, query: str) -> list[str]:
    service = SearchService(settings, recheck_seconds=0.0)
    return [hit.url for hit in service.search(query, size=20).hits]


def active_arrays(settings: Settings, tmp_path: Path, name: str) -> tuple[dict[str, np.ndarray], dict]:
    engine = make_engine(settings.database_url)
    with session_factory(engine)() as session:
        version = active_index(session)
        assert version is not None
        segment = version.segment
    engine.dispose()
    store = open_blobstore(settings.blob_url)
    arrays, meta = open_segment(store.download(segment, tmp_path / f"{name}.nseg"))
    return {k: np.asarray(v) for k, v in arrays.items()}, meta


def test_an_update_answers_as_a_full_build_of_the_same_documents(settings: Settings, tmp_path: Path) -> None:
    flat = settings
    store = open_blobstore(flat.blob_url)
    write_corpus(store, flat.database_url, FIRST, commit_seq=1)
    build_index(flat, progress=False)
    assert results(flat, "notice board") == []

    write_corpus(store, flat.database_url, SECOND, first_doc=4, commit_seq=2)
    update = update_index(flat, progress=False)
    assert update.version_id is not None and update.new_documents == 3 and update.through_seq == 2
    incremental = {q: results(flat, q) for q in QUERIES}
    merged, merged_meta = active_arrays(flat, tmp_path, "merged")
    assert merged_meta["through_seq"] == 2 and merged_meta["incremental"]["documents"] == 3

    # The recrawl replaced the tide page: its new words find it, its old ones no longer do.
    assert incremental["notice board"] == ["http://old.test/tide"]
    assert "http://old.test/tide" not in incremental["updated daily"]
    assert incremental["island ferry"][:2] == ["http://new.test/ferry", "http://new.test/"]

    build_index(flat, progress=False)
    full, _ = active_arrays(flat, tmp_path, "full")
    assert {q: results(flat, q) for q in QUERIES} == incremental
    for name, value in full.items():
        if name.startswith("vocab_"):
            continue  # spelling counts (segment_merge's docstring)
        if name == "pagerank":  # the same power iteration on the same graph
            np.testing.assert_allclose(merged[name], value, rtol=1e-12)
            continue
        np.testing.assert_array_equal(merged[name], value, err_msg=name)

    again = update_index(flat, progress=False)  # nothing new since the full build
    assert again.version_id is None and again.new_documents == 0


def test_anchor_text_and_links_cross_between_old_and_new_pages(settings: Settings, tmp_path: Path) -> None:
    store = open_blobstore(settings.blob_url)
    write_corpus(store, settings.database_url, FIRST, commit_seq=1)
    build_index(settings, progress=False)
    write_corpus(store, settings.database_url, SECOND, first_doc=4, commit_seq=2)
    update_index(settings, progress=False)
    merged, _ = active_arrays(settings, tmp_path, "merged")
    assert merged["pagerank"].shape[0] == 6 and merged["pagerank"].sum() == pytest.approx(1.0)
    # The old home page (0) is linked from the new one (4) and the old fish page (1) from it;
    # the new ferry page (5) from the new home page and from the recrawled tide page (2).
    offsets = merged["in_offsets"]
    assert merged["in_docs"][offsets[0] : offsets[1]].tolist() == [4]
    assert merged["in_docs"][offsets[5] : offsets[6]].tolist() == [2, 4]
    assert merged["len_anchor"][[0, 5]].tolist() == [1, 2]  # one word ("anchor") per link


def test_an_update_needs_a_full_build_to_start_from(settings: Settings) -> None:
    store = open_blobstore(settings.blob_url)
    write_corpus(store, settings.database_url, FIRST, commit_seq=1)
    with pytest.raises(BuildError, match="nimbus index"):
        update_index(settings, progress=False)


def committed(settings: Settings, *seqs: int) -> None:
    """The ledger rows of the commits ``write_corpus`` stamped: a committer's seqs are the
    ledger's, so a later seq (a purge's) is above them."""
    engine = make_engine(settings.database_url)
    with session_factory(engine).begin() as session:
        for seq in seqs:
            session.add(FetchBatch(seq=seq, state=BatchState.COMMITTED, committed_at=time.time()))
    engine.dispose()


@pytest.fixture(params=["sqlite", "mariadb"])
def either_db(request: pytest.FixtureRequest, settings: Settings) -> Settings:
    """The embedded settings, or the same on a fresh MariaDB database."""
    if request.param == "mariadb":
        return settings.with_overrides(database_url=request.getfixturevalue("mysql_url"))
    return settings


def test_a_purged_hosts_pages_leave_at_the_next_update_with_no_commit_since(
    either_db: Settings, tmp_path: Path
) -> None:
    """``block --purge`` of a host whose pages are older than the active version: no crawl
    commits anything, yet the next update leaves them out (the purge's own commit seq), the
    other host's pages answer as before, and the result equals a full build."""
    flat = either_db
    store = open_blobstore(flat.blob_url)
    write_corpus(store, flat.database_url, FIRST, commit_seq=1)
    write_corpus(store, flat.database_url, SECOND, first_doc=4, commit_seq=2)
    committed(flat, 1, 2)
    build_index(flat, progress=False)
    before = {q: results(flat, q) for q in QUERIES}
    assert any(u.startswith("http://old.test/") for hits in before.values() for u in hits)

    engine = make_engine(flat.database_url)
    with session_factory(engine).begin() as session:
        done = operations.block(session, ["old.test"], "spam", time.time(), purge=True)
    engine.dispose()
    assert done.purged == {"old.test": 4}
    update = update_index(flat, progress=False)
    assert update.version_id is not None and update.new_documents == 4
    purged = {q: results(flat, q) for q in QUERIES}
    for query, hits in before.items():
        assert set(purged[query]) == {u for u in hits if not u.startswith("http://old.test/")}, query
    assert purged["island ferry"][:2] == ["http://new.test/ferry", "http://new.test/"]
    merged, merged_meta = active_arrays(flat, tmp_path, "merged")
    assert merged_meta["incremental"] == {
        "base": merged_meta["incremental"]["base"],
        "documents": 0,
        "removed": 4,
        "deltas": 0,
    }

    build_index(flat, progress=False)
    full, _ = active_arrays(flat, tmp_path, "full")
    assert {q: results(flat, q) for q in QUERIES} == purged
    for name, value in full.items():
        if name.startswith("vocab_"):
            continue  # spelling counts (segment_merge's docstring)
        if name == "pagerank":
            np.testing.assert_allclose(merged[name], value, rtol=1e-12)
            continue
        np.testing.assert_array_equal(merged[name], value, err_msg=name)
    assert update_index(flat, progress=False).version_id is None  # the purge is in the build


def test_a_purge_of_a_host_with_no_stored_pages_says_so_and_takes_no_seq(settings: Settings) -> None:
    store = open_blobstore(settings.blob_url)
    write_corpus(store, settings.database_url, FIRST, commit_seq=1)
    committed(settings, 1)
    build_index(settings, progress=False)
    engine = make_engine(settings.database_url)
    with session_factory(engine).begin() as session:
        done = operations.block(session, ["nothing.test", "test"], "", time.time(), purge=True)
    engine.dispose()
    assert done.purged == {"nothing.test": 0, "test": 4}  # "test": old.test is its subdomain
    assert (
        "nothing to purge for nothing.test: no stored page of it or its subdomains is live "
        "(none was crawled, or all were removed already)"
    ) in done.lines()
