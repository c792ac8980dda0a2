"""What a searcher sees of the results list in a real browser (issue 32, "Results"): one
ranked list however it is paged, what the stats line says about the answer, and what a long
or repetitive query was cut to ("Junk queries")."""

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


def _search_from_the_box(page, server_url: str, q: str) -> None:
    """Type ``q`` into the search box as a person pastes it, and submit; the box's completions
    must answer it (never a refusal)."""
    page.goto(server_url + "/")
    with page.expect_response(lambda r: "/api/suggest" in r.url) as suggested:
        page.locator("#q").fill(q)
    assert suggested.value.status == 200
    page.locator("#q").press("Enter")
    page.wait_for_load_state()


def test_a_forty_word_query_says_which_words_were_ignored(browser_page, server_url, artifacts):
    sentence = "the history of anarchism and the philosophy of the time zone database"
    forty = (sentence.split(" ") * 4)[:40]
    _search_from_the_box(browser_page, server_url, " ".join(forty))
    notice = browser_page.locator("div.query-cut")
    assert notice.is_visible()
    assert notice.inner_text() == (
        f"“{forty[32]}” (and any subsequent words) was ignored because we limit queries to 32 words."
    )
    assert browser_page.locator("#q").input_value() == " ".join(forty[:32])  # the box: what was searched
    assert browser_page.locator("li.hit").count() > 0
    browser_page.screenshot(path=str(artifacts / "query-cut-forty-words.png"), full_page=True)


def test_ab_four_hundred_times_is_searched_as_ab_and_says_so(browser_page, server_url, artifacts):
    _search_from_the_box(browser_page, server_url, " ".join(["ab"] * 400))
    notice = browser_page.locator("div.query-cut")
    assert notice.is_visible()
    assert notice.inner_text() == "“ab” was repeated 400 times in a row: it was searched once."
    main = browser_page.locator("main").inner_text()
    assert "ab ab" not in main and "ad ad" not in main  # searched and corrected as one word
    # The box holds what was searched: "ab", or its correction with "ab" one click away.
    showing = browser_page.locator("p.showing-for a.as-typed")
    if showing.count():
        assert showing.inner_text() == "ab" and " " not in browser_page.locator("#q").input_value()
    else:
        assert browser_page.locator("#q").input_value() == "ab"
    browser_page.screenshot(path=str(artifacts / "query-cut-ab-400.png"), full_page=True)


def test_a_thousand_and_one_a_is_one_very_common_word_not_a_query_of_very_common_words(
    browser_page, server_url, artifacts
):
    # The query is "a" typed 1,001 times: searched once, and "a" is on the stop list. The page
    # says both, about the word that was searched, rather than "only very common words" about
    # a query the searcher is not told was changed.
    _search_from_the_box(browser_page, server_url, "a " * 1001)
    assert browser_page.locator("div.query-cut").inner_text() == (
        "“a” was repeated 1,001 times in a row: it was searched once."
    )
    message = browser_page.locator("p.notice").inner_text()
    assert message == "“a” is a very common word, which is not indexed. Add a more specific word."
    assert "only very common words" not in browser_page.locator("main").inner_text()
    assert browser_page.locator("#q").input_value() == "a"
    browser_page.screenshot(path=str(artifacts / "query-cut-a-1001.png"), full_page=True)


def test_a_site_name_brings_the_sites_home_page_first(browser_page, server_url, pipeline):
    """Navigational queries: the IANA site's name, typed into the box, lists its home page
    first, above the inner pages that mention IANA more often (issue 32: it was 14th)."""
    browser_page.goto(server_url + "/")
    browser_page.fill("input[name=q]", "iana")
    browser_page.keyboard.press("Enter")
    browser_page.wait_for_load_state()
    first = browser_page.locator("li.hit h2 a").first.get_attribute("href")
    assert first == pipeline.iana.origin + "/", first
