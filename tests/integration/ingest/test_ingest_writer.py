"""Ingest writes collection documents as the committer writes crawled ones: blocks in the
blob store, dense document rows in one transaction, readable back by ranged reads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import func, select

from services.eval.collection import load_collection
from services.ingest.collection import IngestError
from services.ingest.writer import ingest_documents
from services.search.service import SearchService
from services.storage.blobs.blobstore import FileBlobStore, open_blobstore
from services.storage.formats.blocks import read_block
from services.storage.formats.records import decode_record
from services.storage.sql.counters import read_counters
from services.storage.sql.engines import make_engine, session_factory
from services.storage.sql.models import Document
from tests.integration.stored_rows import stored_documents

DOCS = [
    {"id": "d1", "title": "Wing flutter", "text": "Flutter of swept wings at transonic speed."},
    {"id": "d2", "title": "Jet engines", "text": "Compressor stall in jet engines."},
    {"id": "d/3", "title": "", "text": "A document without a title."},
    {"id": "d4", "title": "", "text": ""},
    {"id": "d5", "title": "", "text": ""},  # the same (empty) bytes as d4: stored twice all the same
]


def write_collection(root: Path, docs: list[dict]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "docs.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (root / "queries.jsonl").write_text(json.dumps({"id": "1", "text": "wing flutter"}) + "\n")
    (root / "qrels.tsv").write_text(f"query_id\tdoc_id\trelevance\n1\t{docs[0]['id']}\t1\n")
    return root


def _ingest(collection, settings, *, progress):
    return ingest_documents(collection.docs(), collection.name, settings, progress=progress)


@pytest.fixture(params=["sqlite", "mariadb"])
def ingest_settings(request, settings):
    if request.param == "mariadb":
        return settings.with_overrides(database_url=request.getfixturevalue("mysql_url"), block_max_docs=2)
    return settings.with_overrides(block_max_docs=2)


def test_ingested_documents_read_back_by_ranged_reads(ingest_settings, tmp_path):
    collection = load_collection(write_collection(tmp_path / "tiny", DOCS))
    result = _ingest(collection, ingest_settings, progress=False)

    assert (result.added, result.already_stored) == (5, 0)
    assert result.doc_nums == {0: "d1", 1: "d2", 2: "d/3", 3: "d4", 4: "d5"}
    assert len(result.blocks) == 6  # three blocks of at most block_max_docs=2, each a pair
    rows = stored_documents(ingest_settings)
    assert [r.doc_num for r in rows] == [0, 1, 2, 3, 4]
    assert rows[2].url == "https://tiny.collection.invalid/doc/d%2F3"
    assert {r.lang for r in rows} == {"en"} and {r.content_type for r in rows} == {"text/plain"}

    blobs = open_blobstore(ingest_settings.blob_url)
    service = SearchService(ingest_settings, blobs=blobs)
    try:
        for row, spec in zip(rows, DOCS, strict=True):
            body = (f"{spec['title']}\n\n{spec['text']}" if spec["title"] else spec["text"]).encode()
            cached = service.pages.cached(row.doc_num)  # one ranged read, checked against the docId
            assert (cached.body, cached.media_type, cached.url) == (body, "text/plain", row.url)
            member = blobs.get(row.record_block, row.record_offset, row.record_offset + row.record_length)
            record = decode_record(member)
            assert (record.doc_num, record.url, record.title, record.text) == (
                row.doc_num,
                row.url,
                spec["title"],
                spec["text"],
            )
            assert (record.content_block, record.content_index) == (row.content_block, row.content_index)
    finally:
        service.close()
    for name in result.blocks:
        if name.startswith("content/"):
            assert len(read_block(blobs.get(name))) <= 2

    engine = make_engine(ingest_settings.database_url)
    with session_factory(engine)() as session:
        assert read_counters(session)["ingested_documents"] == 5
    engine.dispose()


def test_ingesting_again_stores_nothing_twice_and_numbers_continue(settings, tmp_path):
    tiny = load_collection(write_collection(tmp_path / "tiny", DOCS))
    first = _ingest(tiny, settings, progress=False)
    again = _ingest(tiny, settings, progress=False)
    assert (again.added, again.already_stored, again.blocks) == (0, 5, [])
    assert again.doc_nums == first.doc_nums
    assert len(stored_documents(settings)) == 5

    other = load_collection(write_collection(tmp_path / "other", DOCS[:2]))
    added = _ingest(other, settings, progress=False)
    assert added.doc_nums == {5: "d1", 6: "d2"}  # its own URLs, numbered from the maximum + 1
    assert {r.url for r in stored_documents(settings)[5:]} == {
        "https://other.collection.invalid/doc/d1",
        "https://other.collection.invalid/doc/d2",
    }


def test_another_version_of_the_collection_is_refused_and_leaves_nothing(settings, tmp_path):
    _ingest(load_collection(write_collection(tmp_path / "tiny", DOCS[:2])), settings, progress=False)
    store = open_blobstore(settings.blob_url)
    blobs_before = list(store.list())
    changed = [DOCS[0], DOCS[2], {**DOCS[1], "text": "Changed."}]
    with pytest.raises(IngestError, match="another version of the collection"):
        # One document a block: d/3's block is written before the changed d2 is found.
        _ingest(
            load_collection(write_collection(tmp_path / "tiny", changed)),
            settings.with_overrides(block_max_docs=1),
            progress=False,
        )
    assert [r.doc_num for r in stored_documents(settings)] == [0, 1]  # d/3 of the failed ingest rolled back
    assert list(store.list()) == blobs_before  # and its block deleted


class FailingStore(FileBlobStore):
    """A file store whose n-th put fails, as a lost connection to S3 would."""

    def __init__(self, root: Path, fail_at: int) -> None:
        super().__init__(root)
        self.puts, self.fail_at = 0, fail_at

    def put(self, name: str, data: bytes) -> None:
        self.puts += 1
        if self.puts == self.fail_at:
            raise OSError("connection reset")
        super().put(name, data)


def test_a_failure_half_way_leaves_no_rows_and_no_blocks(settings, tmp_path, monkeypatch):
    store = FailingStore(tmp_path / "failing", fail_at=4)  # the second block's record block
    monkeypatch.setattr("services.ingest.writer.open_blobstore", lambda *_a, **_k: store)
    collection = load_collection(write_collection(tmp_path / "tiny", DOCS))
    with pytest.raises(OSError, match="connection reset"):
        _ingest(collection, settings.with_overrides(block_max_docs=2), progress=False)
    assert list(store.list()) == []
    engine = make_engine(settings.database_url)
    with session_factory(engine)() as session:
        assert session.scalar(select(func.count()).select_from(Document)) == 0
    engine.dispose()


def test_progress_and_summary_go_to_stderr(settings, tmp_path, capsys):
    collection = load_collection(write_collection(tmp_path / "tiny", DOCS))
    _ingest(collection, settings, progress=True)
    out, err = capsys.readouterr()
    assert out == ""
    assert "ingest: ingested 5 documents (5 new, 0 already stored)" in err and "docs/s" in err
