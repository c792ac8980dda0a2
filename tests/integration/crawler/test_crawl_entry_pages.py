"""A query that names a site finds its home page first; an informational query is unmoved.

A garden's site on loopback (its host, 127.0.0.1, says nothing about its name): a home page
titled "Welcome to Larkspur Gardens" with little text, and inner pages that say "Larkspur"
again and again, in their titles and text. Without the entry-page factor the inner pages win
"larkspur" on their words; with it, the home page is first, named by the site's name (the
word heads the titles of most of the site's pages) and by most of its own title.
"""

from __future__ import annotations

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


def test_the_site_name_finds_the_home_page_first_and_informational_queries_do_not_move(
    settings: Settings,
) -> None:
    routes = {path: badweb.page(_page(title, text)) for path, (title, text) in PAGES.items()}
    quick = settings.with_overrides(sitemaps=False, feedback_docs=0)
    with BadWeb(routes) as web:
        run_crawl(quick, [web.url("/")], progress=False)
    build_index(quick, progress=False)
    entry = SearchService(quick, recheck_seconds=0)
    plain = SearchService(quick.with_overrides(entry_page_weight=0.0), recheck_seconds=0)
    try:
        for q in ("larkspur", "larkspur gardens", "Larkspur Gardens"):
            without = [h.url for h in plain.search(q).hits]
            assert without[0] != web.url("/"), (q, without)  # the inner pages win on words alone
            hits = [h.url for h in entry.search(q).hits]
            assert hits[0] == web.url("/"), (q, hits)
        for q in ("prune roses", "tea room", "market garden 1920", "opening hours"):
            # Names no home page or section: the same results, in the same order, same scores.
            assert entry.ranked(q, 10) == plain.ranked(q, 10), q
    finally:
        entry.close()
        plain.close()
