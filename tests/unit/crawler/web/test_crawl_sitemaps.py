"""Sitemap parsing without a network: XML, indexes, text, gzip, garbage and bombs."""

from __future__ import annotations

import gzip

from services.crawler.web.sitemaps import gunzip_capped, parse_sitemap

NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'


def test_urlset_and_index_locs_are_read_with_whitespace_trimmed() -> None:
    urlset = parse_sitemap(
        f"""<?xml version="1.0" encoding="UTF-8"?>
<urlset {NS}><url><loc>
  http://a.test/x </loc><lastmod>2024-01-01</lastmod></url><url><loc>http://a.test/y?b=1&amp;a=2</loc></url>
<url><loc>  </loc></url></urlset>""".encode()
    )
    assert (urlset.kind, urlset.locs, urlset.broken) == (
        "urlset",
        ["http://a.test/x", "http://a.test/y?b=1&a=2"],
        False,
    )
    index = parse_sitemap(f"<sitemapindex {NS}><sitemap><loc>/s1.xml</loc></sitemap></sitemapindex>".encode())
    assert (index.kind, index.locs) == ("index", ["/s1.xml"])


def test_broken_xml_keeps_what_came_before_the_break() -> None:
    cut = parse_sitemap(f"<urlset {NS}><url><loc>http://a.test/1</loc></url><url><loc>http://a.te".encode())
    assert (cut.kind, cut.locs, cut.broken) == ("urlset", ["http://a.test/1"], True)


def test_text_sitemaps_and_garbage() -> None:
    text = parse_sitemap(b"\xef\xbb\xbfhttp://a.test/1\r\n\r\nhttps://a.test/2\n")
    assert (text.kind, text.locs, text.broken) == ("text", ["http://a.test/1", "https://a.test/2"], False)
    for junk in (
        b"",
        b"\x00\x01\xff\xfe" * 50,
        b"<html><body>Not found</body></html>",
        b"<rss><channel><link>http://a.test/</link></channel></rss>",
        b"hello world",
    ):
        parsed = parse_sitemap(junk)
        assert (parsed.kind, parsed.locs, parsed.broken) == ("garbage", [], True), junk[:20]


def test_entity_declarations_are_refused() -> None:
    bomb = (
        b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
        b'<!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;">]><urlset><url><loc>&lol2;</loc></url></urlset>'
    )
    parsed = parse_sitemap(bomb)
    assert parsed.broken and parsed.locs == []


def test_gunzip_is_capped_and_reports_corruption() -> None:
    data = gzip.compress(b"u" * 100_000)
    assert gunzip_capped(data, 200_000) == (b"u" * 100_000, True)
    capped, complete = gunzip_capped(data, 1000)
    assert (len(capped), complete) == (1000, False)
    assert gunzip_capped(data[:-40], 200_000)[1] is False
    assert gunzip_capped(b"\x1f\x8b" + b"\xff" * 50, 1000) == (b"", False)
