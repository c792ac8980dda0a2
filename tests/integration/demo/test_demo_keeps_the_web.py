"""The demo's result links lead somewhere: the sample web stays up while the demo serves."""

from __future__ import annotations

import urllib.request
from pathlib import Path

from services.config import Settings
from services.demo.run import demo_settings, prepare
from services.demo.sampleweb import SiteServer


def test_prepare_can_leave_the_sample_web_serving(sample_data: Path, tmp_path: Path) -> None:
    settings = demo_settings(Settings.of(mr_runner="inline"), tmp_path / "demo")
    servers: list[SiteServer] = []
    try:
        prepared = prepare(
            settings, sample_data, max_pages=40, wiki_limit=5, progress=False, keep_serving=servers
        )
        assert prepared.crawl.pages > 0 and len(servers) == 2
        for server in servers:  # after the crawl and the build, still answering
            with urllib.request.urlopen(server.origin + "/", timeout=10) as resp:
                assert resp.status == 200
    finally:
        for server in servers:
            server.stop()
