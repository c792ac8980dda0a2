"""A small site crawled, indexed and served on embedded defaults: what a browser test looks at."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from services.config import Settings
from services.demo.sampleweb import Site, SiteServer
from tests.e2e.serving import serving


def local_settings(root: Path, **overrides: Any) -> Settings:
    """Embedded defaults under ``root``: SQLite, ``file://`` blobs, inline MapReduce, no
    politeness delay, loopback only."""
    values: dict[str, Any] = {
        "database_url": f"sqlite:///{root / 'nimbus.db'}",
        "blob_url": f"file://{root / 'blobs'}",
        "mr_runner": "inline",
        "var_dir": root / "var",
        "crawl_delay": 0.0,
        "allowed_hosts": "127.0.0.1",
    }
    return Settings.of(**(values | overrides))


@contextmanager
def crawled_and_served(site: Site, root: Path, max_pages: int, **overrides: Any) -> Iterator[str]:
    """``site`` served on loopback, crawled from its home page, indexed, and the search app
    serving the result: its address."""
    from services.crawler.crawl import run_crawl
    from services.indexing.build import build_index
    from services.search.http.app import create_app

    settings = local_settings(root, **overrides)
    server = SiteServer(site).start()
    try:
        run_crawl(settings, [server.origin + "/"], max_pages=max_pages, progress=False)
        build_index(settings, progress=False)
    finally:
        server.stop()
    with serving(create_app(settings)) as url:
        yield url
