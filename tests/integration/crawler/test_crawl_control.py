"""Operator commands through the database: pause, resume and stop reach a running crawl."""

from __future__ import annotations

import threading

from sqlalchemy import func, select

from services.config import Settings
from services.crawler.cluster import heartbeat
from services.crawler.crawl import run_crawl
from services.storage.sql.engines import make_engine, session_factory
from services.storage.sql.models import Document, FrontierEntry
from services.storage.sql.schema import init_db
from tests.integration.crawler.slow_chain import PAGES
from tests.polling import wait_for


def _count(settings: Settings, what) -> int:
    engine = make_engine(settings.database_url)
    try:
        with session_factory(engine)() as session:
            return int(session.scalar(what) or 0)
    finally:
        engine.dispose()


def _crawl_in_background(settings: Settings, seed: str) -> tuple[threading.Thread, dict[str, object]]:
    """A crawl from ``seed`` on its own thread; its ``CrawlStats`` land in the dict as "stats"."""
    result: dict[str, object] = {}
    crawl = threading.Thread(target=lambda: result.update(stats=run_crawl(settings, [seed], progress=False)))
    crawl.start()
    return crawl, result


def _command(settings: Settings, name: str) -> None:
    import time

    engine = make_engine(settings.database_url)
    init_db(engine)
    try:
        with session_factory(engine).begin() as session:
            heartbeat.command(session, name, time.time())
    finally:
        engine.dispose()


def test_pause_stops_leasing_resume_continues_and_stop_ends_the_crawl(settings: Settings, slow_site) -> None:
    base, _gate, _asked = slow_site
    quick = settings.with_overrides(
        sitemaps=False, heartbeat_seconds=0.1, max_pages=PAGES, max_depth=PAGES, flush_interval=0.2
    )
    documents = select(func.count()).select_from(Document)
    leased = select(func.count()).select_from(FrontierEntry).where(FrontierEntry.state == "leased")
    engine = make_engine(quick.database_url)
    init_db(engine)  # the schema before the polls read it
    engine.dispose()
    crawl, result = _crawl_in_background(quick, base + "/0")
    try:
        wait_for(lambda: _count(quick, documents) >= 5, timeout=30, what="the first documents")
        _command(quick, "pause")
        wait_for(lambda: _count(quick, leased) == 0, timeout=30, what="the batches out to be committed")
        paused_at = _count(quick, documents)
        wait_for(lambda: _count(quick, documents) == paused_at, timeout=5, what="a stable count")
        assert crawl.is_alive()  # paused, not ended: nothing left to do would have ended it
        _command(quick, "resume")
        wait_for(lambda: _count(quick, documents) > paused_at + 5, timeout=30, what="crawling again")
        _command(quick, "stop")
        crawl.join(timeout=30)
        assert not crawl.is_alive(), "the crawl did not stop"
    finally:
        if crawl.is_alive():
            _command(quick, "stop")
            crawl.join(timeout=30)
    stored = _count(quick, documents)
    assert 5 < stored < PAGES  # stopped before the end
    # Every batch committed, or handed back: its lease expired at once, so the next crawler
    # takes it over under the same sequence number (the ordered-commit ledger).
    held = (
        select(func.count())
        .select_from(FrontierEntry)
        .where(FrontierEntry.state == "leased", FrontierEntry.available_at > 0)
    )
    assert _count(quick, held) == 0
    done = select(func.count()).select_from(FrontierEntry).where(FrontierEntry.state == "done")
    assert _count(quick, done) == stored  # each fetched page committed once, as a document


def test_a_blocked_host_is_left_alone_from_the_next_heartbeat(settings: Settings, slow_site) -> None:
    """The webmaster complains: the operator blocks the host while the crawl runs. Once the
    crawler has beaten after the block, it starts no request to the host (one already past
    its check may still go: one per host in flight), and the crawl ends once its queue is
    spent. The server is held still around the block, so the count does not race it."""
    import time

    from services.storage.sql.models import CrawlNode

    base, gate, asked = slow_site
    quick = settings.with_overrides(
        sitemaps=False, heartbeat_seconds=0.1, max_pages=PAGES, max_depth=PAGES, flush_interval=0.2
    )
    documents = select(func.count()).select_from(Document)
    engine = make_engine(quick.database_url)
    init_db(engine)
    sessions = session_factory(engine)
    crawl, result = _crawl_in_background(quick, base + "/0")
    try:
        wait_for(lambda: _count(quick, documents) >= 5, timeout=30, what="the first documents")
        gate.clear()  # requests arriving now wait: the crawl is held mid-request
        with sessions.begin() as session:
            assert heartbeat.block_hosts(session, [base + "/"], time.time(), "asked by its webmaster") == [
                "127.0.0.1"
            ]
        blocked_at = time.time()  # after the commit: a beat stamped later has read the block
        beaten = select(func.max(CrawlNode.beat_at))
        wait_for(lambda: _count(quick, beaten) > blocked_at, timeout=30, what="a beat after the block")
        seen_at_beat = len(asked)
        gate.set()
        crawl.join(timeout=60)
        assert not crawl.is_alive(), "the crawl did not end with its only host blocked"
    finally:
        gate.set()
        if crawl.is_alive():
            _command(quick, "stop")
            crawl.join(timeout=30)
    stats = result["stats"]
    assert len(asked) <= seen_at_beat + quick.crawl.per_host_concurrency, asked[seen_at_beat:]
    assert _count(quick, documents) < PAGES
    assert stats.counters["blocked_by_operator"] > 0  # type: ignore[attr-defined]
    with sessions() as session:
        blocked = heartbeat.blocked_hosts(session)
        assert [(b.host, b.reason) for b in blocked] == [("127.0.0.1", "asked by its webmaster")]
        assert heartbeat.control(session).blocked == frozenset({"127.0.0.1"})
    with sessions.begin() as session:
        heartbeat.unblock_hosts(session, ["127.0.0.1"])
    with sessions() as session:
        assert heartbeat.control(session).blocked == frozenset()
    engine.dispose()


def test_a_page_the_operator_asks_for_again_is_fetched_again_first(settings: Settings) -> None:
    """ "I fixed my page": a known URL is due again at once (``entries.recrawl_now``, behind
    ``nimbus crawl seed --recrawl`` and the dashboard's seed form), where a plain crawl
    would leave it until its recrawl time."""
    from services.crawler.frontier import entries
    from tests.integration.crawler import badweb
    from tests.integration.crawler.badweb import BadWeb
    from tests.integration.stored_rows import stored_documents

    title = {"now": "Opening hours"}

    async def page(req: badweb.Request, w) -> None:
        await badweb.html(title["now"], "The library opens at nine and closes at five.")(req, w)

    quick = settings.with_overrides(crawl_delay=0.0, sitemaps=False, allowed_hosts="127.0.0.1")
    with BadWeb({"/hours": page}) as web:
        url = web.url("/hours")
        run_crawl(quick, [url], progress=False)
        title["now"] = "Opening hours (new winter times)"
        again = run_crawl(quick, [], progress=False)  # nothing due: the page waits for its recrawl
        assert again.pages == 0
        engine = make_engine(quick.database_url)
        with session_factory(engine).begin() as session:
            assert entries.recrawl_now(session, [url, web.url("/never-seen")]) == 1
        engine.dispose()
        refetched = run_crawl(quick, [], progress=False)
    assert refetched.pages == 1
    [doc] = stored_documents(quick)
    assert doc.title == "Opening hours (new winter times)" and doc.url == url
