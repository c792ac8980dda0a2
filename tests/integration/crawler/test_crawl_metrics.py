"""A crawler process's /metrics: scraped while it crawls, in Prometheus's text format."""

from __future__ import annotations

import socket
import threading
import time
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

from services.config import Settings
from services.crawler.cluster import heartbeat
from services.crawler.crawl import run_crawl
from services.storage.sql.engines import make_engine, session_factory
from services.storage.sql.schema import init_db
from tests.integration.crawler.slow_chain import PAGES
from tests.polling import wait_for


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _scrape(port: int) -> dict[str, float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        text = response.read().decode()
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            key = s.name + "".join(f"[{v}]" for v in s.labels.values())
            out[key] = s.value
    return out


def test_metrics_while_crawling(settings: Settings, slow_site) -> None:
    base, _gate, _asked = slow_site
    port = _free_port()
    quick = settings.with_overrides(
        sitemaps=False, metrics_port=port, heartbeat_seconds=0.1, max_pages=PAGES, max_depth=PAGES,
        flush_interval=0.2,
    )  # fmt: skip
    engine = make_engine(quick.database_url)
    init_db(engine)
    crawl = threading.Thread(target=lambda: run_crawl(quick, [base + "/0"], progress=False))
    crawl.start()
    try:

        def scraped_pages() -> float:
            try:
                return _scrape(port).get("nimbus_crawl_pages_total", 0.0)
            except OSError:  # not listening yet
                return 0.0

        wait_for(lambda: scraped_pages() >= 20, timeout=30, what="pages counted in /metrics")
        wait_for(lambda: _scrape(port).get("nimbus_crawl_events_total[status_200]", 0) >= 10, timeout=30,
                 what="committed statuses in /metrics")  # fmt: skip
        now = _scrape(port)
        assert now["nimbus_crawl_bytes_total"] > 0 and "nimbus_crawl_leased_batches" in now
        assert now["nimbus_crawl_documents_fetched_total[html]"] >= 10
        assert now["nimbus_crawl_documents_fetched_total[pdf]"] == 0
        fetches = now["nimbus_crawl_fetch_seconds_count"]
        assert fetches >= 10 and now["nimbus_crawl_fetch_seconds_bucket[+Inf]"] == fetches
        assert 0 < now["nimbus_crawl_fetch_seconds_sum"] < fetches * 30

        # The heartbeat carries the same counts: pages by type, for the dashboard's node table.
        # It is written on its own beat, so it may lag /metrics by one: wait for the beat.
        def beat_counters() -> dict[str, float]:
            with session_factory(engine)() as session:
                [node] = heartbeat.nodes(session, time.time(), 0.1)
            return node.counters

        wait_for(lambda: beat_counters().get("html", 0) >= 10, timeout=30, what="html pages in the heartbeat")
        assert "waiting_urls" in beat_counters()
    finally:
        with session_factory(engine).begin() as session:
            heartbeat.command(session, "stop", time.time())
        crawl.join(timeout=30)
        engine.dispose()
    assert not crawl.is_alive()
    try:
        _scrape(port)
        raise AssertionError("the metrics endpoint outlived the crawl")
    except OSError:
        pass  # closed with the crawl
