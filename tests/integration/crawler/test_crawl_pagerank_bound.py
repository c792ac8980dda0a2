"""PageRank reorders near-equals and never lifts a weak match above a strong one.

A site of the table-layout era: no <nav> or <footer> elements, a menu of links in a table
cell and a line of prose on every page naming every topic. Every page links to the menu
pages (home, news, topics, about), so they hold most of the PageRank; the article about a
topic is linked from the topics page only. Words on every page have an idf near zero, so
their text scores are tiny, and a prior added in BM25 points would decide the order by
links alone: the menu pages would come first for every topic.
"""

from __future__ import annotations

from services.config import Settings
from services.crawler.crawl import run_crawl
from services.indexing.build import build_index
from services.search.service import SearchService
from tests.integration.crawler import badweb
from tests.integration.crawler.badweb import BadWeb

TOPICS = {
    "bridges": "The seven stone bridges of the old town were built between 1450 and 1600; "
    "the bridges are the oldest in the county and two bridges still carry carts.",
    "walks": "Summer walks start at the mill and follow the river to the weir; the walks "
    "take two hours and the society leads walks every Sunday.",
    "mills": "Three water mills once ground the town's grain; the mills stood on the leat "
    "and one of the mills still turns today.",
    "fish": "Trout and grayling are the fish of the clear upper river; fish counts are "
    "kept by the society and the fish return each spring.",
}
MENU = "".join(f'<tr><td><a href="/{p}.html">{p.title()}</a></td></tr>' for p in ("news", "topics", "about"))
PROSE = "The river society cares for the town's bridges, walks, mills and fish."


def _page(title: str, text: str, extra_links: str = "") -> str:
    return (
        f"<html lang=en><head><title>{title}</title></head><body><table><tr>"
        f"<td><table>{MENU}</table></td>"
        f"<td><h1>{title}</h1><p>{text}</p><p>{PROSE}</p>{extra_links}</td></tr></table>"
        '<p><a href="/">Home</a></p>'
        "</body></html>"
    )


def test_the_page_about_the_query_beats_the_well_linked_pages(settings: Settings) -> None:
    routes = {f"/{t}.html": badweb.page(_page(t.title(), text)) for t, text in TOPICS.items()}
    news = "".join(f'<a href="/news/{i}.html">Newsletter {i}</a> ' for i in range(12))
    routes["/"] = badweb.page(_page("River society", "Welcome to the river society of the old town."))
    routes["/news.html"] = badweb.page(_page("News", "The newsletters of the society.", news))
    routes["/about.html"] = badweb.page(_page("About", "Who we are and how to join the society."))
    articles = "".join(f'<a href="/{t}.html">{t}</a> ' for t in TOPICS)
    routes["/topics.html"] = badweb.page(_page("Topics", "What the society studies.", articles))
    for i in range(12):
        text = f"Newsletter {i}: the meeting was held in the town hall; the treasurer reported."
        routes[f"/news/{i}.html"] = badweb.page(_page(f"Newsletter {i}", text))
    quick = settings.with_overrides(sitemaps=False, feedback_docs=0)
    with BadWeb(routes) as web:
        run_crawl(quick, [web.url("/")], progress=False)
    build_index(quick, progress=False)
    service = SearchService(quick, recheck_seconds=0)
    try:
        for topic in TOPICS:
            hits = service.search(topic).hits
            assert hits[0].url == web.url(f"/{topic}.html"), (topic, [h.url for h in hits[:3]])
        # Near-equals still follow the links: of the pages naming "bridges" only in the prose
        # line, the home page (linked from every page) comes before the newsletters.
        order = [h.url for h in service.search("bridges").hits]
        letters = [order.index(u) for i in range(12) if (u := web.url(f"/news/{i}.html")) in order]
        assert letters and order.index(web.url("/")) < min(letters)
    finally:
        service.close()
