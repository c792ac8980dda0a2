"""The crawler against a hostile web: every kind of bad input a crawler meets.

Each test serves one host from ``badweb.BadWeb``: a home page linking to a
few good pages and to the bad input. Each asserts the counter the crawl
records for the bad input, that the crawl finishes by itself (a thread that
has not returned after ``CRAWL_LIMIT`` seconds fails the test: a liveness
bound, not a timing), and that the good pages of the same host are stored.
"""

from __future__ import annotations

import gzip
import threading
from pathlib import Path

import pytest
from sqlalchemy import select

from services.config import Settings
from services.crawler.crawl import CrawlStats, run_crawl
from services.storage.sql.engines import make_engine, session_factory
from services.storage.sql.models import Document, FrontierEntry
from tests.integration.crawler import badweb
from tests.integration.crawler.badweb import BadWeb

CRAWL_LIMIT = 120.0  # seconds before a crawl counts as hung (each one takes a few seconds)
GOOD = ["/good/1", "/good/2", "/good/3"]


@pytest.fixture
def hostile(settings: Settings) -> Settings:
    """Short timeouts, one attempt per URL (no retry waits), a 1 MB body cap, all languages."""
    return settings.with_overrides(
        fetch_timeout=2.0,
        read_timeout=1.0,
        connect_timeout=2.0,
        max_attempts=1,
        retry_backoff=0.01,
        max_body_bytes=1_000_000,
        languages="",
        concurrency=4,
    )


def _web(
    bad: dict[str, badweb.Handler],
    *,
    robots: bytes = b"User-agent: *\nAllow: /\n",
    home_links: list[str] | None = None,
) -> BadWeb:
    """A host with robots.txt, a home page linking to the good pages and ``home_links`` (default: ``bad``)."""
    routes = {
        path: badweb.html(f"Good page {path}", f"Good page number {path[-1]} about rivers.") for path in GOOD
    }
    routes["/robots.txt"] = badweb.page(robots, ctype="text/plain")
    routes["/"] = badweb.html(
        "Home", "The home page of the hostile web.", GOOD + (list(bad) if home_links is None else home_links)
    )
    routes.update(bad)
    return BadWeb(routes)


def _crawl(settings: Settings, web: BadWeb, **limits: int) -> CrawlStats:
    """``run_crawl`` from the home page in a thread; fails if it has not finished in ``CRAWL_LIMIT``."""
    box: dict[str, object] = {}

    def run() -> None:
        try:
            box["stats"] = run_crawl(settings, [web.url("/")], progress=False, **limits)
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread below
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(CRAWL_LIMIT)
    assert not thread.is_alive(), f"the crawl of {web.base} did not finish: the hostile host trapped it"
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["stats"]  # type: ignore[return-value]


def _documents(settings: Settings) -> dict[str, Document]:
    engine = make_engine(settings.database_url)
    try:
        with session_factory(engine)() as session:
            return {d.url: d for d in session.scalars(select(Document))}
    finally:
        engine.dispose()


def _frontier(settings: Settings) -> list[FrontierEntry]:
    engine = make_engine(settings.database_url)
    try:
        with session_factory(engine)() as session:
            return list(session.scalars(select(FrontierEntry)))
    finally:
        engine.dispose()


def _states(settings: Settings) -> dict[str, str]:
    return {e.url: e.state for e in _frontier(settings)}


def _errors(settings: Settings) -> dict[str, str]:
    """The reason the crawl recorded per URL (frontier ``last_error``)."""
    return {e.url: e.last_error or "" for e in _frontier(settings)}


def _assert_good_pages_stored(settings: Settings, web: BadWeb) -> dict[str, Document]:
    docs = _documents(settings)
    missing = {web.url(p) for p in ["/", *GOOD]} - set(docs)
    assert not missing, f"good pages of the hostile host were lost: {missing}"
    return docs


def test_malformed_and_truncated_html_is_still_indexed(hostile: Settings) -> None:
    malformed = (
        "<html><head><title>Broken <b>markup</title></head><body><div><p>Unclosed paragraphs "
        "about mountains <table><tr><td>cell</div></div></span><a href=/only-from-malformed>"
        '<p>\x00 nul bytes and &bogus; entities &#xZZ; remain readable text <a class="x>never'
    )
    truncated = (
        "<!doctype html><html><head><title>Cut short</title></head><body><p>This page about the "
        "coast stops in the middle of a tag <a hr"
    )
    with _web(
        {
            "/malformed": badweb.page(malformed.encode()),
            "/truncated": badweb.page(truncated.encode()),
            "/only-from-malformed": badweb.html("Reached through broken markup"),
        },
        home_links=["/malformed", "/truncated"],
    ) as web:
        stats = _crawl(hostile, web)
    docs = _assert_good_pages_stored(hostile, web)
    assert stats.counters["documents"] == 7  # home, 3 good, both bad pages, the page linked from one
    assert docs[web.url("/truncated")].title == "Cut short"
    assert web.url("/only-from-malformed") in docs  # links in broken markup are still followed
    assert stats.counters.get("parse_error", 0) == 0


def test_wrong_or_missing_content_type(hostile: Settings, sample_data: Path) -> None:
    pdf = (sample_data / "pdf" / "pypdf-example.pdf").read_bytes()
    html = b"<!doctype html><html><head><title>Untyped</title></head><body><p>No type here.</p></body></html>"
    with _web(
        {
            "/untyped": badweb.page(html, ctype=None),
            "/pdf-as-html": badweb.page(pdf, ctype="text/html; charset=utf-8"),
            "/image": badweb.page(b"\x89PNG\r\n" + b"\0" * 200, ctype="image/png"),
            "/html-as-image": badweb.page(html.replace(b"Untyped", b"Mislabelled"), ctype="image/jpeg"),
        }
    ) as web:
        stats = _crawl(hostile, web)
    docs = _assert_good_pages_stored(hostile, web)
    assert stats.counters["wrong_type"] == 2  # a declared non-HTML type is trusted, as browsers do
    assert "/image" not in web.paths("GET")  # the HEAD pre-check spared the download
    assert docs[web.url("/untyped")].content_type == "text/html"  # sniffed
    assert docs[web.url("/pdf-as-html")].content_type == "application/pdf"  # magic bytes beat the label


def test_pdfs_under_old_servers_types_are_fetched_and_stored(hostile: Settings, sample_data: Path) -> None:
    """Old Apache configurations send application/x-pdf; download scripts send
    application/force-download or binary/octet-stream. A browser opens all of them as PDFs."""
    pdf = (sample_data / "pdf" / "pypdf-example.pdf").read_bytes()
    # Three different files (the same bytes would be stored once, as duplicates): a comment
    # after %%EOF changes the bytes, not the document.
    bad = {
        "/x-pdf.pdf": badweb.page(pdf + b"% 1\n", ctype="application/x-pdf"),
        "/download.php?id=7": badweb.page(pdf + b"% 2\n", ctype="application/force-download"),
        "/binary": badweb.page(pdf + b"% 3\n", ctype="binary/octet-stream"),
        "/archive.zip": badweb.page(b"PK\x03\x04" + b"\0" * 200, ctype="application/zip"),
    }
    with _web(bad) as web:
        stats = _crawl(hostile, web)
    docs = _assert_good_pages_stored(hostile, web)
    for path in ("/x-pdf.pdf", "/download.php?id=7", "/binary"):
        assert docs[web.url(path)].content_type == "application/pdf", path
    assert web.url("/archive.zip") not in docs and "/archive.zip" not in web.paths("GET")
    assert stats.counters["wrong_type"] == 1


def test_a_link_farm_page_adds_at_most_max_links_urls(hostile: Settings) -> None:
    """A generated page of 5,000 distinct links: the frontier, the record and the link graph
    take the first parse.MAX_LINKS; the rest are counted, not queued."""
    from services.crawler.web.parse import MAX_LINKS

    farm = "".join(f'<a href="/farm/{i}">offer {i}</a> ' for i in range(5000))
    page = f"<html lang=en><head><title>Offers</title></head><body><p>Best offers.</p>{farm}</body></html>"
    with _web({"/farm.html": badweb.page(page)}) as web:
        stats = _crawl(hostile, web, max_pages=8)
    docs = _assert_good_pages_stored(hostile, web)
    assert web.url("/farm.html") in docs
    assert stats.counters["links_over_cap"] == 5000 - MAX_LINKS
    queued = [e.url for e in _frontier(hostile) if "/farm/" in e.url]
    assert len(queued) == MAX_LINKS


def test_gzip_bomb_is_cut_at_the_size_cap(hostile: Settings) -> None:
    with _web({"/bomb": badweb.gzip_bomb(200_000_000)}) as web:  # 200 MB decoded from ~200 KB
        stats = _crawl(hostile, web)
    docs = _assert_good_pages_stored(hostile, web)
    assert stats.counters["too_large"] == 1
    assert web.url("/bomb") not in docs
    assert stats.bytes < 10 * hostile.crawl.max_body_bytes


def test_redirect_loops_and_chains_end(hostile: Settings) -> None:
    chain = {f"/hop/{i}": badweb.redirect(f"/hop/{i + 1}") for i in range(1, 10)}
    with _web(
        {
            "/loop-a": badweb.redirect("/loop-b"),
            "/loop-b": badweb.redirect("/loop-a", status=301),
            "/self": badweb.redirect("/self?"),  # normalizes to itself
            **chain,
        },
        home_links=["/loop-a", "/self", "/hop/1"],
    ) as web:
        stats = _crawl(hostile, web)
    _assert_good_pages_stored(hostile, web)
    asked = [path for _, path in web.requests]  # HEAD tells of a redirect: no GET needed
    assert all(asked.count(p) == 1 for p in ("/loop-a", "/loop-b")), asked
    assert web.requests.count(("GET", "/self")) == 1  # to itself: asked once more, then given up
    assert stats.counters["bad_redirect"] == 1
    assert stats.counters["redirect_limit"] == 1  # /hop/1 .. /hop/6 fetched, /hop/7 refused
    assert [p for p in asked if p.startswith("/hop/")] == [f"/hop/{i}" for i in range(1, 7)]
    assert stats.counters["redirect"] == 2 + 6


def test_slow_drip_server_hits_the_total_timeout(hostile: Settings) -> None:
    with _web({"/drip": badweb.slow_drip(interval=0.05)}) as web:  # never stalls a whole read timeout
        stats = _crawl(hostile, web)
    _assert_good_pages_stored(hostile, web)
    assert stats.counters["fetch_error_timeout"] == 1
    assert stats.counters["gave_up"] == 1  # max_attempts=1: the one attempt was the last
    assert _states(hostile)[web.url("/drip")] == "failed"


def test_server_closing_mid_body(hostile: Settings) -> None:
    with _web(
        {
            "/liar": badweb.close_mid_body(declared=50_000, sent=1000),  # Content-Length promises more
            "/chunks": badweb.close_mid_body(declared=50_000, sent=1000, chunked=True),
        }
    ) as web:
        stats = _crawl(hostile, web)
    docs = _assert_good_pages_stored(hostile, web)
    assert stats.counters["fetch_error_closed"] == 2
    assert stats.counters["gave_up"] == 2
    assert not {web.url("/liar"), web.url("/chunks")} & set(docs)  # no half page stored


def test_garbage_robots_txt_allows_the_crawl(hostile: Settings) -> None:
    """Not one directive: RFC 9309 parsing finds no rules, so everything is allowed
    (``RobotsRules.garbage`` tells; counting it as ``robots_garbage`` is the crawl loop's part)."""
    garbage = b"\x00\xff\xfe<html>\x80\x81 not robots at all \x1b[31m" * 200
    with _web({"/private/page": badweb.html("Not really private")}, robots=garbage) as web:
        stats = _crawl(hostile, web)
    docs = _assert_good_pages_stored(hostile, web)
    assert web.paths("GET").count("/robots.txt") == 1
    assert stats.counters["robots_fetched"] == 1
    assert stats.counters.get("robots_denied", 0) == 0 and stats.counters.get("robots_unavailable", 0) == 0
    assert web.url("/private/page") in docs


def _titled(title: str, body: str) -> str:
    return f"<html><head><title>{title}</title></head><body><p>{body}</p></body></html>"


def test_non_utf8_and_mislabelled_charsets(hostile: Settings) -> None:
    russian = _titled("Привет, мир", "Это тестовая страница на русском языке о погоде и реках.")
    french = _titled("Café crème à Paris", "Le café est très bon à Paris, où les élèves étudient le soir.")
    japanese = '<meta charset="shift_jis">' + _titled("日本語のページ", "これはテストページです。天気と川。")
    pages = {
        "/cp1251": (
            badweb.page(russian.encode("cp1251"), ctype="text/html; charset=windows-1251"),
            "Привет, мир",
        ),
        "/undeclared-cp1252": (badweb.page(french.encode("cp1252"), ctype="text/html"), "Café crème à Paris"),
        "/cp1252-labelled-utf8": (
            badweb.page(french.replace("Paris", "Lyon").encode("cp1252")),
            "Café crème à Lyon",
        ),
        "/utf8-labelled-latin1": (
            badweb.page(russian.replace("мир", "дом").encode(), ctype="text/html; charset=iso-8859-1"),
            "Привет, дом",
        ),
        "/sjis-meta-only": (badweb.page(japanese.encode("shift_jis"), ctype="text/html"), "日本語のページ"),
    }
    with _web({path: handler for path, (handler, _) in pages.items()}) as web:
        stats = _crawl(hostile, web)
    docs = _assert_good_pages_stored(hostile, web)
    assert stats.counters["documents"] == 4 + len(pages)
    assert {path: docs[web.url(path)].title for path in pages} == {p: t for p, (_, t) in pages.items()}


def _calendar(month_path: str) -> badweb.Handler:
    """An endless calendar: every month links to the next and the previous one."""

    async def handle(req: badweb.Request, w) -> None:
        n = int(req.path.rsplit("/", 1)[-1] or 0)
        body = _titled(
            f"Month {n}",
            f"Events of month {n} in the garden club calendar. "
            f'<a href="{month_path}{n + 1}">next</a> <a href="{month_path}{n - 1}">previous</a>',
        )
        await badweb.page(body)(req, w)

    return handle


def test_calendar_trap_is_bounded_by_depth_and_host_cap(hostile: Settings, tmp_path: Path) -> None:
    with _web({"/calendar/*": _calendar("/calendar/")}, home_links=["/calendar/0"]) as web:
        by_depth = _crawl(hostile.with_overrides(max_depth=4), web)
        months = [p for p in web.paths("GET") if p.startswith("/calendar/")]
        assert len(months) == 7  # depths 1..4: months 0, ±1, ±2, ±3
        assert by_depth.counters["depth_limit"] > 0
        _assert_good_pages_stored(hostile, web)

        capped = hostile.with_overrides(
            database_url=f"sqlite:///{tmp_path / 'capped.db'}",
            blob_url=f"file://{tmp_path / 'capped-blobs'}",
            max_depth=1000,
            max_pages_per_host=20,
        )
        by_cap = _crawl(capped, web)
    assert by_cap.pages <= 20
    assert by_cap.counters["host_page_cap"] + by_cap.counters["host_page_cap_links"] > 0
    _assert_good_pages_stored(capped, web)


def test_corrupt_pdf_is_a_parse_error(hostile: Settings, sample_data: Path) -> None:
    real = (sample_data / "pdf" / "tracemonkey.pdf").read_bytes()
    with _web(
        {
            "/garbage.pdf": badweb.page(b"%PDF-1.4\n" + bytes(range(256)) * 20, ctype="application/pdf"),
            "/half.pdf": badweb.page(real[: len(real) // 2], ctype="application/pdf"),
        }
    ) as web:
        stats = _crawl(hostile, web)
    docs = _assert_good_pages_stored(hostile, web)
    assert stats.counters["parse_error"] == 2
    assert not {web.url("/garbage.pdf"), web.url("/half.pdf")} & set(docs)
    errors = _errors(hostile)
    assert all("not a readable PDF" in errors[web.url(p)] for p in ("/garbage.pdf", "/half.pdf")), errors


def test_empty_body_is_counted_not_stored(hostile: Settings) -> None:
    with _web(
        {
            "/empty": badweb.page(b""),
            "/blank": badweb.page(b" \r\n\t \n"),
            "/empty-gzip": badweb.raw(
                badweb.head(
                    200, {"Content-Type": "text/html", "Content-Encoding": "gzip", "Content-Length": "20"}
                )
                + gzip.compress(b"")
            ),
        }
    ) as web:
        stats = _crawl(hostile, web)
    docs = _assert_good_pages_stored(hostile, web)
    assert stats.counters["parse_error"] == 3
    assert not {web.url(p) for p in ("/empty", "/blank", "/empty-gzip")} & set(docs)
    errors = _errors(hostile)
    assert all("empty body" in errors[web.url(p)] for p in ("/empty", "/blank", "/empty-gzip")), errors
