"""A crawler process's ``/metrics`` (Prometheus's text format, prometheus-client).

Read on each scrape from the crawler's own state (a collector, not gauges set now and
then): pages requested, bytes, errors, committed counters by name (statuses, policy
decisions), documents by type, errors by kind, a histogram of fetch latency, leased
batches, URLs waiting in host queues, hosts held; a cluster's committer adds batches
committed, acknowledged batches waiting and its election term. ``NIMBUS_METRICS_PORT``
turns it on; with ``--processes N`` worker i answers on that port + i and the committer
on that port + N.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.registry import Collector

Snapshot = Callable[[], dict[str, Any]]

# Seconds from sending a request to having its body: loopback in milliseconds, the web in
# tens of ms to the fetch timeout.
FETCH_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class LatencyHistogram:
    """Request latencies as bucket counts, kept by the crawl loop (one add per request, no
    locks: the event loop's thread writes, a scrape reads a copy)."""

    def __init__(self, buckets: tuple[float, ...] = FETCH_BUCKETS) -> None:
        self.buckets = buckets
        self.counts = [0] * (len(buckets) + 1)  # the last: above every bucket
        self.sum = 0.0

    def observe(self, seconds: float) -> None:
        self.counts[bisect.bisect_left(self.buckets, seconds)] += 1
        self.sum += seconds

    def family(self, name: str, help_text: str) -> HistogramMetricFamily:
        cumulative, total = [], 0
        for bound, count in zip([*map(str, self.buckets), "+Inf"], list(self.counts), strict=True):
            total += count
            cumulative.append((bound, total))
        return HistogramMetricFamily(name, help_text, buckets=cumulative, sum_value=self.sum)


_GAUGES = {
    "leased_batches": "Fetch batches this process holds",
    "waiting_urls": "Leased URLs waiting in this process's host queues",
    "hosts": "Hosts this process has queues for",
    "acked_waiting": "Committer: acknowledged batches waiting for their turn",
    "term": "Committer: its election term (0: standing by)",
}
_COUNTERS = {
    "pages": "Page requests made (robots.txt and sitemaps excluded)",
    "bytes": "Body bytes fetched",
    "errors": "Host worker failures",
    "documents": "Documents committed",
    "batches_committed": "Committer: fetch batches committed",
}
_TYPES = ("html", "pdf", "text", "other")


class CrawlCollector(Collector):
    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot

    def collect(self) -> Iterator[GaugeMetricFamily | CounterMetricFamily | HistogramMetricFamily]:
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
        fetched = CounterMetricFamily(
            "nimbus_crawl_documents_fetched", "Pages fetched that became documents, by type", labels=["type"]
        )
        for kind in _TYPES:
            fetched.add_metric([kind], float(now.get(kind, 0)))
        yield fetched
        latency = now.get("fetch_latency")
        if isinstance(latency, LatencyHistogram):
            yield latency.family("nimbus_crawl_fetch_seconds", "Time to fetch a page (request to body)")
        errors = CounterMetricFamily(
            "nimbus_crawl_fetch_errors", "Fetches that failed or answered >= 400, by kind", labels=["kind"]
        )
        for name, value in sorted(now.items()):
            if name.startswith("errors_"):
                errors.add_metric([name.removeprefix("errors_")], float(value))
        yield errors


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
