"""A crawl cluster survives its faults: three worker processes and two committers (one active,
one standby) on MariaDB and moto's S3 (behind a TCP proxy that resets connections), crawling
loopback sites, while the test kills a worker and the active committer with SIGKILL, kills
every database connection mid-transaction, makes blob puts fail for a while, and restarts
what it killed. Afterwards every page is committed exactly once, doc numbers are dense,
commit order is sequence order, and the dashboard's totals are the database's."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest
from sqlalchemy import func, select, text

from services.admin.status import cluster_status
from services.config import Settings
from services.crawler.cluster import election, heartbeat
from services.crawler.frontier import entries
from services.crawler.frontier.entries import NewUrl
from services.demo.sampleweb import Resource, Site, SiteServer
from services.storage.sql.counters import read_counters
from services.storage.sql.engines import make_engine, session_factory
from services.storage.sql.models import Document, DuplicateUrl, FetchBatch, FrontierEntry, RoleLease
from services.storage.sql.schema import init_db
from tests.faultproxy import ResettingProxy
from tests.polling import wait_for

pytestmark = pytest.mark.mariadb

SITES, PAGES = 6, 40
BEAT = 0.5


def _site(name: str) -> SiteServer:
    links = "".join(f"<a href='/p{i}'>{name} page {i}</a> " for i in range(PAGES))
    resources = {"/": Resource("text/html", f"<title>{name}</title><p>{name} home</p>{links}".encode())}
    for i in range(PAGES):
        body = f"<title>{name} {i}</title><p>{name} page {i}: the wing number {i * 7} of {name}</p>"
        resources[f"/p{i}"] = Resource("text/html", body.encode())
    return SiteServer(Site(name, resources)).start()


@pytest.fixture
def sites() -> Iterator[list[SiteServer]]:
    servers = [_site(f"site{i}") for i in range(SITES)]
    try:
        yield servers
    finally:
        for s in servers:
            s.stop()


def _env(settings: Settings, endpoint: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NIMBUS_")}
    env.update(
        NIMBUS_DATABASE_URL=settings.database_url,
        NIMBUS_BLOB_URL=settings.blob_url,
        AWS_ENDPOINT_URL=endpoint,
        AWS_ACCESS_KEY_ID="testing",
        AWS_SECRET_ACCESS_KEY="testing",
        AWS_DEFAULT_REGION="us-east-1",
        NIMBUS_VAR_DIR=str(settings.var_dir),
        NIMBUS_ALLOWED_HOSTS="127.0.0.1",
        NIMBUS_SITEMAPS="false",
        NIMBUS_SOFT404_PROBE="false",
        NIMBUS_CRAWL_DELAY="0.15",
        NIMBUS_HEARTBEAT_SECONDS=str(BEAT),
        NIMBUS_FLUSH_INTERVAL="0.3",
        NIMBUS_BATCH_SIZE="4",
        NIMBUS_SEND_WINDOW="8",
        PYTHONPATH=str(Path(__file__).resolve().parents[3]),
    )
    return env


def _start(role: str, env: dict[str, str], log: Path, name: str = "") -> subprocess.Popen[bytes]:
    args = [sys.executable, "-m", "services.cli", "crawl", role, "--quiet"]
    if name:
        args += ["--id", name]
    return subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=log.open("ab"))


def test_cluster_commits_every_page_once_in_order_through_kills_and_faults(
    mysql_url: str, moto_server: str, tmp_path: Path, sites: list[SiteServer]
) -> None:
    bucket = f"nimbus-{uuid.uuid4().hex[:10]}"
    boto3.client("s3", endpoint_url=moto_server).create_bucket(Bucket=bucket)
    host, port = moto_server.removeprefix("http://").split(":")
    settings = Settings.of(database_url=mysql_url, blob_url=f"s3://{bucket}/crawl", var_dir=tmp_path / "var")
    engine = make_engine(mysql_url)
    init_db(engine)
    sessions = session_factory(engine)
    with sessions.begin() as s:
        entries.add_urls(s, [NewUrl(site.origin + "/", 0, entries.SEED_PRIORITY) for site in sites], 0.0)

    def count(query) -> int:  # type: ignore[no-untyped-def]
        with sessions() as s:
            return int(s.scalar(query) or 0)

    committed = select(func.count()).select_from(FetchBatch).where(FetchBatch.state == "committed")
    log = tmp_path / "processes.log"
    with ResettingProxy((host, int(port))) as proxy:
        env = _env(settings, proxy.url)
        procs = {"c0": _start("committer", env, log), "c1": _start("committer", env, log)}
        procs |= {f"w{i}": _start("worker", env, log, f"faulty/w{i}") for i in range(3)}
        try:
            wait_for(lambda: count(committed) >= 3, timeout=60, what="first commits")
            # 1. blob puts and gets fail with connection resets for a while.
            proxy.reset_for(8)
            proxy.wait_for_resets(8, timeout=60)
            # 2. kill -9 a worker mid-batch (it holds leases and unacknowledged results): whichever
            # holds one, since the live workers share the hosts by partition and one may have none.
            holders = select(FetchBatch.leased_by).where(
                FetchBatch.state == "leased", FetchBatch.leased_by != ""
            )

            def a_holder() -> str | None:
                with sessions() as s:
                    names = set(s.scalars(holders))
                return next((n for n in sorted(names) if n.startswith("faulty/w")), None)

            found: list[str] = []

            def holding() -> bool:
                holder = a_holder()
                if holder is not None:
                    found.append(holder)
                return holder is not None

            wait_for(holding, timeout=60, what="a worker holding a batch")
            victim = found[-1]
            name = victim.removeprefix("faulty/")
            procs[name].send_signal(signal.SIGKILL)
            procs[name].wait(timeout=10)
            with sessions() as s:  # frozen now: what it held unacknowledged at the kill
                held_seqs = list(
                    s.scalars(
                        select(FetchBatch.seq).where(
                            FetchBatch.state == "leased", FetchBatch.leased_by == victim
                        )
                    )
                )
            held = len(held_seqs)
            # The survivors take its batches over (the new shares of the partitions may split
            # a batch between them) and the ordered commit goes on past them, before the
            # killed worker comes back.
            wait_for(
                lambda: (
                    count(
                        select(func.count())
                        .select_from(FetchBatch)
                        .where(FetchBatch.seq.in_(held_seqs), FetchBatch.state == "committed")
                    )
                    == held
                ),
                timeout=60,
                what=f"the dead worker's batches {held_seqs} committed by the others",
            )
            # 3. kill -9 the active committer: the standby takes over.
            with sessions() as s:
                lease = s.get(RoleLease, election.COMMITTER)
                assert lease is not None
                active_pid, first_term = int(lease.holder.rsplit("/", 1)[1]), lease.term
            active = next(k for k, p in procs.items() if p.pid == active_pid)
            done = count(committed)
            procs[active].send_signal(signal.SIGKILL)
            procs[active].wait(timeout=10)

            def taken_over() -> bool:
                with sessions() as s:
                    row = s.get(RoleLease, election.COMMITTER)
                    s.expire_all()
                    return row is not None and row.term > first_term

            wait_for(taken_over, timeout=30, what="the standby taking over")
            wait_for(lambda: count(committed) > done, timeout=60, what="the new committer's commits")
            # 4. every other database connection killed, mid-transaction or idle.
            with engine.connect() as conn:
                ids = conn.execute(
                    text(
                        "SELECT id FROM information_schema.processlist "
                        "WHERE db = DATABASE() AND id <> CONNECTION_ID()"
                    )
                ).scalars()
                for connection_id in list(ids):
                    conn.execute(text(f"KILL CONNECTION {int(connection_id)}"))
            # 5. restart what was killed: the worker under its own name, a new committer.
            procs[name] = _start("worker", env, log, victim)
            procs[active] = _start("committer", env, log)
            for worker in ("w0", "w1", "w2"):
                assert procs[worker].wait(timeout=240) == 0, log.read_text()[-3000:]
            wait_for(
                lambda: (
                    count(select(func.count()).select_from(FetchBatch).where(FetchBatch.state != "committed"))
                    == 0
                ),
                timeout=60,
                what="the last acknowledged batches committed",
            )
            with sessions.begin() as s:
                heartbeat.command(s, "stop", time.time())
            for name in ("c0", "c1"):
                assert procs[name].wait(timeout=30) == 0, log.read_text()[-3000:]
        finally:
            for p in procs.values():
                if p.poll() is None:
                    p.kill()
                    p.wait()
        resets = proxy.resets
    assert resets >= 8

    served = {
        site.origin + path
        for site in sites
        for method, path in site.requests
        if method == "GET" and path != "/robots.txt"
    }
    assert len(served) == SITES * (PAGES + 1)  # every page was fetched at least once
    with sessions() as s:
        docs = s.execute(select(Document.doc_num, Document.url).order_by(Document.doc_num)).all()
        duplicates = s.scalar(select(func.count()).select_from(DuplicateUrl))
        states = dict(
            s.execute(select(FrontierEntry.state, func.count()).group_by(FrontierEntry.state)).all()
        )
        ledger = s.execute(select(FetchBatch.seq, FetchBatch.committed_at).order_by(FetchBatch.seq)).all()
        counters = read_counters(s)
        status = cluster_status(s, time.time(), BEAT)
        pages_in_ledger = s.scalar(select(func.sum(FetchBatch.pages)))
    # Every fetched URL committed exactly once; no doc number used twice or skipped.
    assert {url for _n, url in docs} == served and duplicates == 0
    assert [n for n, _url in docs] == list(range(len(served)))
    assert states == {"done": len(served)}
    # Commit order is sequence order (across the takeover too).
    stamps = [at for _seq, at in ledger]
    assert None not in stamps and stamps == sorted(stamps)
    # The dashboard's totals are the database's.
    assert status.counters["documents"] == counters["documents"] == len(served)
    assert sum(m.pages for m in status.minutes) == pages_in_ledger == counters["pages"]
    with sessions() as s:
        reschedules = s.scalar(select(func.sum(FetchBatch.reschedules)))
    if held:  # the killed worker's unacknowledged batches were handed out again
        assert reschedules and reschedules >= held
    engine.dispose()
