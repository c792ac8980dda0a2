"""Delta segments (services.indexing.delta_build) and the merge of a base with its deltas
(services.indexing.incremental): what a delta holds and removes, how it is scored, that a
merge of base and deltas is a full build, that a background merge keeps the deltas published
while it ran, and that a failed or superseded publish leaves the previous version and no blob."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import func, select, update

from services.config import Settings
from services.indexing import delta_build, incremental, publish
from services.indexing.build import build_index
from services.indexing.delta_build import publish_delta
from services.indexing.errors import BuildError, SupersededError
from services.indexing.incremental import update_index
from services.search.service import SearchService
from services.storage.blobs.blobstore import open_blobstore
from services.storage.formats.delta import DeltaDocs
from services.storage.formats.segment import open_segment
from services.storage.formats.segment_codec import expand_segment
from services.storage.sql.engines import make_engine, session_factory
from services.storage.sql.index_versions import active_index
from services.storage.sql.models import Document, PageRankScore
from tests.integration.conftest import Page, write_corpus

FIRST = [
    [
        Page("http://old.test/", "Old harbour", "Boats rest in the old harbour at night.", links=["http://old.test/fish"]),
        Page("http://old.test/fish", "Fish market", "The fish market opens before dawn by the harbour."),
        Page("http://old.test/tide", "Tides", "Tide tables for the harbour and the bay, updated daily."),
    ],
    [Page("http://old.test/lamp", "Lighthouse", "The lighthouse lamp turns all night over the bay.")],
]  # fmt: skip
# New pages link to each other only: no anchor text crosses to or from the base's pages, so
# a delta knows all a full build knows of them.
NEW = [
    [
        Page("http://new.test/", "New quay", "The new quay takes ferries to the harbour island.", links=["http://new.test/ferry"]),
        Page("http://new.test/ferry", "Ferry times", "Ferries leave the quay every hour for the island.", links=["http://new.test/"]),
    ]
]  # fmt: skip
RECRAWL = [
    [
        Page(
            "http://old.test/tide",
            "Tides",
            "Tide tables moved to the harbour office notice board.",
            recrawl_of=2,
        )
    ]
]
LATER = [[Page("http://new.test/pier", "Pier", "The pier reaches past the harbour wall into the bay.")]]


def version(settings: Settings) -> tuple[int, str, list[str]]:
    engine = make_engine(settings.database_url)
    try:
        with session_factory(engine)() as session:
            active = active_index(session)
            assert active is not None
            return active.id, active.segment, active.delta_segments
    finally:
        engine.dispose()


def segment(settings: Settings, name: str) -> tuple[dict[str, np.ndarray], dict]:
    arrays, meta = open_segment(open_blobstore(settings.blob_url).local_file(name, Path("unused")))
    return expand_segment(arrays), meta


def remove(settings: Settings, doc: int, seq: int) -> None:
    """A recrawl that found ``doc`` gone, committed as ``seq``."""
    engine = make_engine(settings.database_url)
    with session_factory(engine).begin() as session:
        session.execute(
            update(Document).where(Document.doc_num == doc).values(removed_at=time.time(), commit_seq=seq)
        )
    engine.dispose()


def postings(arrays: dict[str, np.ndarray], docs: set[int]) -> dict[tuple[bytes, int], float]:
    """(term, doc) -> impact of ``docs``' postings."""
    out = {}
    offsets, runs = arrays["term_offsets"], arrays["post_offsets"]
    for t in range(arrays["df"].shape[0]):
        term = arrays["term_bytes"][offsets[t] : offsets[t + 1]].tobytes()
        for p in range(int(runs[t]), int(runs[t + 1])):
            if int(arrays["post_docs"][p]) in docs:
                out[(term, int(arrays["post_docs"][p]))] = float(
                    arrays["post_impacts"][p] * arrays["impact_scale"][t]
                )
    return out


def urls(settings: Settings, query: str) -> list[str]:
    return [hit.url for hit in SearchService(settings, recheck_seconds=0.0).search(query, size=20).hits]


def test_a_delta_holds_the_new_documents_lists_the_removed_and_keeps_the_base(settings: Settings) -> None:
    store = open_blobstore(settings.blob_url)
    write_corpus(store, settings.database_url, FIRST, commit_seq=1)
    build = build_index(settings, progress=False)
    write_corpus(store, settings.database_url, NEW, first_doc=4, commit_seq=2)

    first = publish_delta(settings, progress=False)
    assert first.version_id is not None and first.new_documents == 2 and first.through_seq == 2
    _, base, deltas = version(settings)
    assert base == build.segment and deltas == [first.segment]
    arrays, meta = segment(settings, first.segment)
    docs = DeltaDocs.from_meta(meta)
    assert docs is not None and docs.base == base
    assert docs.holds.tolist() == [4, 5] and docs.removed.tolist() == []
    assert meta["through_seq"] == 2 and meta["num_docs"] == 6
    assert set(arrays["post_docs"].tolist()) == {4, 5}  # global numbers, only its own documents
    base_arrays, _ = segment(settings, base)
    # One per-document row per document it holds (its bytes follow what it holds, not N).
    assert docs.rows_held and arrays["doc_lengths"].shape[0] == 2
    assert arrays["pagerank"].tolist() == [1 / 6, 1 / 6]  # a new page: the mean
    assert arrays["len_anchor"].tolist() == [1, 1]  # anchor text between new pages
    assert publish_delta(settings, progress=False).version_id is None  # nothing since

    write_corpus(store, settings.database_url, RECRAWL, first_doc=6, commit_seq=3)
    remove(settings, 1, seq=3)
    second = publish_delta(settings, progress=False)
    _, base_again, deltas = version(settings)
    assert base_again == base and deltas == [first.segment, second.segment]
    second_arrays, meta = segment(settings, second.segment)
    docs = DeltaDocs.from_meta(meta)
    assert docs is not None and docs.holds.tolist() == [2] and docs.removed.tolist() == [1]
    assert second_arrays["pagerank"].tolist() == [base_arrays["pagerank"][2]]  # a recrawl keeps its own
    engine = make_engine(settings.database_url)
    with session_factory(engine)() as session:  # a delta leaves the PageRank rows (O(N)) alone
        assert session.scalar(select(func.count()).select_from(PageRankScore)) == 4
    engine.dispose()


def test_a_delta_of_pages_linked_among_themselves_scores_as_a_full_build(settings: Settings) -> None:
    store = open_blobstore(settings.blob_url)
    write_corpus(store, settings.database_url, FIRST, commit_seq=1)
    build_index(settings, progress=False)
    write_corpus(store, settings.database_url, NEW, first_doc=4, commit_seq=2)
    delta, _ = segment(settings, publish_delta(settings, progress=False).segment)
    full, _ = segment(settings, build_index(settings, progress=False).segment)
    assert postings(delta, {4, 5}) == postings(full, {4, 5})
    for name in ("len_title", "len_body", "len_anchor", "len_url", "doc_lengths"):
        np.testing.assert_array_equal(delta[name], full[name][4:], err_msg=name)  # held rows: 4, 5


def test_a_merge_of_the_base_and_its_deltas_is_a_full_build(settings: Settings, tmp_path: Path) -> None:
    store = open_blobstore(settings.blob_url)
    write_corpus(store, settings.database_url, FIRST, commit_seq=1)
    build_index(settings, progress=False)
    write_corpus(store, settings.database_url, NEW, first_doc=4, commit_seq=2)
    publish_delta(settings, progress=False)
    write_corpus(store, settings.database_url, RECRAWL, first_doc=6, commit_seq=3)
    remove(settings, 1, seq=3)
    publish_delta(settings, progress=False)
    assert len(version(settings)[2]) == 2

    merge = update_index(settings, progress=False, deltas_only=True)
    assert merge.version_id is not None and merge.through_seq == 3 and merge.new_documents == 4
    _, base, deltas = version(settings)
    assert base == merge.segment and deltas == []
    merged, meta = segment(settings, base)
    assert meta["incremental"]["deltas"] == 2 and DeltaDocs.from_meta(meta) is None
    queries = {q: urls(settings, q) for q in ("harbour", "notice board", "fish market", "island ferry")}
    assert queries["fish market"] == [] and queries["notice board"] == ["http://old.test/tide"]

    full, _ = segment(settings, build_index(settings, progress=False).segment)
    assert {q: urls(settings, q) for q in queries} == queries
    for name, value in full.items():
        if name.startswith("vocab_"):
            continue  # spelling counts (segment_merge's docstring)
        if name == "pagerank":
            np.testing.assert_allclose(merged[name], value, rtol=1e-12)
            continue
        np.testing.assert_array_equal(merged[name], value, err_msg=name)


def test_a_background_merge_keeps_the_deltas_published_while_it_ran(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The merge folds what the version's deltas held when it started; a delta published
    before the merge is (here: just before its publish) holds newer documents and stays."""
    store = open_blobstore(settings.blob_url)
    write_corpus(store, settings.database_url, FIRST, commit_seq=1)
    build_index(settings, progress=False)
    write_corpus(store, settings.database_url, NEW, first_doc=4, commit_seq=2)
    first = publish_delta(settings, progress=False)
    write_corpus(store, settings.database_url, LATER, first_doc=6, commit_seq=3)  # after the delta's mark
    published: list[str] = []
    real = incremental.publish_segment

    def delta_meanwhile(*args, **kwargs):  # type: ignore[no-untyped-def]
        published.append(publish_delta(settings, progress=False).segment)
        return real(*args, **kwargs)

    monkeypatch.setattr(incremental, "publish_segment", delta_meanwhile)
    merge = update_index(settings, progress=False, deltas_only=True)
    assert merge.through_seq == 2 and merge.new_documents == 2  # the first delta's documents
    _, base, deltas = version(settings)
    assert base == merge.segment and deltas == published and published[0] != first.segment
    merged, meta = segment(settings, base)
    assert meta["through_seq"] == 2
    assert 6 not in set(merged["post_docs"].tolist())  # the pier is the carried delta's ...
    assert merged["len_anchor"][6] == 0 and merged["doc_lengths"][6] == 0  # nor anchor text alone
    later, _ = segment(settings, published[0])
    assert set(later["post_docs"].tolist()) == {6}  # ... and only its
    assert publish_delta(settings, progress=False).version_id is None  # nothing lost, nothing twice


def test_a_failed_activation_leaves_the_previous_version_and_no_blob(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = open_blobstore(settings.blob_url)
    write_corpus(store, settings.database_url, FIRST, commit_seq=1)
    build_index(settings, progress=False)
    before, blobs = version(settings), set(store.list("index/"))
    write_corpus(store, settings.database_url, NEW, first_doc=4, commit_seq=2)

    def fail(*_: object, **__: object) -> None:
        raise RuntimeError("the database went away")

    monkeypatch.setattr(publish, "activate_index", fail)
    with pytest.raises(RuntimeError, match="went away"):
        publish_delta(settings, progress=False)
    assert version(settings) == before and set(store.list("index/")) == blobs
    monkeypatch.undo()
    again = publish_delta(settings, progress=False)  # nothing was lost
    assert again.new_documents == 2 and version(settings)[2] == [again.segment]


def test_a_delta_finding_a_full_build_published_meanwhile_is_dropped(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = open_blobstore(settings.blob_url)
    write_corpus(store, settings.database_url, FIRST, commit_seq=1)
    build_index(settings, progress=False)
    write_corpus(store, settings.database_url, NEW, first_doc=4, commit_seq=2)
    real = delta_build.publish_delta_segment
    built: list[str] = []

    def build_meanwhile(*args, **kwargs):  # type: ignore[no-untyped-def]
        built.append(build_index(settings, progress=False).segment)
        return real(*args, **kwargs)

    monkeypatch.setattr(delta_build, "publish_delta_segment", build_meanwhile)
    blobs_before = set(store.list("index/"))
    with pytest.raises(SupersededError, match="not published"):
        publish_delta(settings, progress=False)
    assert version(settings)[1:] == (built[0], [])
    assert set(store.list("index/")) <= blobs_before | {built[0]}  # the delta's blob is gone


def test_search_answers_from_the_base_and_its_deltas_as_from_a_full_build(settings: Settings) -> None:
    """The search side's segment set over what this side publishes: new pages found, a
    recrawled page by its new words only, a removed one nowhere; the same documents as a
    full build finds (their order may differ: PageRank and anchor text wait for a merge)."""
    store = open_blobstore(settings.blob_url)
    write_corpus(store, settings.database_url, FIRST, commit_seq=1)
    build_index(settings, progress=False)
    write_corpus(store, settings.database_url, NEW, first_doc=4, commit_seq=2)
    publish_delta(settings, progress=False)
    write_corpus(store, settings.database_url, RECRAWL, first_doc=6, commit_seq=3)
    remove(settings, 1, seq=3)
    publish_delta(settings, progress=False)
    queries = ["harbour", "island ferry", "quay", "notice board", "updated daily", "fish market", "bay"]
    deltas = {q: urls(settings, q) for q in queries}
    assert deltas["notice board"] == ["http://old.test/tide"]
    assert deltas["fish market"] == [] and "http://old.test/tide" not in deltas["updated daily"]
    assert set(deltas["island ferry"]) == {"http://new.test/", "http://new.test/ferry"}
    build_index(settings, progress=False)
    assert {q: sorted(urls(settings, q)) for q in queries} == {q: sorted(hits) for q, hits in deltas.items()}


def test_a_version_takes_at_most_max_deltas(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only merges that keep failing get there: deltas stop, asking for a merge or a build."""
    monkeypatch.setattr(delta_build, "MAX_DELTAS", 1)
    store = open_blobstore(settings.blob_url)
    write_corpus(store, settings.database_url, FIRST, commit_seq=1)
    build_index(settings, progress=False)
    write_corpus(store, settings.database_url, NEW, first_doc=4, commit_seq=2)
    publish_delta(settings, progress=False)
    write_corpus(store, settings.database_url, LATER, first_doc=6, commit_seq=3)
    with pytest.raises(BuildError, match="merge them first"):
        publish_delta(settings, progress=False)
    assert update_index(settings, progress=False).new_documents == 3  # the merge takes all
    assert version(settings)[2] == []


def test_deltas_on_s3_and_mariadb_fetch_the_base_once(
    moto_server: str, s3_bucket: str, mysql_url: str, tmp_path: Path
) -> None:
    """On a remote store the version's segments are copied once into the var directory and
    reused by the next delta; the copies of segments a merge replaced are removed."""
    remote = Settings.of(
        database_url=mysql_url,
        blob_url=f"s3://{s3_bucket}/nimbus",
        aws_endpoint_url=moto_server,
        mr_runner="inline",
        var_dir=tmp_path / "var",
    )
    store = open_blobstore(remote.blob_url, remote.aws_endpoint_url)
    write_corpus(store, remote.database_url, FIRST, commit_seq=1)
    base = build_index(remote, progress=False).segment
    write_corpus(store, remote.database_url, NEW, first_doc=4, commit_seq=2)
    first = publish_delta(remote, progress=False).segment
    cache = remote.var_dir / "segment-cache"
    copy = cache / base.replace("/", "__")
    fetched = copy.stat().st_mtime_ns
    write_corpus(store, remote.database_url, LATER, first_doc=6, commit_seq=3)
    second = publish_delta(remote, progress=False)
    assert second.new_documents == 1 and copy.stat().st_mtime_ns == fetched  # not fetched again
    assert sorted(p.name for p in cache.iterdir()) == sorted(n.replace("/", "__") for n in (base, first))
    assert version(remote)[1:] == (base, [first, second.segment])

    merged = update_index(remote, progress=False, deltas_only=True).segment
    write_corpus(store, remote.database_url, RECRAWL, first_doc=7, commit_seq=4)
    third = publish_delta(remote, progress=False).segment
    assert version(remote)[1:] == (merged, [third])
    assert sorted(p.name for p in cache.iterdir()) == [merged.replace("/", "__")]


def test_a_delta_of_removals_only_hides_them_in_the_base(settings: Settings) -> None:
    """A purge or a recrawl's 404 and nothing else committed: a delta with no document, its
    removals listed, and search no longer finds the page."""
    store = open_blobstore(settings.blob_url)
    write_corpus(store, settings.database_url, FIRST, commit_seq=1)
    build_index(settings, progress=False)
    remove(settings, 3, seq=2)  # the lighthouse page is gone
    published = publish_delta(settings, progress=False)
    assert published.version_id is not None
    _, _, deltas = version(settings)
    arrays, meta = segment(settings, deltas[-1])
    docs = DeltaDocs.from_meta(meta)
    assert docs is not None and docs.holds.tolist() == [] and docs.removed.tolist() == [3]
    assert arrays["doc_lengths"].shape[0] == 0 and arrays["post_docs"].shape[0] == 0
    service = SearchService(settings, recheck_seconds=0.0)
    try:
        assert service.search("lighthouse").hits == []
        assert [h.url for h in service.search("harbour").hits]  # the others stay
    finally:
        service.close()
