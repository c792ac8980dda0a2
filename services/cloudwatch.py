"""CloudWatch custom metrics: what the stack's alarms and dashboard read about the application.

AWS measures the load balancer, the instances and the database by itself; whether the crawl
still commits pages, how old the served index is and whether index builds fail are known
only to Nimbus's own processes, which publish them here (namespace and the stack's name
from ``DeploySettings``). Publishing never stops the work it reports on: a failed call is
logged and counted, and the next one is tried as usual. With no namespace configured (the
embedded default) nothing is sent.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from services.config import Settings

log = logging.getLogger(__name__)

SOON_QUEUE = 100  # data points waiting for the sender thread at most (about 1.5 h of one a minute)

# Metric names the stack's alarms and dashboard use (infra/nimbus.yaml): renaming one here
# silences its alarm, so they are constants shared by publishers and template tests.
PAGES_COMMITTED = "PagesCommitted"  # Sum per minute, by the elected committer
CRAWL_PAUSED = "CrawlPaused"  # 1 a minute while the operator has paused the crawl (the stall alarm's excuse)
INDEX_AGE = "IndexAgeSeconds"  # Maximum: seconds since the active segment was published
INDEX_BUILD_FAILURES = "IndexBuildFailures"  # Sum: builds that ended failed
INDEX_BUILDS_SUCCEEDED = "IndexBuildsSucceeded"  # Sum: builds that published a segment
STACK_DIMENSION = "Stack"


@dataclass(frozen=True)
class Datum:
    name: str
    value: float
    unit: str = "Count"


class MetricsPublisher:
    """Puts data points under one namespace with the stack's dimension; a no-op when off."""

    def __init__(self, namespace: str, stack: str, client_factory: Callable[[], Any]) -> None:
        self.namespace = namespace
        self.dimensions = [{"Name": STACK_DIMENSION, "Value": stack}] if stack else []
        self._client_factory = client_factory
        self._client: Any = None
        self._lock = threading.Lock()
        self.failures = 0
        self.dropped = 0  # data points publish_soon could not queue
        self._soon: queue.Queue[tuple[Datum, ...]] = queue.Queue(SOON_QUEUE)
        self._pending = 0  # queued by publish_soon and not yet sent or refused
        self._idle = threading.Condition()
        self._sender: threading.Thread | None = None

    @property
    def enabled(self) -> bool:
        return bool(self.namespace)

    def publish(self, *data: Datum) -> bool:
        """Send ``data`` in one call; False (and a warning) when CloudWatch refused it."""
        if not self.enabled or not data:
            return False
        metric_data = [
            {"MetricName": d.name, "Value": float(d.value), "Unit": d.unit, "Dimensions": self.dimensions}
            for d in data
        ]
        try:
            with self._lock:
                if self._client is None:
                    self._client = self._client_factory()
                client = self._client
            client.put_metric_data(Namespace=self.namespace, MetricData=metric_data)
        except Exception as exc:  # noqa: BLE001 - any SDK or network failure: reported, never raised
            self.failures += 1
            log.warning("CloudWatch put_metric_data to %s failed: %s", self.namespace, exc)
            return False
        return True

    def publish_soon(self, *data: Datum) -> bool:
        """``publish`` from a thread of its own, so that a slow or unreachable CloudWatch never
        holds up the caller (a committer that must renew its lease every few seconds, an
        indexer heartbeating its build). Calls go out one at a time, in order; False (and a
        warning) when off, or when the queue is full and ``data`` is dropped."""
        if not self.enabled or not data:
            return False
        with self._idle:
            try:
                self._soon.put_nowait(data)
            except queue.Full:
                self.dropped += len(data)
                log.warning("CloudWatch is not keeping up: %d data points dropped", len(data))
                return False
            self._pending += 1
            if self._sender is None:
                self._sender = threading.Thread(target=self._send_queued, name="cloudwatch", daemon=True)
                self._sender.start()
        return True

    def drain(self, timeout: float) -> bool:
        """Wait until everything ``publish_soon`` queued was sent or refused (a clean stop);
        False when ``timeout`` seconds passed first."""
        with self._idle:
            return self._idle.wait_for(lambda: self._pending == 0, timeout)

    def _send_queued(self) -> None:
        while True:
            data = self._soon.get()
            self.publish(*data)
            with self._idle:
                self._pending -= 1
                self._idle.notify_all()


def metrics_publisher(settings: Settings) -> MetricsPublisher:
    """The publisher of this process's settings (off unless NIMBUS_CLOUDWATCH_NAMESPACE is set)."""

    def client() -> Any:
        import boto3
        from botocore.config import Config

        # Seconds, not boto's minutes (60 s timeouts, retried): an unreachable endpoint costs
        # each call about half a minute at most, and the next one is tried as usual.
        bounded = Config(connect_timeout=5, read_timeout=10, retries={"mode": "standard", "max_attempts": 2})
        return boto3.client(
            "cloudwatch",
            region_name=settings.aws_region,
            endpoint_url=settings.aws_endpoint_url,
            config=bounded,
        )

    return MetricsPublisher(settings.deploy.cloudwatch_namespace, settings.deploy.stack_name, client)
