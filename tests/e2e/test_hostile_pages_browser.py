"""Hostile pages: script and attribute-injection payloads in titles, bodies, URLs, anchor
text and meta descriptions are crawled, indexed and shown in results, page info and
cached copies, and nothing of theirs runs (Chromium listens for dialogs and errors)."""

from __future__ import annotations

import pytest

from services.demo.sampleweb import Resource, Site
from tests.e2e.crawled_site import crawled_and_served

pytestmark = pytest.mark.browser

ALERT = "alert(document.domain)"
HOSTILE_HOME = f"""<!doctype html><html><head>
<title>Zanzibar "><script>{ALERT}</script><img src=x onerror={ALERT}></title>
<meta name="description" content='Zanzibar "><script>{ALERT}</script><svg onload={ALERT}>'>
</head><body>
<h1 onmouseover="{ALERT}">Zanzibar quokka pages</h1>
<p>Zanzibar quokka text <script>{ALERT}</script> <img src=x onerror="{ALERT}">
<svg><script>{ALERT}</script></svg> &lt;script&gt;{ALERT}&lt;/script&gt;</p>
<a href="/q?x=%22%3E%3Cscript%3E{ALERT}%3C/script%3E">Zanzibar &lt;img src=x onerror={ALERT}&gt; anchor</a>
<a href="javascript:{ALERT}">javascript link</a>
<a href="/quokka">"&gt;&lt;script&gt;{ALERT}&lt;/script&gt;</a>
</body></html>"""
QUOKKA = f"""<html><head>
<title>Quokka '--&gt;&lt;/title&gt;&lt;script&gt;{ALERT}&lt;/script&gt;</title></head>
<body><p>Zanzibar quokka second page <iframe src="javascript:{ALERT}"></iframe>
<object data="javascript:{ALERT}"></object></p></body></html>"""


def hostile_site() -> Site:
    site = Site("hostile")
    html = "text/html; charset=utf-8"
    site.resources["/"] = Resource(html, HOSTILE_HOME.encode())
    site.resources["/quokka"] = Resource(html, QUOKKA.encode())
    site.resources[f"/q?x=%22%3E%3Cscript%3E{ALERT}%3C/script%3E"] = Resource(
        html, f"<html><title>Zanzibar query page</title><p>Zanzibar quokka {ALERT}</p></html>".encode()
    )
    return site


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """The hostile site crawled and indexed, and the search app serving it."""
    with crawled_and_served(hostile_site(), tmp_path_factory.mktemp("hostile"), max_pages=20) as url:
        yield url


@pytest.fixture
def watched_page(chromium):
    context = chromium.new_context()
    page = context.new_page()
    seen: list[str] = []
    page.on("dialog", lambda d: (seen.append(f"dialog: {d.message}"), d.dismiss()))
    page.on("pageerror", lambda e: seen.append(f"error: {e}"))
    page.on("console", lambda m: seen.append(f"console: {m.text}") if m.type == "error" else None)
    yield page, seen
    context.close()


def test_nothing_hostile_runs_in_results_page_info_or_cached_copies(hostile, watched_page, artifacts):
    page, seen = watched_page
    page.goto(hostile + "/?q=zanzibar+quokka")
    hits = page.locator("li.hit")
    assert hits.count() >= 2
    titles = " ".join(hits.locator("h2").all_inner_texts())
    assert "<script>" in titles  # the payload is shown as text, not run
    for link in page.locator("li.hit h2 a").all():
        assert not (link.get_attribute("href") or "").startswith("javascript:")
    page.screenshot(path=str(artifacts / "hostile-results.png"), full_page=True)
    info_links = [a.get_attribute("href") for a in page.locator("li.hit a.page-info").all()]
    cached_links = [a.get_attribute("href") for a in page.locator("li.hit a.cached").all()]
    assert info_links and cached_links
    for href in info_links:
        page.goto(hostile + href)
        page.locator("h1").first.wait_for()
    page.screenshot(path=str(artifacts / "hostile-page-info.png"), full_page=True)
    for href in cached_links:
        page.goto(hostile + href)
        frame = page.frame_locator("iframe.cached-frame")
        frame.locator("body").first.wait_for()
    page.screenshot(path=str(artifacts / "hostile-cached.png"), full_page=True)
    dialogs = [s for s in seen if s.startswith(("dialog", "error"))]
    assert dialogs == [], dialogs
