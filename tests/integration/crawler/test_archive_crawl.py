"""`nimbus archive crawl` on the sample data: web archives (WARC, chunked WARC, ARC) and a
MediaWiki dump stored as the crawler stores fetched pages; a run again changes nothing; a
damaged file costs only its damaged records, reported with file and offset."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from sqlalchemy import func, select

from services.cli import main
from services.config import Settings
from services.storage.sql.engines import make_engine, session_factory
from services.storage.sql.models import ArchiveBatch, FetchBatch
from tests.integration.crawler.archive_bundles import WIKI, aliases, bundle, documents, records

WARC = 'type = "warc"\ndescription = "web"\nbatch_size = 40\n'


@pytest.fixture
def env(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Settings:
    monkeypatch.setenv("NIMBUS_DATABASE_URL", settings.database_url)
    monkeypatch.setenv("NIMBUS_BLOB_URL", settings.blob_url)
    monkeypatch.setenv("NIMBUS_VAR_DIR", str(settings.var_dir))
    return settings


def _ledger(settings: Settings) -> tuple[int, int, set[str]]:
    engine = make_engine(settings.database_url)
    try:
        with session_factory(engine)() as s:
            batches = s.scalar(select(func.count()).select_from(FetchBatch)) or 0
            archive = s.scalar(select(func.count()).select_from(ArchiveBatch)) or 0
            return batches, archive, set(s.scalars(select(FetchBatch.state)))
    finally:
        engine.dispose()


def _blobs(settings: Settings) -> list[str]:
    root = Path(settings.blob_url.removeprefix("file://"))
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def test_the_iana_warc_gives_its_html_pages_under_their_original_urls_with_links(
    env: Settings, tmp_path: Path, sample_data: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    iana = bundle(tmp_path / "iana", WARC, {"iana.warc.gz": sample_data / "warc/iana.warc.gz"})
    assert main(["archive", "crawl", str(iana), "--quiet"]) == 0
    said = capsys.readouterr().err
    assert "finished, 9/9 batches, 343 records" in said and "errors: none" in said
    docs = documents(env.database_url)
    assert len(docs) == 16  # the 16 HTML pages answered 200 (data/README.md)
    assert {"http://www.iana.org/", "http://www.iana.org/domains", "http://www.iana.org/numbers"} <= set(docs)
    assert (
        docs["http://www.iana.org/"][1] == "Internet Assigned Numbers Authority"
        and docs["http://www.iana.org/"][2] == "en"
    )
    home = records(env.database_url, env.blob_url)["http://www.iana.org/"]
    assert home.fetched_at > 1_390_000_000  # the capture's time, not the crawl's
    assert {"http://www.iana.org/domains", "http://www.iana.org/numbers"} <= {link.url for link in home.links}
    assert "http://www.iana.org/dnssec" not in aliases(env.database_url)  # a captured 302: temporary

    # Again: the bundle is known and finished; nothing is read, leased or written.
    before = (docs, _ledger(env), _blobs(env))
    assert main(["archive", "crawl", str(iana), "--quiet"]) == 0
    assert "already registered" in capsys.readouterr().err
    assert (documents(env.database_url), _ledger(env), _blobs(env)) == before
    assert main(["crawl", "status"]) == 0
    assert f"archive #1 warc {iana}: finished, 9/9 batches" in capsys.readouterr().out


def test_a_chunked_warc_and_an_arc_mixed_in_one_bundle(
    env: Settings, tmp_path: Path, sample_data: Path
) -> None:
    mixed = bundle(
        tmp_path / "mixed",
        WARC,
        {
            "chunked.warc": sample_data / "warc/example-iana.org-chunked.warc",
            "example.arc.gz": sample_data / "warc/example.arc.gz",
        },
    )
    assert main(["archive", "crawl", str(mixed), "--quiet"]) == 0
    docs = documents(env.database_url)
    assert set(docs) == {"http://www.iana.org/", "http://example.com/"}
    texts = records(env.database_url, env.blob_url)
    assert "Example Domain" in texts["http://example.com/"].title
    assert "Internet Assigned Numbers Authority" in texts["http://www.iana.org/"].title  # de-chunked


def test_a_mediawiki_dump_gives_articles_without_markup_and_redirects_as_aliases(
    env: Settings, tmp_path: Path, sample_data: Path
) -> None:
    wiki = bundle(
        tmp_path / "enwiki",
        'type = "mediawiki"\ndescription = "enwiki sample"\nbatch_size = 30\n',
        {"enwiki.xml.bz2": sample_data / WIKI},
    )
    assert main(["archive", "crawl", str(wiki), "--quiet"]) == 0
    docs = documents(env.database_url)
    assert len(docs) == 106  # 206 pages: 100 redirects, 1 outside the articles' namespace
    assert {lang for _id, _title, lang in docs.values()} == {"en"}  # <siteinfo>'s language
    found = aliases(env.database_url)
    assert (
        found["https://en.wikipedia.org/wiki/AccessibleComputing"]
        == "https://en.wikipedia.org/wiki/Computer_accessibility"
    )
    assert not set(found) & set(docs)  # an alias is not a page
    stored = records(env.database_url, env.blob_url)
    anarchism = stored["https://en.wikipedia.org/wiki/Anarchism"]
    assert "anarchism" in anarchism.text.lower() and len(anarchism.links) > 50
    for record in stored.values():
        assert not any(mark in record.text for mark in ("[[", "]]", "{{", "}}", "<ref", "{|")), record.url
    linked = {link.url for r in stored.values() for link in r.links}
    assert len(linked & set(docs)) > 20  # the link graph joins the articles (PageRank sees it)


def test_a_damaged_file_costs_only_its_damaged_records_reported_with_file_and_offset(
    env: Settings, tmp_path: Path, sample_data: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    whole = (sample_data / "warc/iana.warc.gz").read_bytes()
    cut = len(whole) // 2
    damaged = bundle(
        tmp_path / "damaged",
        WARC,
        {"a-example.arc.gz": sample_data / "warc/example.arc.gz", "b-iana-cut.warc.gz": whole[:cut]},
    )
    assert main(["archive", "crawl", str(damaged), "--quiet"]) == 0
    said = capsys.readouterr().err
    docs = documents(env.database_url)
    assert "http://example.com/" in docs and "http://www.iana.org/" in docs  # before the damage
    assert "errors: truncated 1" in said
    damage = [line for line in said.splitlines() if line.startswith("  damaged: ")]
    assert len(damage) == 1 and "b-iana-cut.warc.gz at byte " in damage[0]
    offset = int(damage[0].split(" at byte ")[1].split(":")[0].replace(",", ""))
    assert 0 < offset < cut
    # Nothing already stored is lost: the whole file, as a second bundle, adds the rest.
    whole_bundle = bundle(tmp_path / "whole", WARC, {"iana.warc.gz": sample_data / "warc/iana.warc.gz"})
    assert main(["archive", "crawl", str(whole_bundle), "--quiet"]) == 0
    after = documents(env.database_url)
    assert set(docs) <= set(after) and len(after) == 17  # 16 iana pages and example.com
    assert gzip.decompress(whole)  # the sample itself is sound


def test_seed_frontier_puts_the_archives_out_links_in_the_web_frontier(
    env: Settings, tmp_path: Path, sample_data: Path
) -> None:
    from services.storage.sql.models import FrontierEntry

    iana = bundle(tmp_path / "iana", WARC, {"iana.warc.gz": sample_data / "warc/iana.warc.gz"})
    assert main(["archive", "crawl", str(iana), "--quiet", "--seed-frontier"]) == 0
    engine = make_engine(env.database_url)
    with session_factory(engine)() as s:
        rows = {r.url: r for r in s.scalars(select(FrontierEntry))}
    engine.dispose()
    assert "http://www.iana.org/domains" in rows  # linked from the archived home page
    assert {r.state for r in rows.values()} == {"new"} and {r.depth for r in rows.values()} == {1}
