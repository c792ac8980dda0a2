"""An archive crawl on a crawl cluster: the bundle in moto's S3, two `nimbus crawl worker`s
and a `nimbus crawl committer` on MariaDB store the same documents and aliases as one
`nimbus archive crawl` process on a local copy."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import boto3
import pytest
from sqlalchemy import select

from services.storage.sql.engines import make_engine, session_factory
from services.storage.sql.models import ArchiveBundle, FetchBatch
from services.storage.sql.schema import init_db
from tests.integration.crawler.archive_bundles import WIKI, aliases, bundle, documents, records
from tests.polling import wait_for

pytestmark = pytest.mark.mariadb

REPO = Path(__file__).resolve().parents[3]
TOML = 'type = "mediawiki"\ndescription = "enwiki sample"\nbatch_size = 5\n'


def _env(database_url: str, blob_url: str, var: Path, endpoint: str | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NIMBUS_")}
    env.update(
        NIMBUS_DATABASE_URL=database_url,
        NIMBUS_BLOB_URL=blob_url,
        NIMBUS_VAR_DIR=str(var),
        NIMBUS_HEARTBEAT_SECONDS="0.5",
        NIMBUS_FLUSH_INTERVAL="0.3",
        PYTHONPATH=str(REPO),
    )
    if endpoint:
        env.update(
            AWS_ENDPOINT_URL=endpoint,
            AWS_ACCESS_KEY_ID="testing",
            AWS_SECRET_ACCESS_KEY="testing",
            AWS_DEFAULT_REGION="us-east-1",
        )
    return env


def _nimbus(*args: str, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "services.cli", *args],
        env=env,
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=log.open("ab"),
    )


def test_two_workers_and_a_committer_store_what_one_process_does(
    mysql_url: str, moto_server: str, tmp_path: Path, sample_data: Path
) -> None:
    folder = bundle(tmp_path / "enwiki", TOML, {"enwiki.xml.bz2": sample_data / WIKI})
    log = tmp_path / "processes.log"
    one = tmp_path / "one"
    one_env = _env(f"sqlite:///{one / 'nimbus.db'}", f"file://{one / 'blobs'}", one / "var")
    one.mkdir()
    assert _nimbus("archive", "crawl", str(folder), "--quiet", env=one_env, log=log).wait(timeout=300) == 0

    bucket = f"nimbus-{uuid.uuid4().hex[:10]}"
    s3 = boto3.client("s3", endpoint_url=moto_server)
    s3.create_bucket(Bucket=bucket)
    for name in ("bundle.toml", "enwiki.xml.bz2"):
        s3.upload_file(str(folder / name), bucket, f"bundles/enwiki/{name}")
    env = _env(mysql_url, f"s3://{bucket}/crawl", tmp_path / "var", moto_server)
    source = f"s3://{bucket}/bundles/enwiki"
    assert _nimbus("archive", "register", source, env=env, log=log).wait(timeout=120) == 0
    engine = make_engine(mysql_url)
    init_db(engine)
    sessions = session_factory(engine)

    def finished() -> bool:
        with sessions() as s:
            return s.scalar(select(ArchiveBundle.state)) == "finished"

    committer = _nimbus("crawl", "committer", env=env, log=log)
    workers = [
        _nimbus("crawl", "worker", "--quiet", "--id", f"archive/w{i}", env=env, log=log) for i in range(2)
    ]
    try:
        wait_for(finished, timeout=240, what="the archive crawl finished by the cluster")
        for worker in workers:  # a worker ends once no archive batch is left or out
            assert worker.wait(timeout=60) == 0
    finally:
        for p in [committer, *workers]:
            if p.poll() is None:
                p.terminate()
                p.wait(timeout=30)
    with sessions() as s:
        leased_by = set(s.scalars(select(FetchBatch.leased_by)))
        states = set(s.scalars(select(FetchBatch.state)))
    engine.dispose()
    assert leased_by == {"archive/w0", "archive/w1"} and states == {"committed"}
    single = documents(one_env["NIMBUS_DATABASE_URL"])
    assert documents(mysql_url) == single and len(single) == 106
    assert aliases(mysql_url) == aliases(one_env["NIMBUS_DATABASE_URL"])
    stored = records(mysql_url, f"s3://{bucket}/crawl", moto_server)
    local = records(one_env["NIMBUS_DATABASE_URL"], one_env["NIMBUS_BLOB_URL"])
    assert {u: (r.text, [link.url for link in r.links]) for u, r in stored.items()} == {
        u: (r.text, [link.url for link in r.links]) for u, r in local.items()
    }
