"""A page removed after its index version was built (a recrawl found it gone or noindex, the
operator purged its host) leaves the results at the search service's next look at the
database, not at the next index update: the version hides the documents its commit mark
says were removed since (issue 31's deletes)."""

from __future__ import annotations

import time

import pytest
from sqlalchemy import update

from services.storage.sql.engines import make_engine, session_factory
from services.storage.sql.models import Document
from tests.integration.search.search_corpus import Doc, commit_documents, publish_index

DOCS = [
    Doc("http://r.test/a", "Glacier a", "glacier ice moves downhill slowly"),
    Doc("http://r.test/b", "Glacier b", "glacier valleys carved by ice"),
    Doc("http://r.test/c", "Glacier c", "glacier lakes and glacier ice"),
    Doc("http://r.test/d", "Desert d", "desert sand and dunes"),
]


def _set(settings, doc_num: int, removed: bool, seq: int) -> None:
    engine = make_engine(settings.database_url)
    try:
        with session_factory(engine).begin() as session:
            session.execute(
                update(Document)
                .where(Document.doc_num == doc_num)
                .values(removed_at=time.time() if removed else None, commit_seq=seq)
            )
    finally:
        engine.dispose()


@pytest.fixture
def published(settings):
    commit_documents(settings, DOCS, 0, "crawl-removed")
    publish_index(settings, DOCS, "v1", through_seq=3)
    return settings


def _found(client, q: str) -> tuple[list[int], int]:
    body = client.get("/api/search", params={"q": q}).json()
    return sorted(h["doc_num"] for h in body["hits"]), body["total"]


def test_a_page_removed_after_the_build_leaves_the_results_at_once(client, published):
    assert _found(client, "glacier") == ([0, 1, 2], 3)  # answered, and kept in the result cache
    _set(published, 1, removed=True, seq=4)  # a recrawl after the version found it gone
    assert _found(client, "glacier") == ([0, 2], 2)
    assert _found(client, "valleys") == ([], 0)  # its own words find nothing
    assert _found(client, "desert") == ([3], 1)
    # A later good fetch brings it back, before any new version.
    _set(published, 1, removed=False, seq=5)
    assert _found(client, "glacier") == ([0, 1, 2], 3)


def test_a_removal_the_version_already_includes_changes_nothing(client, published):
    # Removed by a commit the version includes (seq <= its mark): the build decided on it.
    _set(published, 2, removed=True, seq=3)
    assert _found(client, "glacier") == ([0, 1, 2], 3)


def test_a_version_without_a_commit_mark_hides_nothing(client, settings):
    publish_index(settings, DOCS, "v2")  # built before marks: the daemon rebuilds it once
    _set(settings, 0, removed=True, seq=9)
    assert _found(client, "glacier") == ([0, 1, 2], 3)


def test_a_purged_host_leaves_the_results_at_once(settings):
    """``nimbus crawl block --purge`` stamps the host's pages with a commit of its own: the
    service hides them at its next look, before any update."""
    from fastapi.testclient import TestClient

    from services.admin import operations
    from services.search.http.app import create_app

    docs = [*DOCS, Doc("http://other.test/e", "Glacier e", "glacier on another host")]
    commit_documents(settings, docs, 0, "crawl-purge")
    publish_index(settings, docs, "v1", through_seq=0)  # the ledger's seqs start at 1
    with TestClient(create_app(settings, recheck_seconds=0)) as client:
        assert _found(client, "glacier") == ([0, 1, 2, 4], 4)
        engine = make_engine(settings.database_url)
        try:
            with session_factory(engine).begin() as session:
                changed = operations.block(session, ["r.test"], "spam", time.time(), purge=True)
        finally:
            engine.dispose()
        assert changed.purged == {"r.test": 4}
        assert _found(client, "glacier") == ([4], 1)
        assert _found(client, "desert") == ([], 0)


NOTICE = (
    "Ferry notice: the river ferry crosses every hour from the north quay, tickets are sold on "
    "board, dogs and bicycles travel free, and the last crossing leaves at ten in the evening."
)


def test_the_copies_of_a_removed_page_are_still_found_under_one_of_them(settings):
    """Near-duplicates show under their group's first page; when that page is removed, its
    first live copy stands in for it (the other copies listed under it) until the next update
    refolds the group, instead of the whole family vanishing."""
    docs = [
        Doc(f"http://n.test/notice/{day}", "Ferry notice", f"{NOTICE} Updated {day}.") for day in (1, 2, 3)
    ]
    docs.append(Doc("http://n.test/other", "Timetable", "the ferry timetable for winter"))
    commit_documents(settings, docs, 0, "crawl-copies")
    publish_index(settings, docs, "v1", through_seq=3)
    from fastapi.testclient import TestClient

    from services.search.http.app import create_app

    with TestClient(create_app(settings, recheck_seconds=0)) as client:

        def hits() -> list[tuple[int, list[str]]]:
            body = client.get("/api/search", params={"q": "quay"}).json()
            return [(h["doc_num"], sorted(h["also_at"])) for h in body["hits"]]

        copies = [d.url for d in docs[:3]]
        assert hits() == [(0, copies[1:])]  # folded: one result, the copies under it
        _set(settings, 0, removed=True, seq=4)
        assert hits() == [(1, [copies[2]])]  # the first live copy stands in
        _set(settings, 1, removed=True, seq=5)
        assert hits() == [(2, [])]
