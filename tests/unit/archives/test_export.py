"""The WARC 1.1 export, read back by warcio (digests checked) and by our own reader."""

from __future__ import annotations

import io
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator

from services.archives.batches import plan_batches, read_batch
from services.archives.export import Capture, write_warc
from tests.unit.archives.builders import make_bundle

CAPTURES = [
    Capture(
        "http://example.com/a?x=1", 1_700_000_000.25, "93.184.216.34", "text/html; charset=utf-8",
        200, [("Server", "nginx"), ("Content-Encoding", "gzip"), ("Content-Length", "12")],
        "<html><title>Ä page</title><a href='/b'>b</a></html>".encode(),
        {"title": "Ä page", "language": "de"},
    ),
    Capture("http://example.com/paper.pdf", 1_700_000_100.0, "", "application/pdf", 200, [], b"%PDF-1.7 x"),
]  # fmt: skip


def export(compress: bool = True) -> bytes:
    out = io.BytesIO()
    assert write_warc(out, CAPTURES, compress=compress, created=1_700_000_200.0) == 1 + 3 * len(CAPTURES)
    return out.getvalue()


def test_warcio_reads_the_export_with_valid_digests() -> None:
    records = []
    for record in ArchiveIterator(io.BytesIO(export()), check_digests="raise"):
        records.append((record.rec_type, record.rec_headers.get_header("WARC-Target-URI")))
        assert record.rec_headers.protocol == "WARC/1.1"
        if record.rec_type == "response":
            uri = record.rec_headers.get_header("WARC-Target-URI")
            capture = next(c for c in CAPTURES if c.url == uri)
            assert record.content_stream().read() == capture.body
            assert record.http_headers.get_statuscode() == "200"
            assert record.http_headers.get_header("Content-Length") == str(len(capture.body))
            assert record.http_headers.get_header("Content-Encoding") is None  # the body is stored decoded
            assert record.rec_headers.get_header("WARC-IP-Address") == (capture.ip or None)
            assert record.rec_headers.get_header("WARC-Payload-Digest").startswith("sha1:")
    assert [kind for kind, _uri in records] == ["warcinfo"] + ["response", "request", "metadata"] * 2
    assert export() == export()  # the same documents, the same bytes


def test_the_export_archive_crawls_back_to_the_same_payloads(tmp_path: Path) -> None:
    for compress in (True, False):
        bundle = make_bundle(tmp_path / f"out{compress}", 'type = "warc"\ndescription = "export"\n',
                             {"crawl.warc" + (".gz" if compress else ""): export(compress)})  # fmt: skip
        records = [r for b in plan_batches(bundle) for r in read_batch(bundle, b)]
        pages = {r.url: r for r in records if r.payload is not None}
        assert set(pages) == {c.url for c in CAPTURES}
        for capture in CAPTURES:
            page = pages[capture.url]
            assert page.payload is not None and page.payload.body == capture.body
            assert page.fetched_at == capture.fetched_at and page.ip == capture.ip
            assert page.payload.content_type == capture.content_type
