"""A crawl cluster's elected committer reports the pages it committed to CloudWatch (moto),
with the stack's dimension; a CloudWatch that cannot be reached changes nothing in the crawl."""

from __future__ import annotations

import uuid

import boto3
import pytest

from services.cloudwatch import PAGES_COMMITTED
from services.crawler.local_cluster import run_local_cluster
from services.demo.sampleweb import Resource, Site, SiteServer


@pytest.fixture
def site():
    links = "".join(f"<a href='/p{i}'>page {i}</a>" for i in range(5))
    resources = {"/": Resource("text/html", f"<title>home</title>{links}".encode())}
    for i in range(5):
        resources[f"/p{i}"] = Resource("text/html", f"<title>page {i}</title><p>wing {i}</p>".encode())
    server = SiteServer(Site("t", resources)).start()
    yield server
    server.stop()


@pytest.mark.parametrize("cloudwatch", ["moto", "unreachable"])
def test_the_committer_reports_pages_committed(settings, site, moto_server, cloudwatch) -> None:
    stack = f"t-{uuid.uuid4().hex[:8]}"
    endpoint = moto_server if cloudwatch == "moto" else "http://127.0.0.1:9"  # discard: refused
    reporting = settings.with_overrides(
        cloudwatch_namespace="Nimbus", stack_name=stack, aws_endpoint_url=endpoint, aws_region="us-east-1"
    )
    stats = run_local_cluster(reporting, [site.origin + "/"], 2, max_pages=50, progress=False)
    assert stats.pages == 6  # every page committed, whatever CloudWatch did
    if cloudwatch == "unreachable":
        return
    client = boto3.client("cloudwatch", endpoint_url=moto_server, region_name="us-east-1")
    dimensions = [{"Name": "Stack", "Value": stack}]
    (metric,) = client.list_metrics(Namespace="Nimbus", Dimensions=dimensions)["Metrics"]
    assert metric["MetricName"] == PAGES_COMMITTED and metric["Dimensions"] == dimensions
    points = client.get_metric_statistics(
        Namespace="Nimbus",
        MetricName=PAGES_COMMITTED,
        Dimensions=dimensions,
        StartTime=0,
        EndTime=4102444800,  # 2100
        Period=60,
        Statistics=["Sum"],
    )["Datapoints"]
    assert sum(p["Sum"] for p in points) == 6
