"""A query that names a site finds its home page first; an informational query is unmoved.

A garden's site on loopback (its host, 127.0.0.1, says nothing about its name): a home page
titled "Welcome to Larkspur Gardens" with little text, and inner pages that say "Larkspur"
again and again, in their titles and text. Without the entry-page factor the inner pages win
"larkspur" on their words; with it, the home page is first, named by the site's name (the
word heads the titles of most of the site's pages) and by most of its own title.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from services.config import Settings
from services.crawler.crawl import run_crawl
from services.indexing.build import build_index
from services.search.service import SearchService
from tests.integration.crawler import badweb
from tests.integration.crawler.badweb import BadWeb

MENU = (
    '<ul><li><a href="/">Home</a></li><li><a href="/roses.html">Roses</a></li>'
    '<li><a href="/visit/hours.html">Opening hours</a></li><li><a href="/history.html">History</a></li></ul>'
)
PAGES = {
    "/": ("Welcome to Larkspur Gardens", "Twelve acres of borders, a rose walk and a tea room by the river."),
    "/roses.html": (
        "Roses at Larkspur Gardens",
        "The Larkspur rose walk holds 300 old roses. Larkspur gardeners prune the roses in March; "
        "Larkspur volunteers deadhead the Larkspur roses every week of summer, and the Larkspur "
        "shop sells cuttings of every Larkspur rose.",
    ),
    "/visit/hours.html": (
        "Larkspur Gardens opening hours",
        "Larkspur opens at ten. The Larkspur tea room closes at five; Larkspur tickets are sold at "
        "the Larkspur gate, and Larkspur members enter free on any day Larkspur is open.",
    ),
    "/history.html": (
        "History of Larkspur",
        "Larkspur was a market garden until 1920, when the Larkspur family opened Larkspur House "
        "and its Larkspur borders to visitors; Larkspur has welcomed visitors ever since.",
    ),
    "/pruning.html": (
        "Pruning roses",
        "Prune roses in late winter: cut to an outward bud, remove dead wood, open the centre.",
    ),
}


def _page(title: str, text: str) -> str:
    return (
        f"<html lang=en><head><title>{title}</title></head><body><nav>{MENU}</nav>"
        f'<h1>{title}</h1><p>{text}</p><p><a href="/pruning.html">How to prune roses</a></p></body></html>'
    )


@dataclass
class Garden:
    web: BadWeb
    entry: SearchService  # entry pages on (the default)
    plain: SearchService  # NIMBUS_ENTRY_PAGE_WEIGHT=0: the ranking before entry pages


@pytest.fixture(scope="module")
def garden(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Garden]:
    tmp = tmp_path_factory.mktemp("garden")
    settings = Settings.of(
        database_url=f"sqlite:///{tmp / 'nimbus.db'}",
        blob_url=f"file://{tmp / 'blobs'}",
        mr_runner="inline",
        var_dir=tmp / "var",
        crawl_delay=0.0,
        allowed_hosts="127.0.0.1",
        soft404_probe=False,
        sitemaps=False,
        feedback_docs=0,
    )
    routes = {path: badweb.page(_page(title, text)) for path, (title, text) in PAGES.items()}
    with BadWeb(routes) as web:
        run_crawl(settings, [web.url("/")], progress=False)
        build_index(settings, progress=False)
        entry = SearchService(settings, recheck_seconds=0)
        plain = SearchService(settings.with_overrides(entry_page_weight=0.0), recheck_seconds=0)
        try:
            yield Garden(web, entry, plain)
        finally:
            entry.close()
            plain.close()


@pytest.mark.parametrize("q", ["larkspur", "larkspur gardens", "Larkspur Gardens"])
def test_the_site_name_finds_the_home_page_first(garden: Garden, q: str) -> None:
    home = garden.web.url("/")
    without = [h.url for h in garden.plain.search(q).hits]
    assert without[0] != home, without  # the inner pages win on their words alone
    hits = [h.url for h in garden.entry.search(q).hits]
    assert hits[0] == home, hits
    assert sorted(hits) == sorted(without)  # the same results, the home page moved up


@pytest.mark.parametrize("q", ["prune roses", "tea room", "market garden 1920", "opening hours"])
def test_an_informational_query_is_unaffected(garden: Garden, q: str) -> None:
    # Names no home page or section: the same results, in the same order, with the same scores.
    assert garden.entry.ranked(q, 10) == garden.plain.ranked(q, 10)
    assert garden.entry.ranked(q, 10)  # and it finds something
