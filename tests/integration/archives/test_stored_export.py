"""`nimbus archive export`: stored documents (database rows, blocks in the blob store) written as
WARC 1.1, read back by warcio (digests checked) and by our own readers; and hostile stores:
bytes missing or damaged, non-ASCII URLs, a document larger than a ranged read."""

from __future__ import annotations

import io
import time
from pathlib import Path

import boto3
import pytest
from sqlalchemy import insert
from warcio.archiveiterator import ArchiveIterator

from services.archives.batches import plan_batches, read_batch
from services.archives.records import ArchiveRecord
from services.archives.stored_export import (
    ExportError,
    ExportReport,
    Selection,
    export_store,
    stored_captures,
)
from services.cli import main
from services.config import Settings
from services.storage.blobs.blobstore import open_blobstore
from services.storage.documents import DocumentWriter, NewDocument
from services.storage.formats.blocks import ContentType
from services.storage.formats.records import Link
from services.storage.sql.engines import make_engine, session_factory
from services.storage.sql.models import DuplicateUrl
from services.storage.sql.schema import init_db
from services.text.urls import url_id
from tests.unit.archives.builders import make_bundle

T0 = 1_700_000_000.5


def page(n: int, host: str = "127.0.0.1:8001", when: float = T0, size: int = 0) -> NewDocument:
    url = f"http://{host}/p{n}"
    filler = "<p>" + "lorem ipsum dolor sit amet " * (size // 27) + "</p>" if size else ""
    body = f"<html><title>Page {n}</title><p>page {n} text</p><a href='/p{n + 1}'>next</a>{filler}</html>"
    return NewDocument(
        doc_num=0, url=url, url_id=url_id(url), body=body.encode(), content_type=ContentType.HTML,
        title=f"Page {n}", text=f"page {n} text", lang="en", links=[Link(f"http://{host}/p{n + 1}", "next")],
        fetched_at=when + n,
    )  # fmt: skip


def store(settings: Settings, docs: list[NewDocument], block_docs: int = 2) -> list[dict]:
    """``docs`` stored by the one document writer, ``block_docs`` a block; their rows."""
    engine = make_engine(settings.database_url)
    init_db(engine)
    writer = DocumentWriter(
        open_blobstore(settings.blob_url, settings.aws_endpoint_url),
        max_block_docs=block_docs,
        max_block_bytes=settings.crawl.block_max_bytes,
    )
    try:
        with session_factory(engine).begin() as session:
            writer.lock(session)
            first = writer.reserve(session, len(docs))
            for n, doc in enumerate(docs, first):
                doc.doc_num = n
            written = writer.write(docs)
            writer.insert(session, written.rows)
    finally:
        engine.dispose()
    return written.rows


def warc_records(data: bytes) -> list[tuple[str, str, object]]:
    """(type, target URI, record) of every record, warcio checking both digests of each."""
    out = []
    for record in ArchiveIterator(io.BytesIO(data), check_digests="raise"):
        body = record.content_stream().read()
        uri = record.rec_headers.get_header("WARC-Target-URI") or ""
        out.append((record.rec_type, uri, (record.rec_headers, record.http_headers, body)))
    return out


def read_back(tmp_path: Path, data: bytes, name: str = "crawl.warc.gz") -> list[ArchiveRecord]:
    bundle = make_bundle(tmp_path / "bundle", 'type = "warc"\ndescription = "export"\n', {name: data})
    return [r for b in plan_batches(bundle, 3) for r in read_batch(bundle, b)]


def test_stored_documents_export_as_warc_that_warcio_and_our_reader_read(settings, tmp_path) -> None:
    docs = [page(n) for n in range(5)]
    store(settings, docs)
    out = tmp_path / "crawl.warc.gz"
    report = export_store(settings, str(out), progress=False, created=T0)
    assert (report.documents, report.failed, report.records) == (5, 0, 1 + 3 * 5)
    data = out.read_bytes()
    assert report.bytes == len(data) and not list(tmp_path.glob(".*.part"))

    records = warc_records(data)
    assert [kind for kind, _uri, _r in records] == ["warcinfo"] + ["response", "request", "metadata"] * 5
    for doc in docs:
        found = {kind: r for kind, uri, r in records if uri == doc.url}
        rec_headers, http_headers, body = found["response"]
        assert body == doc.body and http_headers.get_statuscode() == "200"
        assert http_headers.get_header("Content-Type") == "text/html"
        assert rec_headers.get_header("WARC-Date").startswith(time.strftime("%Y-%m-%dT", time.gmtime(T0)))
        request_headers, request_http, _ = found["request"]
        assert request_http.protocol == "GET" and request_http.get_header("Host") == "127.0.0.1:8001"
        meta = found["metadata"][2].decode()
        assert f"title: {doc.title}\r\n" in meta and "language: en\r\n" in meta
        assert f"outlink: {doc.links[0].url}\r\n" in meta

    pages = {r.url: r for r in read_back(tmp_path, data) if r.payload is not None}
    assert set(pages) == {d.url for d in docs}
    for doc in docs:
        payload = pages[doc.url].payload
        assert (
            payload is not None and payload.body == doc.body and pages[doc.url].fetched_at == doc.fetched_at
        )


def test_missing_and_damaged_bytes_are_named_and_the_rest_exported(settings, tmp_path, capsys, monkeypatch):
    rows = store(settings, [page(n) for n in range(7)])  # blocks of two: 0-1, 2-3, 4-5, 6
    blobs = open_blobstore(settings.blob_url)
    blobs.delete(rows[2]["content_block"])  # documents 2 and 3: their block is gone
    damaged = rows[5]["content_block"]
    data = bytearray(blobs.get(damaged))
    at = rows[5]["content_offset"] + 10
    data[at] ^= 0xFF  # document 5: one byte flipped
    blobs.put(damaged, bytes(data))
    blobs.delete(rows[6]["record_block"])  # document 6: its bytes are there, its record is not

    for name, value in (("DATABASE_URL", settings.database_url), ("BLOB_URL", settings.blob_url)):
        monkeypatch.setenv(f"NIMBUS_{name}", value)
    out = tmp_path / "crawl.warc.gz"
    assert main(["archive", "export", str(out), "--quiet"]) == 1
    captured = capsys.readouterr()
    errors = [line for line in captured.err.splitlines() if "not exported" in line]
    assert len(errors) == 3, captured.err
    assert (
        f"document 2 ({rows[2]['url']}) not exported: content block {rows[2]['content_block']}" in errors[0]
    )
    assert "document 3 " in errors[1] and "document 5 " in errors[2] and "do not match its docId" in errors[2]
    assert "5 documents NOT exported" not in captured.out and "3 documents NOT exported" in captured.out

    exported = {uri for kind, uri, _r in warc_records(out.read_bytes()) if kind == "response"}
    assert exported == {rows[n]["url"] for n in (0, 1, 4, 6)}
    meta = next(
        r[2]
        for kind, uri, r in warc_records(out.read_bytes())
        if kind == "metadata" and uri == rows[6]["url"]
    )
    assert b"title:" not in meta and b"fetchTime:" in meta  # no record: the metadata says what it can


def test_non_ascii_urls_are_written_as_uris(settings, tmp_path) -> None:
    url = "http://bücher.example/straße?q=ü"  # as an older writer may have stored it, not normalized
    doc = NewDocument(
        0, url, url_id(url), "<title>Straße</title>".encode(), ContentType.HTML, "Straße", "Straße"
    )
    store(settings, [doc, page(1, host="xn--bcher-kva.example")])
    out = tmp_path / "crawl.warc"  # plain, not gzip
    export_store(settings, str(out), progress=False, compress=False)
    records = warc_records(out.read_bytes())
    uri = "http://xn--bcher-kva.example/stra%C3%9Fe?q=%C3%BC"
    request = next(r for kind, u, r in records if kind == "request" and u == uri)
    assert request[1].protocol == "GET" and request[1].get_header("Host") == "xn--bcher-kva.example"
    assert any(kind == "response" and u == uri for kind, u, _r in records)
    pages = {r.url for r in read_back(tmp_path, out.read_bytes(), "crawl.warc") if r.payload}
    assert uri in pages


def test_a_document_larger_than_a_ranged_read_is_read_alone(settings, tmp_path) -> None:
    docs = [page(0), page(1, size=3_000_000), page(2)]
    store(settings, docs, block_docs=10)  # one block
    engine = make_engine(settings.database_url)
    report = ExportReport()
    captures = list(
        stored_captures(session_factory(engine), open_blobstore(settings.blob_url), Selection(), report,
                        span_bytes=1_000_000)
    )  # fmt: skip
    engine.dispose()
    assert [c.body for c in captures] == [d.body for d in docs] and report.failed == 0

    huge = page(3, size=20 * 1024 * 1024)  # past the default ranged read (16 MiB) and the reader's cap
    store(settings, [huge])
    out = tmp_path / "huge.warc.gz"
    assert export_store(settings, str(out), progress=False).documents == 4
    bodies = {uri: r[2] for kind, uri, r in warc_records(out.read_bytes()) if kind == "response"}
    assert bodies[huge.url] == huge.body


def test_since_and_host_select_documents_and_duplicates_become_revisits(settings, tmp_path) -> None:
    rows = store(
        settings, [page(0), page(1, when=T0 + 86_400), page(2, host="other.example", when=T0 + 86_400)]
    )
    engine = make_engine(settings.database_url)
    copy = "http://127.0.0.1:8001/copy-of-p1"
    with session_factory(engine).begin() as session:
        values = {
            "url_id": url_id(copy),
            "url": copy,
            "doc_num": rows[1]["doc_num"],
            "doc_id": rows[1]["doc_id"],
        }
        session.execute(insert(DuplicateUrl).values(**values, first_seen=T0, last_seen=T0 + 90_000))
    engine.dispose()

    out = tmp_path / "day2.warc.gz"
    report = export_store(settings, str(out), Selection(since=T0 + 3600, host="127.0.0.1"), progress=False)
    assert (report.documents, report.revisits) == (1, 1)
    records = warc_records(out.read_bytes())
    assert [(kind, uri) for kind, uri, _r in records if kind in ("response", "revisit")] == [
        ("response", rows[1]["url"]),
        ("revisit", copy),
    ]
    read = {r.url: r for r in read_back(tmp_path, out.read_bytes()) if r.payload}
    assert read[copy].payload is not None and read[copy].payload.body == read[rows[1]["url"]].payload.body


def test_export_to_s3(settings, tmp_path, moto_server, s3_bucket, monkeypatch) -> None:
    settings = settings.with_overrides(blob_url=f"s3://{s3_bucket}/blobs", aws_endpoint_url=moto_server)
    store(settings, [page(n) for n in range(3)])
    report = export_store(settings, f"s3://{s3_bucket}/exports/crawl.warc.gz", progress=False)
    data = boto3.client("s3", endpoint_url=moto_server).get_object(
        Bucket=s3_bucket, Key="exports/crawl.warc.gz"
    )
    records = warc_records(data["Body"].read())
    assert report.documents == 3 and sum(kind == "response" for kind, _u, _r in records) == 3
    with pytest.raises(ExportError, match="name the object to write"):
        export_store(settings, f"s3://{s3_bucket}/exports/", progress=False)
    with pytest.raises(ExportError, match="cannot write"):
        export_store(settings, str(tmp_path / "no" / "such" / "folder" / "x.warc.gz"), progress=False)
