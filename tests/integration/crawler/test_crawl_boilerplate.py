"""A menu-heavy site: navigation and footers neither match queries nor fill snippets."""

from __future__ import annotations

from services.config import Settings
from services.crawler.crawl import run_crawl
from services.indexing.build import build_index
from services.search.service import SearchService
from tests.integration.crawler import badweb
from tests.integration.crawler.badweb import BadWeb

TOPICS = {
    "/bridges.html": (
        "Stone bridges",
        "The seven stone bridges of the old town were built between 1450 and 1600.",
    ),
    "/walks.html": (
        "Summer walks",
        "Summer walks start at the mill and follow the river to the weir and back.",
    ),
    "/mills.html": ("Water mills", "Three water mills once ground the town's grain; one still turns today."),
    "/fish.html": ("River fish", "Trout and grayling live in the clear upper river above the weir."),
}
MENU = "".join(
    f'<a href="{path}">{title} and more about {title.lower()}</a> ' for path, (title, _) in TOPICS.items()
)
FOOTER = "Copyright the river society. Contact us about walks, bridges, mills and fish any time."


def _page(title: str, text: str) -> str:
    body = " ".join([text] * 4)
    return (
        f"<html lang=en><head><title>{title}</title></head><body><nav>{MENU}</nav>"
        f"<main><h1>{title}</h1><p>{body}</p></main><footer>{FOOTER}</footer></body></html>"
    )


def test_the_page_about_the_query_wins_and_snippets_are_not_the_footer(settings: Settings) -> None:
    routes = {path: badweb.page(_page(*spec)) for path, spec in TOPICS.items()}
    routes["/"] = badweb.page(_page("River society", "The river society looks after the river and its town."))
    quick = settings.with_overrides(sitemaps=False, feedback_docs=0)
    with BadWeb(routes) as web:
        run_crawl(quick, [web.url("/")], progress=False)
    build_index(quick, progress=False)
    service = SearchService(quick, recheck_seconds=0)
    try:
        for path in TOPICS:
            word = path.strip("/").split(".")[0]
            assert service.search(word).hits[0].url == web.url(path), word
        for word in ("bridges", "fish"):  # named on every page, but only in the menu and footer
            assert service.search(word).total == 1, word  # not 5: every page's menu names it
        snippet = " ".join(f.text for f in service.search("weir").hits[0].snippet)
        assert "Copyright" not in snippet and "weir" in snippet
    finally:
        service.close()
