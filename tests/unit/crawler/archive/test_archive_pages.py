"""An archive record becomes the result a visit would give (crawler/archive/pages.py)."""

from __future__ import annotations

from services.archives.records import ArchiveRecord, Document, Payload, Skip, damaged, skipped
from services.crawler.archive.pages import ArchiveOptions, record_key, to_result
from services.crawler.frontier.archive_batches import Reading
from services.storage.formats.blocks import ContentType

HTML = (
    b"<html lang=en><head><title>Numbers</title></head><body><p>The registry of Internet numbers, "
    b"addresses and autonomous systems kept by the authority.</p>"
    b"<a href='/about'>About us</a> <a href='http://other.example/x'>elsewhere</a></body></html>"
)
WHEN = 1_390_766_811.0


def _page(
    status: int = 200, body: bytes = HTML, headers: list[tuple[str, str]] | None = None
) -> ArchiveRecord:
    payload = Payload(status, headers or [("Content-Type", "text/html")], "text/html", body)
    return ArchiveRecord("http://www.iana.org/numbers", 100, WHEN, payload=payload)


def test_a_captured_page_is_parsed_under_its_original_url_and_capture_time() -> None:
    reading = Reading()
    result = to_result(_page(), 3, ArchiveOptions(batch_id=7), reading)
    assert result is not None and result.doc is not None and result.archived
    assert result.url_id == record_key(7, 3) and result.url == "http://www.iana.org/numbers"
    assert result.doc.url == "http://www.iana.org/numbers" and result.doc.fetched_at == WHEN
    assert result.doc.parsed.title == "Numbers" and result.doc.parsed.content_type == ContentType.HTML
    assert {link.url for link in result.doc.parsed.links} == {
        "http://www.iana.org/about",
        "http://other.example/x",
    }
    assert result.links == []  # into the link graph (the record), not the frontier, unless asked
    assert reading.kinds == {"page": 1} and reading.records == 1 and reading.bytes == len(HTML)


def test_out_links_go_to_the_frontier_only_when_asked_and_in_scope() -> None:
    options = ArchiveOptions(batch_id=1, seed_frontier=True, scope=frozenset({"www.iana.org"}))
    result = to_result(_page(), 0, options, Reading())
    assert result is not None and [link.url for link in result.links] == ["http://www.iana.org/about"]


def test_a_permanent_redirect_is_an_alias_and_an_error_status_is_skipped_by_class() -> None:
    reading = Reading()
    for status in (301, 308):
        moved = to_result(
            _page(status, b"", [("Location", "/numbers/")]), 0, ArchiveOptions(batch_id=1), reading
        )
        assert moved is not None and moved.doc is None and moved.alias_of == "http://www.iana.org/numbers/"
    assert to_result(_page(404), 1, ArchiveOptions(batch_id=1), reading) is None
    assert reading.kinds == {"alias": 2, "skipped.status_4xx": 1}


def test_a_temporary_redirect_names_no_alias_as_in_the_web_crawl() -> None:
    """RFC 9110 15.4: after a 302, 303 or 307 the URL keeps its own name (the web crawl's
    outcome rule); an archive's capture of one is counted, not made an alias."""
    reading = Reading()
    for status in (302, 303, 307):
        found = to_result(
            _page(status, b"", [("Location", "/numbers/")]), 0, ArchiveOptions(batch_id=1), reading
        )
        assert found is None
    assert reading.kinds == {"skipped.temporary_redirect": 3}


def test_the_bundles_language_is_the_documents_and_the_filter_applies_only_when_asked() -> None:
    doc = Document(
        "Anarchie", "Ein Text über die Anarchie " * 5, [("https://de.wikipedia.org/wiki/Staat", "Staat")]
    )
    record = ArchiveRecord("https://de.wikipedia.org/wiki/Anarchie", 0, WHEN, document=doc)
    kept = to_result(
        record, 0, ArchiveOptions(batch_id=1, language="de", languages=frozenset({"en"})), Reading()
    )
    assert kept is not None and kept.doc is not None
    assert kept.doc.parsed.lang == "de" and kept.doc.parsed.content_type == ContentType.TEXT
    assert kept.doc.body.startswith(b"Anarchie\n\n") and kept.doc.parsed.links[0].anchor == "Staat"
    reading = Reading()
    filtered = ArchiveOptions(batch_id=1, language="de", filter_language=True, languages=frozenset({"en"}))
    assert to_result(record, 0, filtered, reading) is None and reading.kinds == {"skipped.language": 1}


def test_damage_is_counted_by_kind_with_its_file_and_offset() -> None:
    reading = Reading()
    broken = damaged("bundle/a.warc.gz", 4096, WHEN, Skip.TRUNCATED, "gzip member cut short")
    assert to_result(broken, 0, ArchiveOptions(batch_id=1), reading) is None
    assert (
        to_result(
            skipped("http://x.test/", 10, WHEN, Skip.RECORD_TYPE, "request"),
            1,
            ArchiveOptions(batch_id=1),
            reading,
        )
        is None
    )
    assert reading.kinds == {"error.truncated": 1, "skipped.record_type": 1} and reading.errors == 1
    assert reading.damage == ["bundle/a.warc.gz at byte 4,096: gzip member cut short"]


def test_an_alias_record_names_its_target() -> None:
    record = ArchiveRecord(
        "https://en.wikipedia.org/wiki/AccessibleComputing", 0, WHEN,
        redirect_to="https://en.wikipedia.org/wiki/Computer_accessibility",
    )  # fmt: skip
    result = to_result(record, 0, ArchiveOptions(batch_id=1), Reading())
    assert result is not None and result.alias_of.endswith("/Computer_accessibility") and result.doc is None
