"""A version of a base and delta segments (issue 31's incremental index) is searched as one:
new pages are found, a recrawled page by its new words only, removed pages never; the base
stays mapped across versions (a delta's publish does not reload it) and its files stay in the
segment cache while a version uses them."""

from __future__ import annotations

import pytest

from services.search.retrieval.index_holder import IndexHolder
from services.search.retrieval.segment_set import SegmentSet
from services.storage.blobs.blobstore import open_blobstore
from services.storage.sql.engines import make_engine, session_factory
from tests.integration.search.search_corpus import Doc, commit_documents, publish_delta, publish_index

FIRST = [
    Doc("http://d.test/a", "Glacier a", "glacier ice moves downhill slowly"),
    Doc("http://d.test/b", "Glacier b", "glacier valleys carved by ice"),
    Doc("http://d.test/c", "Desert c", "desert sand and dunes"),
]
LATER = [
    Doc("http://d.test/d", "Fjord d", "a fjord is a glacier valley the sea filled"),
    Doc("http://d.test/e", "Moraine e", "moraine debris a glacier left behind"),
]
# Page b recrawled: its carved valleys are gone, it speaks of crevasses now.
RECRAWLED_B = Doc("http://d.test/b", "Glacier b", "glacier crevasses open in summer")


@pytest.fixture
def published(settings):
    commit_documents(settings, FIRST + LATER, 0, "crawl-deltas")
    publish_index(settings, FIRST, "base", through_seq=3)
    return settings


def _found(client, q: str) -> list[int]:
    body = client.get("/api/search", params={"q": q}).json()
    return sorted(h["doc_num"] for h in body["hits"])


def test_new_pages_in_a_delta_are_found_beside_the_base(client, published):
    assert _found(client, "glacier") == [0, 1]
    publish_delta(published, FIRST + LATER, [3, 4], "d1", through_seq=5)
    assert _found(client, "glacier") == [0, 1, 3, 4]
    assert _found(client, "fjord") == [3]
    # The phrase is in pages b (base) and d (delta: positions read there), so they come
    # first; too few pages hold it for it to be required, so the pages with its words follow.
    body = client.get("/api/search", params={"q": '"glacier valleys"'}).json()
    assert sorted(h["doc_num"] for h in body["hits"][:2]) == [1, 3] and body["total"] == 4
    assert _found(client, "desert") == [2]


def test_a_recrawled_page_is_found_by_its_new_words_only(client, published):
    docs = [FIRST[0], RECRAWLED_B, FIRST[2], *LATER]
    publish_delta(published, docs, [1, 3], "d1", through_seq=5)
    assert _found(client, "carved") == []  # only the superseded copy held it
    assert _found(client, "crevasses") == [1]
    assert _found(client, "glacier") == [0, 1, 3]  # page b once


def test_a_page_a_delta_removed_is_hidden_in_the_base(client, published):
    publish_delta(published, FIRST + LATER, [3], "d1", removed=[0], through_seq=5)
    assert _found(client, "glacier") == [1, 3]


def test_the_holder_keeps_the_base_mapped_and_cached_across_deltas(published):
    engine = make_engine(published.database_url)
    try:
        cache = published.var_dir / "segments"
        holder = IndexHolder(session_factory(engine), open_blobstore(published.blob_url), cache, 0.0)
        first = holder.current()
        assert first is not None and not isinstance(first, SegmentSet)
        publish_delta(published, FIRST + LATER, [3], "d1", through_seq=4)
        second = holder.current()
        assert isinstance(second, SegmentSet) and second.parts[0].arrays is first.arrays
        publish_delta(published, FIRST + LATER, [4], "d2", through_seq=5)
        third = holder.current()
        assert isinstance(third, SegmentSet) and third.segments == [
            "index/segment-base.nseg",
            "index/delta-d1.nseg",
            "index/delta-d2.nseg",
        ]
        assert third.parts[1] is second.parts[1]  # d1 not opened again
        assert {p.name for p in cache.glob("*.nseg")} == {
            "index__segment-base.nseg",
            "index__delta-d1.nseg",
            "index__delta-d2.nseg",
        }
    finally:
        engine.dispose()


def test_a_delta_version_reads_only_its_documents_for_the_operators_and_keeps_the_vocabulary(
    client, published
):
    """site: and filetype: know a delta's pages (their rows read, not every document's
    again); the spelling vocabulary stays the base's until a merge or a build replaces it."""
    service = client.app.state.service
    assert _found(client, "glacier site:d.test") == [0, 1]
    before = service.holder.current()
    vocabulary, facts = service.vocabulary(before), service.facts.get(before)
    other = [*FIRST, *LATER, Doc("http://e.test/g", "Glacier g", "glacier on another host")]
    commit_documents(published, other[5:], 5, "crawl-deltas-2")
    publish_delta(published, other, [3, 4, 5], "d1", through_seq=5)
    assert _found(client, "glacier site:e.test") == [5]
    assert _found(client, "glacier site:d.test") == [0, 1, 3, 4]
    after = service.holder.current()
    assert after.version_id != before.version_id
    assert service.vocabulary(after) is vocabulary  # carried, not rebuilt
    assert service.facts.get(after) is not facts and len(service.facts.get(after).hosts) == 2


def test_page_info_of_a_delta_page_reads_its_links_and_scores_from_the_delta(client, published):
    linked = [
        *FIRST,
        Doc(
            "http://d.test/d",
            "Fjord d",
            "a fjord is a glacier valley the sea filled",
            links=[("http://d.test/e", "moraine")],
        ),
        Doc("http://d.test/e", "Moraine e", "moraine debris a glacier left behind"),
    ]
    publish_delta(published, linked, [3, 4], "d1", through_seq=5)
    info = client.get("/api/page/4", params={"q": "moraine"}).json()
    assert [link["doc_num"] for link in info["in_links"]] == [3] and info["in_link_count"] == 1
    assert info["score"]["rank"] == 1 and info["score"]["terms"][0]["score"] > 0
    assert client.get("/api/page/3").json()["out_link_count"] == 1
    base_page = client.get("/api/page/0", params={"q": "glacier"}).json()
    assert base_page["score"]["terms"][0]["score"] > 0 and base_page["in_link_count"] == 0


def test_healthz_names_the_deltas_and_the_last_commit_served(client, published):
    assert client.get("/healthz").json()["deltas"] == []
    publish_delta(published, FIRST + LATER, [3, 4], "d1", through_seq=5)
    health = client.get("/healthz").json()
    assert health["segment"] == "index/segment-base.nseg" and health["deltas"] == ["index/delta-d1.nseg"]
    assert health["through_seq"] == 5 and health["num_docs"] == 5
