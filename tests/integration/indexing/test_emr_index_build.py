"""Index builds on EMR end to end on moto: AWS mode, from crawl to query.

A loopback site is crawled into S3 (moto) and MariaDB; the indexer's daemon takes a
requested build and submits its jobs through mrjob's EMR runner, the nodes installing the
release bundle from S3 as on the stack; the test plays the cluster, running every
submitted streaming step for real (emr_cluster.py); the publish step writes the segment to
S3, and the search service answers a query from it. A second build, as a developer's
`nimbus index --runner emr` from a checkout, ships a wheel built here instead.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from urllib.parse import urlparse

import boto3
import pytest
from fastapi.testclient import TestClient

from services.config import Settings
from services.crawler.crawl import run_crawl
from services.demo.sampleweb import Resource, Site, SiteServer
from services.indexing import builds
from services.indexing.build import build_index
from services.indexing.daemon import IndexDaemon
from services.indexing.errors import JobError
from services.search.http.app import create_app
from services.storage.sql.engines import make_engine, session_factory
from tests.integration.indexing.emr_cluster import PlayedCluster

pytestmark = pytest.mark.mariadb  # AWS mode: the metadata is on MariaDB

PAGES = {
    "/": "<html lang=en><title>Aircraft wings</title><p>How swept wings delay compressibility drag "
    "at high subsonic speeds.</p><a href='/flaps'>flaps</a> <a href='/engines'>jet engines</a></html>",
    "/flaps": "<html lang=en><title>Flaps and slats</title><p>Flaps raise the lift of a wing at low "
    "speed for take-off and landing.</p><a href='/'>wings</a></html>",
    "/engines": "<html lang=en><title>Jet engines</title><p>Turbofan engines move a large mass of air "
    "slowly, which is quieter and more efficient.</p><a href='/'>wings</a></html>",
    "/gliders": "<html lang=en><title>Gliders</title><p>Sailplanes have no engine: the pilot finds rising "
    "air in thermals and ridge lift to stay aloft for hours.</p></html>",  # linked from nowhere
}


@pytest.fixture
def site():
    server = SiteServer(Site("t", {p: Resource("text/html", b.encode()) for p, b in PAGES.items()}))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def aws(moto_server: str, tmp_path: Path, mysql_url: str) -> Settings:
    """AWS mode: blocks and segments in S3 (moto), metadata in MariaDB, jobs on "EMR"."""
    bucket = f"nimbus-emr-{uuid.uuid4().hex[:8]}"
    boto3.client("s3", endpoint_url=moto_server, region_name="us-east-1").create_bucket(Bucket=bucket)
    return Settings.of(
        database_url=mysql_url,
        blob_url=f"s3://{bucket}/nimbus",
        aws_endpoint_url=moto_server,
        aws_region="us-east-1",
        mr_runner="emr",
        emr_service_role="nimbus-EmrServiceRole-TEST",
        emr_instance_profile="nimbus-EmrInstanceProfile-TEST",
        emr_subnet="subnet-12345678",
        var_dir=tmp_path / "var",
        crawl_delay=0.0,
        allowed_hosts="127.0.0.1",
        sitemaps=False,
        pagerank_engine="mapreduce",  # every stage on the cluster, PageRank too
        pagerank_max_iterations=3,
    )


@pytest.fixture
def release(moto_server: str) -> str:
    """A release bundle in the stack's artifacts bucket, as `nimbus deploy` uploads it (its
    files are never installed here: the played cluster's nodes already run this checkout)."""
    bucket = f"nimbus-artifacts-{uuid.uuid4().hex[:8]}"
    s3 = boto3.client("s3", endpoint_url=moto_server, region_name="us-east-1")
    s3.create_bucket(Bucket=bucket)
    prefix = "releases/0.1.0-0123456789ab"
    for name in ("requirements.txt", "wheelhouse/mrjob-0.7.4-py2.py3-none-any.whl", "release.json"):
        s3.put_object(Bucket=bucket, Key=f"{prefix}/{name}", Body=b"fake")
    return f"s3://{bucket}/{prefix}/"


def _request_and_run(settings: Settings) -> builds.BuildView | None:
    """What `nimbus index now` and the indexer's daemon do, once."""
    engine = make_engine(settings.database_url)
    try:
        with session_factory(engine).begin() as session:
            builds.request_build(session, "alice", 1.0)
    finally:
        engine.dispose()
    daemon = IndexDaemon(settings)
    try:
        return daemon.step()
    finally:
        daemon.close()


def test_crawl_to_s3_build_on_emr_publish_and_query(
    aws: Settings, site, moto_server, release, capsys
) -> None:
    stats = run_crawl(aws, [site.origin + "/"], progress=False)
    assert stats.pages == 3
    indexer = aws.with_overrides(
        release_url=release, emr_master_sg="sg-master", emr_slave_sg="sg-slave", emr_service_sg="sg-service"
    )
    with PlayedCluster(moto_server) as cluster:
        ended = _request_and_run(indexer)
    assert not cluster.errors, cluster.errors
    assert ended is not None and (ended.state, ended.runner, ended.error) == ("succeeded", "emr", "")
    assert "build: 4/4 publish" in ended.progress
    assert "emr:" in ended.progress  # mrjob's cluster and step states reached the build's row
    names = [name for name, state in cluster.done if state == "COMPLETED"]
    jobs = {name.split(".")[0] + name.split(".")[-1].split(":")[0] for name in names}
    clusters = cluster.clusters()
    assert len(clusters) < len(jobs)  # jobs joined the build's pooled cluster
    for emr in clusters:
        assert emr.release_label == aws.index.emr_release_label
        assert (emr.service_role, emr.role) == (aws.deploy.emr_service_role, aws.deploy.emr_instance_profile)
        groups = (emr.master_security_group, emr.slave_security_group, emr.service_access_security_group)
        assert groups == ("sg-master", "sg-slave", "sg-service")  # EMR makes none of its own
        actions = {a.name: a for a in emr.bootstrap_actions}
        assert actions["idle timeout"].args == ["600"]  # a forgotten cluster stops itself
        script = cluster.bootstrap[emr.id]["master"]  # mrjob's bootstrap script, as uploaded
        assert "sudo dnf install -y -q python3.11" in script
        assert (
            f"aws s3 cp --recursive --only-show-errors --region us-east-1 {release} /tmp/nimbus-release/"
            in script
        )
        install = next(line for line in script.splitlines() if "pip install" in line)
        assert "--no-index --find-links /tmp/nimbus-release/wheelhouse --require-hashes" in install
        assert "-r /tmp/nimbus-release/requirements.txt" in install
        assert "nimbus_search-" not in script and "mrjob.zip" not in script  # nothing from this machine
    assert any("mr_linkgraph" in n for n in names) and any("mr_index" in n for n in names)
    assert any("mr_pagerank" in n for n in names)

    s3 = boto3.client("s3", endpoint_url=moto_server, region_name="us-east-1")
    bucket = urlparse(aws.blob_url).netloc
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket, Prefix="nimbus/index/").get("Contents", [])]
    assert any(k.endswith(".nseg") for k in keys)

    with TestClient(create_app(aws, recheck_seconds=0)) as client:  # the search service, served
        hits = client.get("/api/search", params={"q": "turbofan engines"}).json()["hits"]
        assert hits and hits[0]["url"] == site.origin + "/engines"
        first = client.get("/healthz").json()
        assert first["num_docs"] == 3
        # A page nothing links to, crawled from its own seed and built on EMR again: the
        # running service takes the new segment from S3 without a restart.
        crawled = run_crawl(aws, [site.origin + "/gliders"], progress=False)
        assert crawled.pages == 1, crawled.counters
        with PlayedCluster(moto_server) as again:  # a developer's checkout: no release bundle
            build_index(aws, progress=True)
        assert not again.errors, again.errors
        for emr in again.clusters():
            script = again.bootstrap[emr.id]["master"]
            assert "sudo python3.11 -m pip install --quiet" in script and "nimbus_search-0.1.0" in script
        assert "emr:" in capsys.readouterr().err  # mrjob's cluster and step states reached the user
        after = client.get("/healthz").json()
        assert after["index_version"] != first["index_version"] and after["num_docs"] == 4, crawled.counters
        glider = client.get("/api/search", params={"q": "sailplanes thermals"}).json()["hits"]
        assert glider[0]["url"] == site.origin + "/gliders"


def test_a_failing_step_names_the_step_and_its_logs(aws: Settings, site, moto_server) -> None:
    run_crawl(aws, [site.origin + "/"], progress=False)
    bucket = urlparse(aws.blob_url).netloc
    broken = aws.with_overrides(blob_url=f"s3://{bucket}/elsewhere")  # blocks are not there
    with PlayedCluster(moto_server) as cluster, pytest.raises(JobError) as caught:
        build_index(broken, progress=False)
    assert cluster.errors and "MRLinkGraph failed on the emr runner" in str(caught.value)
    assert f"s3://{bucket}/emr/tmp/logs/" in str(caught.value)
    assert any("records" in error and "elsewhere" in error for error in cluster.errors), cluster.errors


def test_emr_without_the_stack_outputs_says_which(aws: Settings, site) -> None:
    run_crawl(aws, [site.origin + "/"], progress=False)
    with pytest.raises(JobError, match="needs NIMBUS_EMR_SERVICE_ROLE, NIMBUS_EMR_INSTANCE_PROFILE"):
        build_index(aws.with_overrides(emr_service_role="", emr_instance_profile=""), progress=False)
