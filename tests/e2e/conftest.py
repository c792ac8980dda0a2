"""One crawled, indexed sample web shared by the end-to-end tests of a session."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from services.config import Settings
from services.demo.sampleweb import SiteServer, start_sample_web
from tests.e2e.crawled_site import local_settings

SAMPLE_DATA = Path(__file__).resolve().parents[2] / "data"


@dataclass
class Pipeline:
    settings: Settings
    wiki: SiteServer
    iana: SiteServer
    pages: int  # page requests made (404s included)
    documents: int


@pytest.fixture(scope="session", autouse=True)
def compiled_kernels() -> None:
    """The search kernels compiled (or loaded from numba's cache) before any server's start is
    timed: a fresh clone compiles them here once, not inside uvicorn's 30 s to start."""
    from services.search.retrieval.segment import warm_kernels

    warm_kernels()


@pytest.fixture(scope="session")
def pipeline(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pipeline]:
    """Sample web on loopback -> real crawl over HTTP -> MapReduce index + PageRank (inline)."""
    from services.crawler.crawl import run_crawl
    from services.indexing.build import build_index

    root: Path = tmp_path_factory.mktemp("pipeline")
    settings = local_settings(root)  # loopback only: the IANA pages link the real web
    wiki, iana = start_sample_web(SAMPLE_DATA)
    try:
        stats = run_crawl(settings, [wiki.origin + "/"], max_pages=5000, progress=False)
        build_index(settings, progress=False)
        yield Pipeline(settings, wiki, iana, stats.pages, stats.counters.get("documents", 0))
    finally:
        wiki.stop()
        iana.stop()


CHROMIUM = Path("/usr/bin/chromium")  # Debian's; Playwright's own download does not work offline


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    """One headless Chromium per test module, driven by Playwright."""
    if not CHROMIUM.exists():
        pytest.fail("Chromium missing: run `make services` (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=str(CHROMIUM),
            args=[
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
            ],
        )
        yield browser
        browser.close()


@pytest.fixture(scope="session")
def artifacts() -> Path:
    """Screenshots to look at after a run: var/test-artifacts (never committed)."""
    path = Path(__file__).resolve().parents[2] / "var" / "test-artifacts"
    path.mkdir(parents=True, exist_ok=True)
    return path
