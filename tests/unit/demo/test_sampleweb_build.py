"""The sample web rebuilt from the sample data (data/): pages, links, redirects, robots."""

from __future__ import annotations

from services.demo.sampleweb import IANA_WARC, PDFS, WIKI_DUMP, _body_html, iana_site, wiki_site


def test_wikitext_structure_becomes_html():
    html = _body_html("Intro one\nintro two\n\n==History==\nText <b>.\n* item a\n;Term\n===Sub===\nMore")
    assert html.splitlines() == [
        "<p>Intro one intro two</p>",
        "<h2>History</h2>",
        "<p>Text &lt;b&gt;.</p>",
        "<ul>",
        "<li>item a</li>",
        "<li>Term</li>",
        "</ul>",
        "<h3>Sub</h3>",
        "<p>More</p>",
    ]


def test_iana_pages_come_from_the_warc_with_links_kept_on_loopback(sample_data):
    site = iana_site(sample_data / IANA_WARC, "http://127.0.0.1:9")
    pages = {p for p, r in site.resources.items() if r.content_type.startswith("text/html")}
    assert {"/", "/numbers", "/about", "/time-zones", "/domains"} <= pages
    assert all(b"www.iana.org" not in site.resources[p].body for p in pages)
    assert "Disallow: /_css/" in site.robots_txt


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
