"""`nimbus demo`: the whole pipeline on embedded defaults, offline.

Serves the sample web on loopback, crawls it with the real crawler over HTTP,
builds the index and PageRank with the MapReduce jobs, then serves the UI.
The demo keeps its own state under ``var/demo`` (reset on every run) so the
ephemeral ports of the sample web never mix with an earlier crawl.
"""

from __future__ import annotations

import secrets
import shutil
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from services.config import Settings
from services.crawler.report.progress import CrawlStats
from services.demo.errors import SampleDataMissingError
from services.demo.report import admin_lines, crawl_summary
from services.demo.sampleweb import SiteServer
from services.search.http.listen import bound_port, listen

ASGIApplication = Any  # a FastAPI app, or any ASGI callable uvicorn serves
AppFactory = Callable[[Settings], ASGIApplication]


def demo_settings(base: Settings, var_dir: Path) -> Settings:
    """Embedded backends under ``var_dir``; no politeness delay against our own loopback sites."""
    return base.with_overrides(
        database_url=f"sqlite:///{var_dir / 'nimbus.db'}",
        blob_url=f"file://{var_dir / 'blobs'}",
        var_dir=var_dir,
        crawl_delay=0.0,
        allowed_hosts="127.0.0.1",  # the IANA pages link the real web; stay offline
    )


@dataclass
class Prepared:
    """What ``prepare`` did: each stage's seconds (sample_web, crawl, index) and the crawl's totals."""

    seconds: dict[str, float]
    crawl: CrawlStats


def prepare(
    settings: Settings,
    data_dir: Path,
    *,
    max_pages: int = 5000,
    wiki_limit: int | None = None,
    progress: bool = True,
    keep_serving: list[SiteServer] | None = None,
) -> Prepared:
    """Crawl the sample web into ``settings``' stores and build the index.

    With ``keep_serving`` (a list), the sample web's servers stay up and are appended to it, so
    the demo's result links lead somewhere; the caller stops them."""
    from services.crawler.crawl import run_crawl
    from services.demo.sampleweb import start_sample_web
    from services.indexing.build import build_index

    seconds: dict[str, float] = {}
    start = time.perf_counter()
    servers = start_sample_web(data_dir, wiki_limit=wiki_limit)
    seconds["sample_web"] = time.perf_counter() - start
    try:
        start = time.perf_counter()
        stats = run_crawl(settings, [s.origin + "/" for s in servers], max_pages=max_pages, progress=progress)
        seconds["crawl"] = time.perf_counter() - start
    finally:
        if keep_serving is None:
            for server in servers:
                server.stop()
        else:
            keep_serving.extend(servers)
    start = time.perf_counter()
    build_index(settings, progress=progress)
    seconds["index"] = time.perf_counter() - start
    return Prepared(seconds, stats)


def check_sample_data(data_dir: Path) -> None:
    """Fail with what to do, before any server starts, when ``data_dir`` lacks the sample web."""
    from services.demo.sampleweb import IANA_WARC, PDFS, WIKI_DUMP

    missing = [p for p in (IANA_WARC, WIKI_DUMP, *PDFS) if not (data_dir / p).is_file()]
    if missing:
        raise SampleDataMissingError(
            f"sample data not found in {data_dir} (missing {', '.join(map(str, missing))}): run from a "
            "checkout of the repository (its data/ directory) or pass --data DIR"
        )


def run_demo(base: Settings, data_dir: Path, make_app: AppFactory) -> None:
    """Check what can fail in a second (the sample data, the UI's port: bound here and held)
    before the crawl and the build, which take about 20 s, then serve ``make_app``'s app (the
    search UI with the admin dashboard: the CLI passes it, the demo cannot import the admin)
    until Ctrl-C. The dashboard's token is ``NIMBUS_ADMIN_TOKEN``, or one made for this run."""
    check_sample_data(data_dir)
    sock = listen(base.host, base.search.port)
    try:
        var_dir = base.var_dir / "demo"
        shutil.rmtree(var_dir, ignore_errors=True)
        token = base.search.admin_token or secrets.token_urlsafe(18)
        settings = demo_settings(base, var_dir).with_overrides(admin_token=token)
        servers: list[SiteServer] = []
        try:
            prepared = prepare(settings, data_dir, keep_serving=servers)
            origin = f"http://{settings.host}:{bound_port(sock)}/"
            for line in banner(prepared, origin, servers, generated=not base.search.admin_token, token=token):
                print(line, flush=True)
            _serve(make_app(settings), sock)
        finally:
            for server in servers:
                server.stop()
    finally:
        sock.close()


def banner(
    prepared: Prepared, origin: str, servers: list[SiteServer], *, generated: bool, token: str
) -> list[str]:
    """What the demo prints once it serves: what was crawled, where the UI and the admin are."""
    return [
        crawl_summary(prepared.crawl, prepared.seconds["index"]),
        f"Nimbus Search demo is serving on {origin} (Ctrl-C to stop); the sample web it crawled "
        f"stays up at {', '.join(s.origin + '/' for s in servers)}",
        *admin_lines(origin, token, generated),
    ]


def _serve(app: ASGIApplication, sock: socket.socket) -> None:
    import uvicorn

    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])
