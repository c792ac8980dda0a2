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
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from services.config import Settings

log = logging.getLogger(__name__)

# Metric names the stack's alarms and dashboard use (infra/nimbus.yaml): renaming one here
# silences its alarm, so they are constants shared by publishers and template tests.
PAGES_COMMITTED = "PagesCommitted"  # Sum per minute, by the elected committer
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


def metrics_publisher(settings: Settings) -> MetricsPublisher:
    """The publisher of this process's settings (off unless NIMBUS_CLOUDWATCH_NAMESPACE is set)."""

    def client() -> Any:
        import boto3

        return boto3.client(
            "cloudwatch", region_name=settings.aws_region, endpoint_url=settings.aws_endpoint_url
        )

    return MetricsPublisher(settings.deploy.cloudwatch_namespace, settings.deploy.stack_name, client)
