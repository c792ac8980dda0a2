"""Discovery on messy sites: meta-refresh home pages, canonical links."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path

import pytest

from services.config import Settings
from services.crawler.crawl import run_crawl
from services.storage.blobs.blobstore import open_blobstore
from services.storage.formats.records import decode_record
from tests.integration.crawler import badweb
from tests.integration.crawler.badweb import BadWeb
from tests.integration.stored_rows import stored_documents


@pytest.fixture
def quick(settings: Settings) -> Settings:
    return settings.with_overrides(crawl_delay=0.0, sitemaps=False, allowed_hosts="127.0.0.1", max_attempts=1)


def test_a_meta_refresh_home_page_is_followed_like_a_redirect(quick: Settings) -> None:
    """The mid-2000s pattern: / is an empty page that refreshes to the real home page."""
    routes = {
        "/": badweb.page(
            '<html><head><meta http-equiv="Refresh" content="0; URL=home/index.html"></head></html>'
        ),
        "/home/index.html": badweb.html("Home", "Welcome to the river society.", ["a.html", "b.html"]),
        "/home/a.html": badweb.html("Rivers", "Rivers and their floods.", ["b.html"]),
        "/home/b.html": badweb.html("Bridges", "Old stone bridges over the river."),
        "/slow.html": badweb.page(
            '<html lang=en><head><meta http-equiv=refresh content="300; url=/home/b.html"><title>News</title>'
            "</head><body><p>Today's news about the river society and its long summer walks along "
            "the banks of the river.</p></body></html>"
        ),
    }
    with BadWeb(routes) as web:
        stats = run_crawl(quick, [web.url("/"), web.url("/slow.html")], progress=False)
    urls = {d.url for d in stored_documents(quick)}
    home = web.url("/home/")
    assert {home + "index.html", home + "a.html", home + "b.html"} <= urls
    assert web.url("/") not in urls  # the refresh page itself is no document
    assert web.url("/slow.html") in urls  # a slow refresh leaves the page a page
    assert stats.counters["meta_refresh"] == 1


def test_a_refresh_loop_ends_at_the_redirect_limit(quick: Settings) -> None:
    routes = {
        "/a": badweb.page('<meta http-equiv="refresh" content="0;url=/b">'),
        "/b": badweb.page('<meta http-equiv="refresh" content="0;url=/a">'),
    }
    with BadWeb(routes) as web:
        stats = run_crawl(quick.with_overrides(max_redirects=3), [web.url("/a")], progress=False)
    assert stored_documents(quick) == [] and stats.pages <= 4
    assert stats.counters["meta_refresh"] >= 1


def test_a_canonical_link_is_crawled(quick: Settings) -> None:
    body = "Minutes of the meeting about the footbridge over the river, with the vote of members."
    routes = {
        "/minutes?session=42": badweb.page(
            f"<html lang=en><head><title>Minutes</title><link rel=canonical href='/minutes'></head>"
            f"<body><p>{body}</p></body></html>"
        ),
        "/minutes": badweb.page(
            f"<html lang=en><head><title>Minutes</title><link rel=canonical href='/minutes'></head>"
            f"<body><p>{body}</p></body></html>"
        ),
    }
    with BadWeb(routes) as web:
        stats = run_crawl(quick, [web.url("/minutes?session=42")], progress=False)
        asked = web.paths()
    assert "/minutes" in asked and stats.counters["canonical_elsewhere"] == 1
    assert len(stored_documents(quick)) == 1  # the same bytes: stored once, the other URL folded
    assert stats.counters["duplicate_content"] == 1


def test_an_old_site_is_reached_through_frames_image_maps_and_backslash_paths(quick: Settings) -> None:
    """A late-1990s site: a frameset home page, a menu frame that is an image map, an
    iframe, IIS-style backslash links and a redirect whose Location uses backslashes.
    Every page a browser could reach is crawled, none as a dead %5C URL."""
    routes = {
        "/": badweb.page(
            "<HTML><HEAD><TITLE>County Archive</TITLE></HEAD>"
            '<FRAMESET COLS="25%,75%"><FRAME SRC="menu.htm" NAME="menu"><FRAME SRC="welcome.htm" NAME="main">'
            "<NOFRAMES><BODY>The County Archive keeps parish records, maps and letters of the valley "
            'since 1820. <A HREF="noframes.htm">Browse without frames</A></BODY></NOFRAMES>'
            "</FRAMESET></HTML>"
        ),
        "/menu.htm": badweb.page(
            '<html><body><img src="menu.gif" usemap="#nav"><map name="nav">'
            '<area shape="rect" coords="0,0,100,20" href="records\\parish.htm" alt="Parish records">'
            '<area shape="rect" coords="0,20,100,40" href="maps.htm" alt="Maps"></map></body></html>'
        ),
        "/welcome.htm": badweb.html("Welcome", "The archive of the valley.", ["letters\\1850.htm"]),
        "/records/parish.htm": badweb.html("Parish records", "Baptisms, marriages and burials."),
        "/maps.htm": badweb.page(
            "<html lang=en><head><title>Maps</title></head><body><p>Tithe maps of the valley parishes.</p>"
            '<iframe src="maps/viewer.htm" title="Map viewer"></iframe></body></html>'
        ),
        "/maps/viewer.htm": badweb.html("Map viewer", "The tithe map of 1840, sheet by sheet."),
        "/letters/1850.htm": badweb.redirect("\\letters\\1850\\index.htm"),
        "/letters/1850/index.htm": badweb.html("Letters of 1850", "Letters of the mill owners."),
        "/noframes.htm": badweb.html("Without frames", "The archive's pages listed for every browser."),
    }
    with BadWeb(routes) as web:
        run_crawl(quick, [web.url("/")], progress=False)
        asked = web.paths()
    stored = {d.url: d for d in stored_documents(quick)}
    wanted = [
        "/menu.htm",
        "/welcome.htm",
        "/records/parish.htm",
        "/maps.htm",
        "/maps/viewer.htm",
        "/letters/1850/index.htm",
        "/noframes.htm",
    ]
    assert {web.url(path) for path in wanted} <= set(stored)
    assert not [path for path in asked if "%5C" in path.upper() or "\\" in path]
    home = stored[web.url("/")]
    assert home.title == "County Archive"  # the frameset page is a document with its noframes text


_TOPICS = ["roses", "tulips", "ferns", "orchids", "cacti", "lilies"]


def _cookieless_shop() -> badweb.Handler:
    """A shop that cannot keep its session in a cookie (the crawler's client keeps none for an
    IP address, like a visitor who refuses them): every answer starts a new session and writes
    it into every link, the servlet way (``;jsessionid=``) and the PHP way (``?PHPSESSID=``)."""
    sessions = itertools.count()

    async def handle(req: badweb.Request, w: asyncio.StreamWriter) -> None:
        page = int(req.path.split("/")[2].split(";")[0].split("?")[0])
        token = f"{next(sessions):032X}"
        links = [
            f"/shop/{n};jsessionid={token}" if n % 2 else f"/shop/{n}?PHPSESSID={token.lower()}"
            for n in range(len(_TOPICS))
            if n != page
        ]
        topic = _TOPICS[page]
        await badweb.html(f"All about {topic}", f"Growing {topic} in a small garden.", links)(req, w)

    return handle


def test_session_identifiers_in_links_do_not_multiply_pages(quick: Settings) -> None:
    """Without the session removed every answer would be a set of new URLs of the same
    pages: a trap that ends only at the page limit."""
    with BadWeb({"/shop/*": _cookieless_shop()}) as web:
        stats = run_crawl(quick.with_overrides(max_pages=40), [web.url("/shop/0")], progress=False)
        asked = web.paths()
    stored = sorted(d.url for d in stored_documents(quick))
    assert stored == sorted(web.url(f"/shop/{n}") for n in range(len(_TOPICS)))
    pages_asked = sorted(path for path in asked if path.startswith("/shop/"))
    assert pages_asked == sorted(f"/shop/{n}" for n in range(len(_TOPICS)))  # each page asked once
    assert stats.pages == len(_TOPICS)


def test_a_relative_link_loop_on_a_catch_all_server_ends_early(quick: Settings) -> None:
    """``href="docs/"`` on a page any path under /docs/ answers: /docs/docs/docs/... without
    end (each level also links a real page below it). The depth cap would stop it only at
    its own depth, after a whole tree of copies."""
    loop = badweb.html(
        "Documentation",
        "The handbook of the river society: meetings, walks and the library.",
        ["docs/", "intro.html"],
    )
    with BadWeb({"/docs/*": loop}) as web:
        stats = run_crawl(
            quick.with_overrides(max_depth=50, max_pages=60), [web.url("/docs/")], progress=False
        )
        asked = [path for path in web.paths() if path.startswith("/docs/")]
    assert max(path.count("docs") for path in asked) == 2  # /docs/docs/ and its intro.html
    assert len(asked) == 4  # /docs/, /docs/intro.html, /docs/docs/, /docs/docs/intro.html
    assert stats.counters["trap_path_links"] >= 1


def test_the_x_robots_tag_header_is_obeyed_as_meta_robots_is(quick: Settings, sample_data: Path) -> None:
    """A PDF can say noindex only in its header; a header addressed to another crawler
    binds only that one."""
    pdf = (sample_data / "pdf" / "pypdf-example.pdf").read_bytes()

    def tagged(title: str, tag: str, links: list[str] = ()) -> badweb.Handler:  # type: ignore[assignment]
        anchors = " ".join(f'<a href="{href}">more about {href}</a>' for href in links)
        body = f"<p>{title}: notes of the river society on floods, bridges and walks.</p>{anchors}"
        return badweb.page(
            f"<html lang=en><head><title>{title}</title></head><body>{body}</body></html>",
            headers={"X-Robots-Tag": tag},
        )

    routes = {
        "/": badweb.html(
            "Home", "The river society.", ["hidden", "others", "none", "draft.pdf", "kept.html"]
        ),
        "/kept.html": tagged("No copies", "noarchive"),  # stored and found, no cached copy shown
        "/hidden": tagged("Hidden", "noindex", ["kept-link"]),  # not stored, its links followed
        "/kept-link": badweb.html("Kept", "A page linked only from a noindex page."),
        "/others": tagged("For others", "otherbot: noindex, nofollow"),
        "/none": tagged("Nothing", "none", ["never"]),
        "/never": badweb.html("Never", "Linked only from a nofollow page."),
        "/draft.pdf": badweb.page(pdf, ctype="application/pdf", headers={"X-Robots-Tag": "noindex"}),
    }
    with BadWeb(routes) as web:
        stats = run_crawl(quick, [web.url("/")], progress=False)
        asked = web.paths()
    docs = {d.url: d for d in stored_documents(quick)}
    assert set(docs) == {web.url(p) for p in ("/", "/kept-link", "/others", "/kept.html")}
    assert "/never" not in asked and "/draft.pdf" in asked
    assert stats.counters["noindex"] == 3 and stats.counters["nofollow_header"] == 1
    blobs = open_blobstore(quick.blob_url)
    noarchive = {
        url: decode_record(
            blobs.get(d.record_block, d.record_offset, d.record_offset + d.record_length)
        ).noarchive
        for url, d in docs.items()
    }
    assert noarchive == {url: url.endswith("/kept.html") for url in docs}


def test_a_site_that_navigates_by_script_is_crawled_whole(quick: Settings) -> None:
    """The home page only redirects by script; the next one navigates by buttons and a jump
    menu. Without reading the script the crawl ends at the seed."""
    routes = {
        "/": badweb.page(
            '<html><head><script>window.location.href = "main.htm";</script></head><body></body></html>'
        ),
        "/main.htm": badweb.page(
            "<html lang=en><head><title>Valley Choir</title></head><body><p>The valley choir sings "
            "every Sunday in the old chapel by the river.</p>"
            "<input type=button value=Concerts onclick=\"location.href='concerts.htm'\">"
            '<select onchange="MM_jumpMenu(\'parent\',this,0)"><option value="">Go to</option>'
            '<option value="members.htm">Members</option></select></body></html>'
        ),
        "/concerts.htm": badweb.html("Concerts", "The summer concerts of the valley choir."),
        "/members.htm": badweb.html("Members", "The singers of the valley choir."),
    }
    with BadWeb(routes) as web:
        run_crawl(quick, [web.url("/")], progress=False)
    stored = {d.url for d in stored_documents(quick)}
    assert {web.url(p) for p in ("/main.htm", "/concerts.htm", "/members.htm")} <= stored


def test_a_refresh_header_is_followed_like_a_meta_refresh(quick: Settings) -> None:
    """``Refresh: 0; url=...`` as a response header (old servers, some CMSs): browsers
    follow it, with a body or without one; a long delay leaves the page a page."""
    routes = {
        "/": badweb.page(b"", headers={"Refresh": "0; url=/home.html"}),
        "/old": badweb.page(
            "<html><body><p>This page has moved.</p></body></html>", headers={"Refresh": "1;URL='/new.html'"}
        ),
        "/notice": badweb.page(
            "<html lang=en><head><title>Notice</title></head><body><p>The river society meets on "
            "Sunday by the old stone bridge; the walk starts at ten.</p></body></html>",
            headers={"Refresh": "600; url=/home.html"},
        ),
        "/home.html": badweb.html("Home", "The river society's home page."),
        "/new.html": badweb.html("Moved here", "The page that moved."),
    }
    with BadWeb(routes) as web:
        stats = run_crawl(quick, [web.url("/"), web.url("/old"), web.url("/notice")], progress=False)
    stored = {d.url for d in stored_documents(quick)}
    assert stored == {web.url(p) for p in ("/home.html", "/new.html", "/notice")}
    assert stats.counters["meta_refresh"] == 2
