"""The sample web rebuilt from the sample data (data/): pages, links, redirects, robots."""

from __future__ import annotations

from pathlib import Path

from services.demo import sampleweb
from services.demo.sampleweb import IANA_WARC, PDFS, WIKI_DUMP, _body_html, iana_site, wiki_site


def test_clean_text_becomes_paragraphs():
    html = _body_html("Intro one\n\nHistory\nText <b>.\n")
    assert html.splitlines() == ["<p>Intro one</p>", "<p>History</p>", "<p>Text &lt;b&gt;.</p>"]


def test_the_demo_reads_no_format_itself():
    """The sample web comes through the archive readers (issue 30): no format reader in demo/."""
    source = "\n".join(p.read_text() for p in Path(sampleweb.__file__).parent.glob("*.py"))
    for reader in ("warcio", "fastwarc", "wikitextparser", "xml.etree", "import bz2", "import gzip"):
        assert reader not in source, reader


def test_iana_pages_come_from_the_warc_with_links_kept_on_loopback(sample_data):
    site = iana_site(sample_data / IANA_WARC, "http://127.0.0.1:9")
    pages = {p for p, r in site.resources.items() if r.content_type.startswith("text/html")}
    assert {"/", "/numbers", "/about", "/time-zones", "/domains"} <= pages
    assert all(b"www.iana.org" not in site.resources[p].body for p in pages)
    assert "Disallow: /_css/" in site.robots_txt
    assert any(r.content_type == "text/css" for r in site.resources.values())  # every type replayed


def test_wiki_articles_link_each_other_and_redirects_answer_301(sample_data):
    site = wiki_site(sample_data / WIKI_DUMP, [sample_data / p for p in PDFS[:1]], limit=20)
    articles = [p for p in site.resources if p.startswith("/wiki/") and site.resources[p].status == 200]
    assert len(articles) == 20
    anarchism = site.resources["/wiki/Anarchism"].body.decode()
    assert "<title>Anarchism - Sample Wiki</title>" in anarchism
    assert "{{" not in anarchism and "<ref" not in anarchism and "Category:" not in anarchism
    assert sum('<li><a href="/wiki/' in site.resources[p].body.decode() for p in articles) >= 3
    redirects = [r for r in site.resources.values() if r.status == 301]
    assert redirects and all(r.location.startswith("/wiki/") for r in redirects)
    assert site.resources["/papers/pypdf-example.pdf"].content_type == "application/pdf"
    assert b"/wiki/Anarchism" in site.resources["/"].body
