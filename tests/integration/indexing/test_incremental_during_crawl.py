"""Incremental updates while a crawl runs: a full build in the middle of a crawl, then updates
racing the crawl's commits until it ends, then one more; the result is the segment a full
build of the finished crawl gives, and every page is found by its own words."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from pathlib import Path

import numpy as np
from sqlalchemy import func, select

from services.config import Settings
from services.crawler.crawl import run_crawl
from services.indexing.build import build_index
from services.indexing.delta_build import publish_delta
from services.indexing.incremental import UpdateResult, update_index
from services.search.service import SearchService
from services.storage.blobs.blobstore import open_blobstore
from services.storage.formats.segment import open_segment
from services.storage.sql.engines import make_engine, session_factory
from services.storage.sql.index_versions import active_index
from services.storage.sql.models import Document
from services.storage.sql.schema import init_db
from tests.integration.crawler import badweb
from tests.integration.crawler.badweb import BadWeb, Handler, Request
from tests.polling import wait_for

EARLY, LATE = 6, 18
WORDS = ["alder", "birch", "cedar", "dune", "elm", "fjord"]


def words(i: int) -> str:
    return " ".join(f"{w}{i}" for w in WORDS)


def gated(handler: Handler, gate: threading.Event) -> Handler:
    """``handler`` once the test opens ``gate`` (at most 60 s later: the server never hangs)."""

    async def handle(req: Request, w: asyncio.StreamWriter) -> None:
        await asyncio.get_running_loop().run_in_executor(None, gate.wait, 60)
        await handler(req, w)

    return handle


def site(gate: threading.Event) -> dict[str, Handler]:
    early = [f"/early/{i}" for i in range(EARLY)]
    late = [f"/late/{i}" for i in range(LATE)]
    routes: dict[str, Handler] = {"/": badweb.html("Home", "Start here.", [*early, late[0]])}
    for i, path in enumerate(early):
        routes[path] = badweb.html(f"Early {i}", words(i), ["/"])
    for i, path in enumerate(late):  # the first late page leads to the others
        links = ["/", "/early/0"] + (late[1:] if i == 0 else [])
        routes[path] = gated(badweb.html(f"Late {i}", words(EARLY + i), links), gate)
    return routes


def _documents(settings: Settings) -> int:
    engine = make_engine(settings.database_url)
    try:
        init_db(engine)  # the crawl may not have created the schema yet
        with session_factory(engine)() as session:
            return int(session.scalar(select(func.count()).select_from(Document)) or 0)
    finally:
        engine.dispose()


def _active_arrays(settings: Settings, path: Path) -> dict[str, np.ndarray]:
    engine = make_engine(settings.database_url)
    try:
        with session_factory(engine)() as session:
            version = active_index(session)
            assert version is not None
            segment = version.segment
    finally:
        engine.dispose()
    arrays, _ = open_segment(open_blobstore(settings.blob_url).download(segment, path))
    return {name: np.asarray(value) for name, value in arrays.items()}


def _crawl_racing(
    settings: Settings, update: Callable[[Settings], UpdateResult]
) -> tuple[Settings, list[UpdateResult], Callable[[str], str]]:
    """Crawl the site while ``update`` runs after each commit seen (a full build first, in the
    middle of the crawl), then once more when it has ended; (the crawl's settings, the
    updates, the URL of a path). Every page is then found by its own words."""
    # A late page's fetch waits at the gate until read_timeout, and is tried again later: the
    # batch it shares with early pages commits without it.
    crawl = settings.with_overrides(
        batch_size=2,
        flush_interval=0.05,
        concurrency=2,
        languages="",
        sitemaps=False,
        feedback_docs=0,
        read_timeout=1.0,
        max_attempts=20,
        retry_backoff=0.1,
    )
    gate = threading.Event()
    with BadWeb(site(gate)) as web:
        failures: list[BaseException] = []

        def crawling() -> None:
            try:
                run_crawl(crawl, [web.url("/")], progress=False, max_pages=200)
            except Exception as exc:  # noqa: BLE001 - shown by the assertion below
                failures.append(exc)

        crawler = threading.Thread(target=crawling)
        crawler.start()
        try:
            # The home page and the early pages are committed; the late ones wait at the gate.
            wait_for(lambda: _documents(crawl) >= 1 + EARLY, timeout=60, what="the early pages")
            build_index(crawl, progress=False)
            gate.set()
            updates = []
            seen = [_documents(crawl)]
            for _ in range(LATE):  # an update after each commit seen, while the crawl goes on
                wait_for(
                    lambda: _documents(crawl) > seen[0] or not crawler.is_alive(), timeout=60, what="a commit"
                )
                if not crawler.is_alive():
                    break
                seen[0] = _documents(crawl)
                updates.append(update(crawl))
        finally:
            gate.set()
            crawler.join(120)
        assert not failures and not crawler.is_alive()
        update(crawl)
        assert _documents(crawl) == 1 + EARLY + LATE
        service = SearchService(crawl, recheck_seconds=0.0)
        for i in range(EARLY + LATE):
            hits = service.search(f"{WORDS[0]}{i} {WORDS[3]}{i}").hits
            path = f"/early/{i}" if i < EARLY else f"/late/{i - EARLY}"
            assert [hit.url for hit in hits] == [web.url(path)], i
        url = web.url
    return crawl, updates, url


def _as_full_build(settings: Settings, incremental: dict[str, np.ndarray], tmp_path: Path) -> None:
    build_index(settings, progress=False)
    full = _active_arrays(settings, tmp_path / "full.nseg")
    for name, value in full.items():
        if name.startswith("vocab_"):
            continue  # spelling counts (services.indexing.segment_merge)
        if name == "pagerank":
            np.testing.assert_allclose(incremental[name], value, rtol=1e-12)
            continue
        np.testing.assert_array_equal(incremental[name], value, err_msg=name)


def test_updates_racing_a_crawl_end_where_a_full_build_does(settings: Settings, tmp_path: Path) -> None:
    crawl, updates, _ = _crawl_racing(settings, lambda s: update_index(s, progress=False))
    assert any(u.new_documents for u in updates), updates  # updates published while the crawl ran
    _as_full_build(crawl, _active_arrays(crawl, tmp_path / "incremental.nseg"), tmp_path)


def test_deltas_racing_a_crawl_then_a_merge_end_where_a_full_build_does(
    settings: Settings, tmp_path: Path
) -> None:
    """The daemon's way: a delta after each commit while the crawl runs (searched beside the
    base: every page found by its own words before any merge), then the merge."""
    crawl, deltas, _ = _crawl_racing(settings, lambda s: publish_delta(s, progress=False))
    assert any(d.version_id is not None for d in deltas), deltas  # published while the crawl ran
    engine = make_engine(crawl.database_url)
    try:
        with session_factory(engine)() as session:
            version = active_index(session)
            assert version is not None and version.delta_segments  # searched above: base + deltas
    finally:
        engine.dispose()
    merged = update_index(crawl, progress=False)
    assert merged.version_id is not None
    _as_full_build(crawl, _active_arrays(crawl, tmp_path / "merged.nseg"), tmp_path)
