"""A menu-heavy site: navigation and footers neither outrank the page about a word nor fill
snippets; words a reader sees only in a menu, a list of links or a login form still find
their page, below the pages that hold them in their text (the nav field, docs/ranking.md)."""

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
            hits = service.search(word).hits
            # The menu pages follow, each scoring well under half the page about the word.
            assert hits[0].url == web.url(f"/{word}.html") and len(hits) == 5, word
            assert all(h.text_score < 0.5 * hits[0].text_score for h in hits[1:]), word
        snippet = " ".join(f.text for f in service.search("weir").hits[0].snippet)
        assert "Copyright" not in snippet and "weir" in snippet
    finally:
        service.close()


ARTICLE = (
    "The canal trust looks after forty miles of towpath, six locks and the old wharf; "
    "volunteers clear the channel every spring and repaint the lock gates in autumn. "
) * 2
JOBS = {  # title -> path: the first two are crawled pages, the third's link is broken
    "Senior archivist": "/jobs/archivist.html",
    "Lock keeper": "/jobs/keeper.html",
    "Towpath warden": "/jobs/warden.html",
}


def _jobs_page() -> str:
    """A page that marks no furniture: an article, then a list of links to its jobs."""
    listing = "".join(f'<li><a href="{path}">{title}</a></li>' for title, path in JOBS.items())
    return (
        "<html lang=en><head><title>Work with the trust</title></head><body>"
        f"<h1>Work with the trust</h1><p>{ARTICLE}</p><ul>{listing}</ul></body></html>"
    )


def _login_page() -> str:
    """The members' page: its login form sits in the site header."""
    form = (
        '<form action="/login"><input name="u" placeholder="Membership number">'
        '<input type="password" placeholder="Passphrase"><input type="hidden" name="t" value="zq8x7">'
        '<input type="submit" value="Sign in"></form>'
    )
    return (
        f"<html lang=en><head><title>Members</title></head><body><header>{form}</header>"
        f"<main><h1>Members</h1><p>{ARTICLE}</p></main></body></html>"
    )


def _job(title: str) -> str:
    return (
        f"<html lang=en><head><title>{title}</title></head><body><h1>{title}</h1>"
        f"<p>The trust is hiring: {title.lower()}, part time, based at the wharf. {ARTICLE}</p></body></html>"
    )


def test_words_only_in_a_link_list_or_a_login_form_find_their_page_below_the_text_matches(
    settings: Settings,
) -> None:
    routes = {
        "/": badweb.page(
            "<html lang=en><head><title>Canal trust</title></head><body>"
            f'<p>{ARTICLE}</p><p><a href="/work.html">Work with us</a> or '
            '<a href="/members.html">members</a>.</p>'
            "<p>Members renew their passphrase at the wharf office, with their membership card.</p>"
            "</body></html>"
        ),
        "/work.html": badweb.page(_jobs_page()),
        "/members.html": badweb.page(_login_page()),
        "/jobs/archivist.html": badweb.page(_job("Senior archivist")),
        "/jobs/keeper.html": badweb.page(_job("Lock keeper")),
    }  # no /jobs/warden.html: that link is broken
    quick = settings.with_overrides(sitemaps=False, feedback_docs=0)
    with BadWeb(routes) as web:
        run_crawl(quick, [web.url("/")], progress=False)
    build_index(quick, progress=False)
    service = SearchService(quick, recheck_seconds=0)
    try:
        # Only in the jobs page's list of links (the job was never crawled): found.
        assert [h.url for h in service.search("warden").hits] == [web.url("/work.html")]
        # Only in the login form's placeholders and button: found.
        assert [h.url for h in service.search("sign").hits] == [web.url("/members.html")]
        # The body and the list say it: the page whose title and text hold it comes first.
        urls = [h.url for h in service.search("archivist").hits]
        assert urls == [web.url("/jobs/archivist.html"), web.url("/work.html")]
        # The home page's text holds the form's words: it comes before the login page.
        urls = [h.url for h in service.search("passphrase").hits]
        assert urls == [web.url("/"), web.url("/members.html")]
        # Neither the list nor the form is in the text a snippet is cut from.
        page = service.search("warden").hits[0]
        assert "warden" not in " ".join(f.text for f in page.snippet).lower()
        assert service.search("zq8x7").total == 0  # a hidden input's value is no word
    finally:
        service.close()
