"""The CloudWatch publisher: data points in the stack's namespace, never an exception."""

from __future__ import annotations

import boto3
import pytest
from moto import mock_aws

from services.cloudwatch import INDEX_AGE, PAGES_COMMITTED, Datum, MetricsPublisher, metrics_publisher
from services.config import Settings


@pytest.fixture
def aws(monkeypatch):
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(name, value)
    with mock_aws():
        yield boto3.client("cloudwatch", region_name="us-east-1")


def test_data_points_arrive_under_the_namespace_with_the_stack_dimension(aws) -> None:
    settings = Settings.of(aws_region="us-east-1", cloudwatch_namespace="Nimbus", stack_name="prod")
    publisher = metrics_publisher(settings)
    assert publisher.publish(Datum(PAGES_COMMITTED, 42), Datum(INDEX_AGE, 3600, "Seconds"))
    metrics = aws.list_metrics(Namespace="Nimbus")["Metrics"]
    assert {m["MetricName"] for m in metrics} == {PAGES_COMMITTED, INDEX_AGE}
    assert all(m["Dimensions"] == [{"Name": "Stack", "Value": "prod"}] for m in metrics)


def test_without_a_namespace_nothing_is_sent() -> None:
    def never():
        raise AssertionError("no client may be made when publishing is off")

    publisher = MetricsPublisher("", "prod", never)
    assert not publisher.enabled
    assert publisher.publish(Datum(PAGES_COMMITTED, 1)) is False


def test_a_refused_call_is_counted_and_never_raised() -> None:
    class Refusing:
        def put_metric_data(self, **_: object) -> None:
            raise RuntimeError("AccessDenied")

    publisher = MetricsPublisher("Nimbus", "prod", Refusing)
    assert publisher.publish(Datum(PAGES_COMMITTED, 1)) is False
    assert publisher.publish(Datum(PAGES_COMMITTED, 1)) is False
    assert publisher.failures == 2


def test_publish_soon_never_waits_for_a_hung_cloudwatch() -> None:
    import threading

    from services.cloudwatch import SOON_QUEUE

    entered, release = threading.Event(), threading.Event()
    sent: list[float] = []

    class Hung:
        def put_metric_data(self, Namespace: str, MetricData: list[dict]) -> None:  # noqa: N803 - boto3's names
            entered.set()
            release.wait(30)
            sent.extend(d["Value"] for d in MetricData)

    publisher = MetricsPublisher("Nimbus", "prod", Hung)
    # One call in flight, SOON_QUEUE waiting: returned at once each time; the next is dropped.
    assert publisher.publish_soon(Datum(PAGES_COMMITTED, 0))
    assert entered.wait(30)
    assert all(publisher.publish_soon(Datum(PAGES_COMMITTED, i)) for i in range(1, SOON_QUEUE + 1))
    assert not publisher.drain(0.05)
    assert publisher.publish_soon(Datum(PAGES_COMMITTED, -1)) is False and publisher.dropped == 1
    release.set()
    assert publisher.drain(30)
    assert sent == list(range(SOON_QUEUE + 1))  # in order, none lost but the dropped one
