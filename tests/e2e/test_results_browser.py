"""What a searcher sees of the results list in a real browser (issue 32, "Results"): one
ranked list however it is paged, and what the stats line says about the answer."""

from __future__ import annotations

import re

import httpx
import pytest

from tests.e2e.serving import serving

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def server_url(pipeline):
    from services.search.http.app import create_app

    with serving(create_app(pipeline.settings)) as url:
        yield url


@pytest.fixture
def browser_page(chromium):
    context = chromium.new_context()
    yield context.new_page()
    context.close()


def _count(stats: str) -> str:
    found = re.search(r"((?:about )?[\d,]+) results?", stats)
    assert found, stats
    return found.group(1)


# Queries whose count changed from page to page on the demo (AND giving way to partial
# matches deeper down; a pruned count; the words-as-typed rescore's window).
@pytest.mark.parametrize("q", ["domain names", "time zone database", "the anarchism of history"])
def test_paging_shows_one_list_with_one_count(browser_page, server_url, q):
    browser_page.goto(server_url + "/?" + httpx.QueryParams({"q": q}).__str__())
    counts, urls = set(), []
    while True:
        counts.add(_count(browser_page.locator("p.stats").inner_text()))
        urls += browser_page.locator("li.hit p.url").evaluate_all(
            "ps => ps.map(p => p.closest('li').querySelector('h2 a').getAttribute('href'))"
        )
        following = browser_page.locator("nav.pages a[rel=next]")
        if following.count() == 0:
            break
        following.click()
        browser_page.wait_for_load_state()
    assert len(counts) == 1, counts  # the same total on every page
    assert len(urls) == len(set(urls)), "a document on two pages"
    top = httpx.get(server_url + "/api/search", params={"q": q, "size": 100}).json()
    assert urls[: len(top["hits"])] == [h["url"] for h in top["hits"]]  # page n+1 continues page n
    assert counts.pop() == f"{top['total']:,}" and len(urls) == top["total"]


def test_a_cached_answer_says_so_instead_of_a_zero_time(browser_page, server_url):
    browser_page.goto(server_url + "/?q=anarchism+history")
    first = browser_page.locator("p.stats .took").inner_text()
    assert re.fullmatch(r"in [\d.]+ ms", first), first
    browser_page.goto(server_url + "/?q=anarchism+history")
    again = browser_page.locator("p.stats .took").inner_text()
    assert again == "from cache"


def test_site_with_a_port_is_that_site_only(browser_page, server_url, pipeline):
    iana = pipeline.iana.origin.split("//")[1]  # 127.0.0.1:PORT, beside the wiki's port
    browser_page.goto(server_url + f"/?q=site:{iana}")
    urls = browser_page.locator("li.hit h2 a").evaluate_all("as => as.map(a => a.getAttribute('href'))")
    assert urls and all(u.startswith(pipeline.iana.origin + "/") for u in urls), urls
    # Without a port: every port of the host, both sites.
    both = httpx.get(server_url + "/api/search", params={"q": "site:127.0.0.1", "size": 100}).json()
    origins = {"/".join(h["url"].split("/")[:3]) for h in both["hits"]}
    assert {pipeline.iana.origin, pipeline.wiki.origin} <= origins


def test_the_home_pages_operator_examples_find_something_here(browser_page, server_url):
    browser_page.goto(server_url + "/")
    examples = browser_page.locator("a.example").evaluate_all("as => as.map(a => a.getAttribute('href'))")
    shown = browser_page.locator("a.example").all_inner_texts()
    assert any(e.startswith("site:") for e in shown) and any(e.startswith("intitle:") for e in shown), shown
    for href in examples:
        browser_page.goto(server_url + href)
        assert browser_page.locator("li.hit").count() > 0, href
    # "No results" offers the same examples.
    browser_page.goto(server_url + "/?q=zzqqxxnothing")
    assert browser_page.locator("p.hint a.example").count() == len(examples)


def test_a_misspelling_shows_its_corrections_results_and_keeps_the_typed_query_a_click_away(
    browser_page, server_url
):
    browser_page.goto(server_url + "/?q=philosphy")
    showing = browser_page.locator("p.showing-for")
    assert "Showing results for philosophy" in " ".join(showing.inner_text().split())
    assert browser_page.locator("li.hit").count() > 0
    assert "No results" not in browser_page.locator("main").inner_text()
    showing.locator("a.as-typed").click()
    browser_page.wait_for_url("**nfpr=1**")
    assert "No results for philosphy" in browser_page.locator("p.stats").inner_text()
    assert browser_page.locator(".did-you-mean a").inner_text() == "philosophy"
    api = httpx.get(server_url + "/api/search", params={"q": "philosphy"}).json()
    assert api["query"] == "philosophy" and api["corrected_from"] == "philosphy" and api["total"] > 0
    typed = httpx.get(server_url + "/api/search", params={"q": "philosphy", "nfpr": "true"}).json()
    assert typed["total"] == 0 and typed["suggestion"] == "philosophy" and typed["as_typed"] is True
