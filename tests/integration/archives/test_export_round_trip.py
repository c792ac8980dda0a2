"""The round trip of issue 30: crawl a loopback site, export it as WARC, read the export back.

Today the export is read back by the archive readers (``plan_batches`` / ``read_batch`` over a
bundle made of it) and each payload parsed as the crawler parses a fetched page: the same URLs,
titles and texts as the stored documents. ``archive_crawl`` is where the export is crawled into
a fresh store once ``nimbus archive crawl`` exists; its test runs from then on.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import select

from services.archives.batches import plan_batches, read_batch
from services.archives.bundle import load_bundle
from services.archives.stored_export import export_store
from services.cli import main
from services.config import Settings
from services.crawler.crawl import run_crawl
from services.crawler.web.fetch_result import FetchResult
from services.crawler.web.parse import parse_document
from services.demo.sampleweb import Resource, Site, SiteServer
from services.storage.blobs.blobstore import open_blobstore
from services.storage.formats.records import decode_record
from services.storage.sql.engines import make_engine, session_factory
from services.storage.sql.models import Document

PDF = Path(__file__).resolve().parents[3] / "data" / "pdf" / "pypdf-example.pdf"
Texts = dict[str, tuple[str, str]]  # url -> (title, text)


def small_site() -> Site:
    html = "text/html; charset=utf-8"
    pages = {
        "/": '<title>Rivers</title><p>Rivers.</p><a href="/rhine">Rhine</a> <a href="/paper.pdf">paper</a>',
        "/rhine": '<title>Rhine</title><p>The Rhine flows through Köln.</p><a href="/danube">Danube</a>',
        "/danube": '<title>Danube</title><p>The Danube reaches the Black Sea.</p><a href="/">home</a>',
    }
    resources = {path: Resource(html, f"<html>{body}</html>".encode()) for path, body in pages.items()}
    resources["/paper.pdf"] = Resource("application/pdf", PDF.read_bytes())
    return Site("rivers", resources)


def stored_texts(settings: Settings) -> Texts:
    """Every stored document's URL, title and text, from its record."""
    engine = make_engine(settings.database_url)
    blobs = open_blobstore(settings.blob_url)
    try:
        with session_factory(engine)() as session:
            rows = list(session.scalars(select(Document).order_by(Document.doc_num)))
    finally:
        engine.dispose()
    texts = {}
    for row in rows:
        member = blobs.get(row.record_block, row.record_offset, row.record_offset + row.record_length)
        record = decode_record(member)
        texts[row.url] = (record.title, record.text)
    return texts


def read_back(bundle_dir: Path) -> Texts:
    """The export read by the archive readers, each payload parsed as the crawler parses a page."""
    bundle = load_bundle(str(bundle_dir))
    texts = {}
    for batch in plan_batches(bundle, batch_size=2):
        for record in read_batch(bundle, batch):
            if record.payload is None:
                continue
            fetched = FetchResult(
                record.url,
                record.url,
                record.payload.status,
                record.payload.content_type,
                record.payload.body,
            )
            parsed = parse_document(fetched, record.url)
            texts[record.url] = (parsed.title, parsed.text)
    return texts


def archive_crawl(bundle_dir: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    """Archive-crawl the bundle into ``settings``' (fresh) store with `nimbus archive crawl`."""
    monkeypatch.setenv("NIMBUS_DATABASE_URL", settings.database_url)
    monkeypatch.setenv("NIMBUS_BLOB_URL", settings.blob_url)
    assert main(["archive", "crawl", str(bundle_dir)]) == 0


@pytest.fixture
def crawled_and_exported(settings: Settings, tmp_path: Path) -> tuple[Texts, Path]:
    """A small site crawled into ``settings``' store and exported to a bundle folder: the stored
    texts and the bundle."""
    server = SiteServer(small_site()).start()
    try:
        run_crawl(settings, [server.origin + "/"], max_pages=20, progress=False)
    finally:
        server.stop()
    bundle_dir = tmp_path / "export"
    bundle_dir.mkdir()
    (bundle_dir / "bundle.toml").write_text('type = "warc"\ndescription = "the rivers crawl, exported"\n')
    report = export_store(settings, str(bundle_dir / "crawl.warc.gz"), progress=False)
    assert report.failed == 0 and report.documents == 4
    return stored_texts(settings), bundle_dir


def test_the_export_reads_back_to_the_stored_urls_and_texts(crawled_and_exported) -> None:
    stored, bundle_dir = crawled_and_exported
    assert len(stored) == 4 and any("Köln" in text for _title, text in stored.values())
    assert read_back(bundle_dir) == stored


def test_the_export_archive_crawls_into_a_fresh_store(crawled_and_exported, tmp_path, monkeypatch) -> None:
    stored, bundle_dir = crawled_and_exported
    fresh = Settings.of(
        database_url=f"sqlite:///{tmp_path / 'fresh.db'}",
        blob_url=f"file://{tmp_path / 'fresh-blobs'}",
        mr_runner="inline",
        var_dir=tmp_path / "fresh-var",
    )
    archive_crawl(bundle_dir, fresh, monkeypatch)
    assert stored_texts(fresh) == stored
