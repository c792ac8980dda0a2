"""`nimbus demo`: the whole pipeline on embedded defaults, offline.

Serves the sample web on loopback, crawls it with the real crawler over HTTP,
builds the index and PageRank with the MapReduce jobs, then serves the UI.
The demo keeps its own state under ``var/demo`` (reset on every run) so the
ephemeral ports of the sample web never mix with an earlier crawl.
"""

from __future__ import annotations

import shutil
import socket
import sys
import time
from pathlib import Path

from services.config import Settings
from services.demo.errors import SampleDataMissingError
from services.demo.sampleweb import SiteServer
from services.search.http.listen import bound_port, listen


def demo_settings(base: Settings, var_dir: Path) -> Settings:
    """Embedded backends under ``var_dir``; no politeness delay against our own loopback sites."""
    return base.with_overrides(
        database_url=f"sqlite:///{var_dir / 'nimbus.db'}",
        blob_url=f"file://{var_dir / 'blobs'}",
        var_dir=var_dir,
        crawl_delay=0.0,
        allowed_hosts="127.0.0.1",  # the IANA pages link the real web; stay offline
    )


def prepare(
    settings: Settings,
    data_dir: Path,
    *,
    max_pages: int = 5000,
    wiki_limit: int | None = None,
    progress: bool = True,
    keep_serving: list[SiteServer] | None = None,
) -> dict[str, float]:
    """Crawl the sample web into ``settings``' stores and build the index; returns stage timings.

    With ``keep_serving`` (a list), the sample web's servers stay up and are appended to it, so
    the demo's result links lead somewhere; the caller stops them."""
    from services.crawler.crawl import run_crawl
    from services.demo.sampleweb import start_sample_web
    from services.indexing.build import build_index

    timings: dict[str, float] = {}
    start = time.perf_counter()
    servers = start_sample_web(data_dir, wiki_limit=wiki_limit)
    timings["sample_web"] = time.perf_counter() - start
    try:
        start = time.perf_counter()
        stats = run_crawl(settings, [s.origin + "/" for s in servers], max_pages=max_pages, progress=progress)
        timings["crawl"] = time.perf_counter() - start
        timings["pages"] = stats.pages
    finally:
        if keep_serving is None:
            for server in servers:
                server.stop()
        else:
            keep_serving.extend(servers)
    start = time.perf_counter()
    build_index(settings, progress=progress)
    timings["index"] = time.perf_counter() - start
    return timings


def check_sample_data(data_dir: Path) -> None:
    """Fail with what to do, before any server starts, when ``data_dir`` lacks the sample web."""
    from services.demo.sampleweb import IANA_WARC, PDFS, WIKI_DUMP

    missing = [p for p in (IANA_WARC, WIKI_DUMP, *PDFS) if not (data_dir / p).is_file()]
    if missing:
        raise SampleDataMissingError(
            f"sample data not found in {data_dir} (missing {', '.join(map(str, missing))}): run from a "
            "checkout of the repository (its data/ directory) or pass --data DIR"
        )


def run_demo(base: Settings, data_dir: Path) -> None:
    """Check what can fail in a second (the sample data, the UI's port: bound here and held)
    before the crawl and the build, which take about 20 s, then serve until Ctrl-C."""
    check_sample_data(data_dir)
    sock = listen(base.host, base.search.port)
    try:
        var_dir = base.var_dir / "demo"
        shutil.rmtree(var_dir, ignore_errors=True)
        settings = demo_settings(base, var_dir)
        servers: list[SiteServer] = []
        try:
            timings = prepare(settings, data_dir, keep_serving=servers)
            _serve(settings, sock, timings, servers)
        finally:
            for server in servers:
                server.stop()
    finally:
        sock.close()


def _serve(
    settings: Settings, sock: socket.socket, timings: dict[str, float], servers: list[SiteServer]
) -> None:
    import uvicorn

    from services.search.http.app import create_app

    print(
        f"demo: crawled {int(timings['pages'])} pages in {timings['crawl']:.1f} s, "
        f"indexed in {timings['index']:.1f} s",
        file=sys.stderr,
    )
    print(
        f"Nimbus Search demo is serving on http://{settings.host}:{bound_port(sock)}/ (Ctrl-C to stop); "
        f"the sample web it crawled stays up at {', '.join(s.origin + '/' for s in servers)}",
        flush=True,
    )
    config = uvicorn.Config(create_app(settings), log_level="warning")
    uvicorn.Server(config).run(sockets=[sock])
