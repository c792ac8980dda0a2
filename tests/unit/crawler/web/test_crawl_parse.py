"""Fetched bytes to record fields, without any network."""

from __future__ import annotations

import html
from pathlib import Path

import pytest

from services.crawler.web.fetch_result import FetchResult
from services.crawler.web.parse import (
    INDEXABLE,
    ParseError,
    accept_content_type,
    classify,
    normalize_links,
    parse_document,
)
from services.crawler.web.response import redirect_target
from services.storage.formats.blocks import ContentType
from services.storage.formats.records import Link
from services.text.extract.charset import header_charset
from services.text.urls import normalize_url
from tests.hostile_urls import HOSTILE_URLS

PAGE = """<!doctype html><html lang="en"><head><title> The  Garden </title>
<meta name="description" content="A page about a garden."></head><body>
<p>Roses and tulips grow in the garden behind the old stone house.</p>
<a href="flowers.html">Flowers</a>
<a href="/flowers.html#roses">   </a>
<a href="HTTP://Example.COM:80/flowers.html?utm_source=mail">the flowers again</a>
<a href="./trees/../trees/oak.html">Oak</a>
<a href="https://other.example.org/">Other site</a>
<a href="page.html">this very page</a>
<a href="mailto:gardener@example.com">mail</a>
<a href="javascript:void(0)">js</a>
<a href="ftp://example.com/file">ftp</a>
<a href="/skip" rel="nofollow">skipped</a>
<script>var hidden = "not text";</script>
</body></html>"""


def _fetched(
    body: bytes, content_type: str, url: str = "http://example.com/page.html", final_url: str | None = None
) -> FetchResult:
    return FetchResult(url=url, final_url=final_url or url, status=200, content_type=content_type, body=body)


def test_html_fields_and_normalized_deduplicated_links() -> None:
    doc = parse_document(_fetched(PAGE.encode(), "text/html; charset=utf-8"), "http://example.com/page.html")
    assert doc.content_type == ContentType.HTML
    assert doc.title == "The Garden"
    assert doc.description == "A page about a garden."
    assert "Roses and tulips" in doc.text and "not text" not in doc.text
    assert doc.lang == "en"
    assert [(link.url, link.anchor) for link in doc.links] == [
        ("http://example.com/flowers.html", "Flowers"),
        ("http://example.com/trees/oak.html", "Oak"),
        ("https://other.example.org/", "Other site"),
    ]


def test_empty_anchor_is_replaced_by_a_later_one() -> None:
    links, bad = normalize_links(
        [("http://a.example/x", ""), ("http://A.example/x#frag", "Label"), ("http://a.example/x", "Later")],
        "http://a.example/",
    )
    assert bad == 0
    assert [(link.url, link.anchor) for link in links] == [("http://a.example/x", "Label")]


def test_links_resolve_against_the_final_url_after_a_redirect() -> None:
    body = b'<html><body><a href="next.html">Next</a></body></html>'
    fetched = _fetched(
        body, "text/html", url="http://example.com/old", final_url="http://example.com/new/index.html"
    )
    doc = parse_document(fetched, normalize_url(fetched.final_url))
    assert [link.url for link in doc.links] == ["http://example.com/new/next.html"]


def test_charset_from_the_header_decodes_the_body() -> None:
    body = "<html><head><title>Café crème</title></head><body>x</body></html>".encode("latin-1")
    doc = parse_document(_fetched(body, "text/html; charset=ISO-8859-1"), "http://example.com/")
    assert doc.title == "Café crème"
    assert header_charset('text/html; charset="utf-8"') == "utf-8"
    assert header_charset("text/html") is None


def test_noindex_is_reported_and_nofollow_drops_links() -> None:
    body = (
        b'<html><head><meta name="robots" content="noindex, nofollow"></head>'
        b'<body><a href="/x">x</a></body></html>'
    )
    doc = parse_document(_fetched(body, "text/html"), "http://example.com/page.html")
    assert doc.noindex and doc.links == []


def test_pdf_text_and_type(sample_data: Path) -> None:
    body = (sample_data / "pdf" / "pypdf-example.pdf").read_bytes()
    doc = parse_document(
        _fetched(body, "application/pdf", url="http://example.com/zen.pdf"), "http://example.com/zen.pdf"
    )
    assert doc.content_type == ContentType.PDF
    assert "Beautiful is better than ugly" in doc.text
    assert doc.lang == "en" and doc.links == []


def test_pdf_sent_as_octet_stream_is_sniffed(sample_data: Path) -> None:
    body = (sample_data / "pdf" / "pypdf-example.pdf").read_bytes()
    assert classify("application/octet-stream", body) == ContentType.PDF
    assert classify("", b"<!DOCTYPE html><html></html>") == ContentType.HTML
    assert classify("image/png", b"\x89PNG") == ContentType.OTHER


def test_broken_pdf_and_other_types_raise_parse_error() -> None:
    with pytest.raises(ParseError, match="broken.pdf") as broken:
        parse_document(_fetched(b"%PDF-1.4 garbage", "application/pdf"), "http://example.com/broken.pdf")
    assert broken.value.kind == "pdf"
    with pytest.raises(ParseError, match="neither HTML nor PDF") as other:
        parse_document(_fetched(b"GIF89a", "image/gif"), "http://example.com/a.gif")
    assert other.value.kind == "type"


def test_empty_body_is_a_parse_error_not_an_empty_document() -> None:
    for body in (b"", b"  \r\n\t "):
        with pytest.raises(ParseError, match="empty body") as empty:
            parse_document(_fetched(body, "text/html"), "http://example.com/empty")
        assert empty.value.kind == "empty"


def test_mislabelled_types_are_sniffed_from_the_bytes(sample_data: Path) -> None:
    pdf = (sample_data / "pdf" / "pypdf-example.pdf").read_bytes()
    assert classify("text/html; charset=utf-8", pdf) == ContentType.PDF  # magic bytes win
    error_page = b"\xef\xbb\xbf  <!DOCTYPE html><html><body>Not found</body></html>"
    assert classify("application/pdf", error_page) == ContentType.HTML
    assert classify("", b"<html><p>no type at all") == ContentType.HTML
    assert classify("text/plain", b"<html><p>labelled text") not in INDEXABLE  # trusted, as browsers do
    doc = parse_document(_fetched(pdf, "text/html"), "http://example.com/zen")
    assert doc.content_type == ContentType.PDF and "Beautiful is better than ugly" in doc.text


def test_charset_used_is_recorded() -> None:
    body = "<html><body><p>Привет, как дела? Это страница на русском.</p></body></html>".encode("cp1251")
    doc = parse_document(_fetched(body, "text/html; charset=windows-1251"), "http://example.com/ru")
    assert doc.charset == "cp1251" and "Привет" in doc.text


def test_accept_content_type_only_downloads_what_can_be_indexed() -> None:
    assert accept_content_type("text/html; charset=utf-8")
    assert accept_content_type("application/xhtml+xml")
    assert accept_content_type("application/pdf")
    assert accept_content_type("")  # sniffed after reading
    assert not accept_content_type("image/jpeg")
    assert not accept_content_type("text/css")


def test_a_redirect_location_is_read_as_browsers_read_it() -> None:
    assert redirect_target("http://old.test/a/b.htm", "\\new\\b.htm") == ("http://old.test/new/b.htm", "")
    assert redirect_target("http://old.test/a/b.htm", " c.htm\r\n") == ("http://old.test/a/c.htm", "")
    target, why = redirect_target("http://old.test/a/b.htm", "  ")
    assert target is None and "no Location" in why
    target, why = redirect_target("http://old.test/a/b.htm", "ftp://files.test/x")
    assert target is None and "not crawlable" in why


@pytest.mark.parametrize(
    "header",
    ["application/x-pdf", "application/acrobat", "text/pdf", "text/x-pdf", "Application/PDF; name=a.pdf"],
)
def test_old_servers_pdf_types_are_pdf(header: str, sample_data: Path) -> None:
    body = (sample_data / "pdf" / "pypdf-example.pdf").read_bytes()
    assert accept_content_type(header)
    assert classify(header, body) == ContentType.PDF
    doc = parse_document(_fetched(body, header, url="http://old.test/zen.pdf"), "http://old.test/zen.pdf")
    assert "Beautiful is better than ugly" in doc.text


@pytest.mark.parametrize(
    "header",
    ["binary/octet-stream", "application/x-download", "application/force-download", "application/unknown"],
)
def test_download_types_are_fetched_and_sniffed(header: str, sample_data: Path) -> None:
    pdf = (sample_data / "pdf" / "pypdf-example.pdf").read_bytes()
    assert accept_content_type(header)
    assert classify(header, pdf) == ContentType.PDF
    assert classify(header, b"<!DOCTYPE html><html><body>x</body></html>") == ContentType.HTML
    assert classify(header, b"PK\x03\x04 a zip file") == ContentType.OTHER


def test_types_that_say_what_they_are_and_are_not_indexed_are_not_fetched() -> None:
    for header in ("image/png", "application/zip", "video/mp4", "application/msword"):
        assert not accept_content_type(header)
    assert ContentType.from_mime("application/vnd.wap.xhtml+xml") == ContentType.HTML


def test_a_page_keeps_its_first_max_links_distinct_links() -> None:
    from services.crawler.web.parse import MAX_LINKS

    anchors = "".join(
        f'<a href="/item/{i}">item {i}</a><a href="/item/{i}">again</a>' for i in range(MAX_LINKS + 250)
    )
    body = f"<html><body><p>A generated listing.</p>{anchors}</body></html>".encode()
    doc = parse_document(_fetched(body, "text/html", url="http://farm.test/list"), "http://farm.test/list")
    assert len(doc.links) == MAX_LINKS and doc.links_dropped == 250
    assert doc.links[0] == Link("http://farm.test/item/0", "item 0")  # document order, first anchor
    assert doc.links[-1].url == f"http://farm.test/item/{MAX_LINKS - 1}"
    two = b'<a href="/a">a</a> <a href="/b">b</a>'
    small = parse_document(_fetched(two, "text/html", url="http://x.test/"), "http://x.test/")
    assert small.links_dropped == 0 and len(small.links) == 2


def test_links_with_hostile_urls_are_skipped_and_counted_never_an_error() -> None:
    """A page's link to http://[::1/ raised ValueError out of the parser (a crawl's 500);
    every URL of the hostile list is now left out of the links and counted."""
    absolute = [url for url, _ in HOSTILE_URLS if url.startswith(("http://", "https://"))]
    anchors = "".join(f'<a href="{html.escape(url)}">bad {i}</a>' for i, url in enumerate(absolute))
    body = f'<html><body>{anchors}<a href="http://good.example/">good</a></body></html>'.encode()
    fetched = _fetched(body, "text/html", url="http://example.com/", final_url="http://example.com/")
    doc = parse_document(fetched, "http://example.com/")
    assert [link.url for link in doc.links] == ["http://good.example/"]
    assert doc.links_bad == len(absolute)
