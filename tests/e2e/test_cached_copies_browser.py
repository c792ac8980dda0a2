"""Cached copies and page info as a person sees them in Chromium (issue 32): a PDF's copy
is readable (no broken-document icon), in paragraphs with whole words; an HTML copy fills
the window with the query's words highlighted and the query still in the search box; page
info fits a 360-pixel screen; the snippet comes from the content, not "External links"."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.demo.sampleweb import Resource, Site
from tests.e2e.crawled_site import crawled_and_served

pytestmark = pytest.mark.browser

SAMPLE_DATA = Path(__file__).resolve().parents[2] / "data"
PARAGRAPH = (
    "<p>Lutz lies on the Zubrowka river between wooded hills, and its old town keeps a market square.</p>"
)
ARTICLE = (
    "<!doctype html><html lang=en><head><title>Lutz, capital of Zubrowka</title>"
    "<style>body{max-width:30rem}</style></head><body><h1>Lutz</h1>"
    "<p>Lutz (; , ) is the capital of the republic of Zubrowka and its largest town.</p>"
    + PARAGRAPH * 40
    # As the demo's wiki pages have it: the section's lines are paragraphs, not a link list
    # (which the extractor would drop as furniture already).
    + "<p>External links</p>"
    + "".join(f"<p>Lutz Zubrowka tourism page {i}</p>" for i in range(8))
    + "</body></html>"
)
# No break opportunity in the address: page info must still fit a phone.
ARTICLE_PATH = "/lutzofzubrowka_" + "x" * 80


@pytest.fixture(scope="module")
def site_url(tmp_path_factory):
    site = Site("cached")
    site.resources["/"] = Resource(
        "text/html; charset=utf-8",
        f'<html><body><a href="{ARTICLE_PATH}">Lutz_{"y" * 60}</a> '
        '<a href="/papers/tracemonkey.pdf">paper</a></body></html>'.encode(),
    )
    site.resources[ARTICLE_PATH] = Resource("text/html; charset=utf-8", ARTICLE.encode())
    site.resources["/papers/tracemonkey.pdf"] = Resource(
        "application/pdf", (SAMPLE_DATA / "pdf" / "tracemonkey.pdf").read_bytes()
    )
    with crawled_and_served(site, tmp_path_factory.mktemp("cached"), max_pages=20) as url:
        yield url


@pytest.fixture
def context(chromium):
    context = chromium.new_context(viewport={"width": 1280, "height": 800})
    yield context
    context.close()


def _hit(page, title: str):
    return page.locator("li.hit").filter(has=page.locator("h2 a", has_text=title)).first


def test_a_pdfs_cached_copy_is_its_text_in_paragraphs_with_the_original_to_download(
    site_url, context, artifacts
):
    page = context.new_page()
    page.goto(site_url + "/?q=trace+compile")
    _hit(page, "Trace-based").locator("a.cached").click()
    page.wait_for_load_state()
    assert page.locator("iframe").count() == 0  # no frame for the PDF viewer to break in
    paragraphs = page.locator("article.extracted-text p")
    assert paragraphs.count() > 150
    tallest = max(paragraphs.evaluate_all("ps => ps.map(p => p.getBoundingClientRect().height)"))
    assert tallest < 1500, tallest  # was one 24,000-pixel paragraph
    text = page.locator("article.extracted-text").inner_text()
    assert "\ufffe" not in text and "com-pile" not in text and " compile " in text
    assert page.locator("article.extracted-text mark").count() > 10  # the query's words
    assert page.input_value("input[name=q]") == "trace compile"
    page.screenshot(path=str(artifacts / "cached-pdf-text.png"))
    href = page.locator("a.download").get_attribute("href")
    response = context.request.get(site_url + href)
    assert response.status == 200
    assert response.headers["content-type"] == "application/pdf"
    assert response.headers["content-disposition"] == 'attachment; filename="tracemonkey.pdf"'
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.body()[:5] == b"%PDF-"


def test_an_html_cached_copy_fills_the_window_with_the_query_highlighted(site_url, context, artifacts):
    page = context.new_page()
    page.goto(site_url + "/?q=zubrowka+river")
    _hit(page, "Lutz").locator("a.cached").click()
    page.wait_for_load_state()
    assert page.input_value("input[name=q]") == "zubrowka river"  # the search box keeps the query
    frame = page.locator("iframe.cached-frame")
    box = frame.bounding_box()
    assert box is not None and box["width"] >= 1280 - 2 and box["y"] + box["height"] >= 800 - 2, box
    # One scroll bar, the copy's, at the window's edge: our page itself does not scroll.
    assert page.evaluate("document.documentElement.scrollHeight <= window.innerHeight + 1")
    assert frame.get_attribute("sandbox") == ""  # still isolated: no scripts, opaque origin
    marks = page.frame_locator("iframe.cached-frame").locator("mark")
    marks.first.wait_for()
    assert marks.count() >= 40
    assert {m.lower() for m in marks.all_inner_texts()} == {"zubrowka", "river"}
    page.screenshot(path=str(artifacts / "cached-html-full-width.png"))


def test_page_info_fits_a_phone(site_url, chromium, artifacts):
    context = chromium.new_context(viewport={"width": 360, "height": 740})
    try:
        page = context.new_page()
        page.goto(site_url + "/?q=zubrowka+river+tourism")
        _hit(page, "Lutz").locator("a.page-info").click()
        page.wait_for_load_state()
        assert page.locator("table.scores").count() == 1
        page.screenshot(path=str(artifacts / "page-info-360.png"), full_page=True)
        assert page.evaluate("document.documentElement.scrollWidth") <= 360
    finally:
        context.close()


def test_the_snippet_comes_from_the_content_not_external_links(site_url, context):
    page = context.new_page()
    page.goto(site_url + "/?q=lutz+zubrowka")
    snippet = _hit(page, "Lutz").locator("p.snippet").inner_text()
    assert "tourism page" not in snippet and "capital of the republic" in snippet, snippet
    assert "(" not in snippet  # "Lutz (; , ) is" lost its leftovers
