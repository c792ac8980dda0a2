"""A crawler process's ``/metrics`` (Prometheus's text format, prometheus-client).

Read on each scrape from the crawler's own state (a collector, not gauges set now and
then): pages requested, bytes, errors, committed counters by name (statuses, policy
decisions), leased batches, URLs waiting in host queues, hosts held. ``NIMBUS_METRICS_PORT``
turns it on; with ``--processes N`` process i answers on that port + i.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

Snapshot = Callable[[], dict[str, Any]]

_GAUGES = {
    "leased_batches": "Fetch batches this process holds",
    "waiting_urls": "Leased URLs waiting in this process's host queues",
    "hosts": "Hosts this process has queues for",
}
_COUNTERS = {
    "pages": "Page requests made (robots.txt and sitemaps excluded)",
    "bytes": "Body bytes fetched",
    "errors": "Host worker failures",
}


class CrawlCollector(Collector):
    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot

    def collect(self) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
        now = self.snapshot()
        for name, help_text in _COUNTERS.items():
            family = CounterMetricFamily(f"nimbus_crawl_{name}", help_text)
            family.add_metric([], float(now.get(name, 0)))
            yield family
        for name, help_text in _GAUGES.items():
            gauge = GaugeMetricFamily(f"nimbus_crawl_{name}", help_text)
            gauge.add_metric([], float(now.get(name, 0)))
            yield gauge
        decisions = CounterMetricFamily(
            "nimbus_crawl_events", "Committed crawl events (statuses, policy decisions)", labels=["event"]
        )
        for name, value in sorted(now.get("committed", {}).items()):
            decisions.add_metric([name], float(value))
        yield decisions


class MetricsServer:
    """The HTTP endpoint of one crawler process; ``close`` stops it."""

    def __init__(self, port: int, snapshot: Snapshot, addr: str) -> None:
        registry = CollectorRegistry()
        registry.register(CrawlCollector(snapshot))
        self.server, self.thread = start_http_server(port, addr=addr, registry=registry)

    @property
    def port(self) -> int:
        return int(self.server.server_port)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)
