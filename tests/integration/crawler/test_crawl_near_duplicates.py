"""Near-duplicates: pages whose text differs in a few tokens fold like exact duplicates.

The site serves its catalogue under session ids (each copy prints its own id), a "page not
found" answer that echoes the requested path (with status 200, and no soft-404 probe to
catch it), and a daily notice that differs only in its date. Each family shows as one
result, the other addresses listed under it, and the build counts the folded documents.
"""

from __future__ import annotations

from services.config import Settings
from services.crawler.crawl import run_crawl
from services.indexing.build import build_index
from services.search.service import SearchService
from tests.integration.crawler import badweb
from tests.integration.crawler.badweb import BadWeb

CATALOGUE = (
    "Our catalogue lists walking boots, rain jackets, wool socks, compasses, maps of the valley, "
    "tents for two and four people, sleeping bags rated to minus ten, stoves and fuel canisters, "
    "first aid kits, head torches and trekking poles for every season."
)
NOTICE = (
    "Ferry notice: the river ferry crosses every hour from the north quay, tickets are sold on "
    "board, dogs and bicycles travel free, and the last crossing leaves at ten in the evening."
)
MISSING = (
    "We could not find the page you asked for. It may have moved during our redesign; please "
    "use the search box, the site map or the links below to find timetables and fares."
)
REAL = {
    "/boots.html": "Boots: leather walking boots need wax twice a season and dry slowly away from fire.",
    "/ferry-history.html": "The ferry has run since 1820, first rowed, then steam, now electric.",
}


def _html(title: str, text: str, links: str = "") -> bytes:
    return f"<html lang=en><title>{title}</title><body><p>{text}</p>{links}</body></html>".encode()


def test_near_duplicate_families_show_once_with_the_other_addresses(settings: Settings) -> None:
    routes = {path: badweb.page(_html(path.strip("/"), text)) for path, text in REAL.items()}
    sessions = [f"/shop?sid={sid}" for sid in ("a81f", "c02e", "77b9")]
    for path in sessions:
        sid = path.split("=")[1]
        routes[path] = badweb.page(_html("Catalogue", f"{CATALOGUE} Session {sid}."))
    dates = ["/notice/monday", "/notice/tuesday", "/notice/wednesday"]
    for i, path in enumerate(dates):
        routes[path] = badweb.page(_html("Ferry notice", f"{NOTICE} Updated 2006-05-{10 + i}."))
    missing = ["/old/timetable.html", "/old/fares.html"]
    for path in missing:
        routes[path] = badweb.page(_html("Not found", f"{MISSING} Requested: {path}"))
    links = " ".join(f'<a href="{p}">x</a>' for p in [*REAL, *sessions, *dates, *missing])
    routes["/"] = badweb.page(_html("Outdoor shop and ferry", "Welcome to the valley shop.", links))
    quick = settings.with_overrides(sitemaps=False, feedback_docs=0)
    with BadWeb(routes) as web:
        run_crawl(quick, [web.url("/")], progress=False)
    result = build_index(quick, progress=False)
    assert result.near_duplicates == 2 + 2 + 1  # three catalogues, three notices, two "not found"
    service = SearchService(quick, recheck_seconds=0)
    try:
        for query, family in (("sleeping bags", sessions), ("ferry crossing", dates), ("redesign", missing)):
            hits = service.search(query).hits
            shown = [h for h in hits if h.url in {web.url(p) for p in family}]
            assert len(shown) == 1, (query, [h.url for h in hits])
            assert {shown[0].url, *shown[0].also_at} == {web.url(p) for p in family}
        # Pages that merely share words stay apart: the ferry's history is its own result.
        urls = [h.url for h in service.search("ferry").hits]
        assert web.url("/ferry-history.html") in urls
    finally:
        service.close()
