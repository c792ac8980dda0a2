"""A crawl cluster's transactions outlive a database connection killed in the middle of them
(MariaDB's KILL CONNECTION, a real server-side fault: a failover or a proxy dropping the
connection looks the same to the client). The worker's acknowledgement and the committer's
commit are each killed once, mid-statement, and tried again on a fresh connection: every
page is committed exactly once, with dense doc numbers."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from sqlalchemy import event, func, select, text

from services.config import Settings
from services.crawler.cluster.committer_role import CommitterNode
from services.crawler.commit.committer import Committer
from services.crawler.commit.results import FetchedDoc, UrlResult
from services.crawler.commit.worker_flush import WorkerFlush
from services.crawler.frontier import entries, leases
from services.crawler.frontier.entries import NewUrl
from services.crawler.web.parse import ParsedDoc
from services.storage.blobs.blobstore import open_blobstore
from services.storage.formats.blocks import ContentType
from services.storage.sql.counters import read_counters
from services.storage.sql.engines import make_engine, session_factory
from services.storage.sql.models import Document, FetchBatch
from services.storage.sql.schema import init_db

pytestmark = pytest.mark.mariadb
PAGES = 12


def _kill_once(engine, admin, marker: str) -> list[int]:  # type: ignore[no-untyped-def]
    """Kill the connection that is about to run a statement containing ``marker``, once."""
    killed: list[int] = []

    @event.listens_for(engine, "before_cursor_execute")
    def kill(conn, _cursor, statement, *_args):  # type: ignore[no-untyped-def]
        if marker in statement and not killed:
            thread = conn.connection.dbapi_connection.thread_id()
            killed.append(thread)
            with admin.connect() as other:
                other.execute(text(f"KILL CONNECTION {int(thread)}"))

    return killed


def test_a_killed_connection_mid_ack_and_mid_commit_loses_and_repeats_nothing(
    mysql_url: str, tmp_path: Path
) -> None:
    settings = Settings.of(
        database_url=mysql_url,
        blob_url=f"file://{tmp_path / 'blobs'}",
        var_dir=tmp_path,
        heartbeat_seconds=0.2,
    )
    admin = make_engine(mysql_url)
    node = CommitterNode(settings)  # creates the schema
    worker_engine = make_engine(mysql_url, immediate=True)
    sessions = session_factory(worker_engine)
    with sessions.begin() as s:
        entries.add_urls(s, [NewUrl(f"http://k.test/{i}", 0, 1.0) for i in range(PAGES)], 0.0)
    acker = WorkerFlush(
        sessions, open_blobstore(settings.blob_url), max_block_bytes=1 << 20, max_block_docs=100
    )
    acker.worker = "worker-k"
    ack_killed = _kill_once(worker_engine, admin, "UPDATE fetch_batches SET state")
    with sessions.begin() as s:
        taken_leases = leases.lease_batches(
            s, batches=4, limit=3, budget=100, now=time.time(), lease_seconds=600, max_depth=5,
            worker="worker-k", window=100,
        )  # fmt: skip
    assert len(taken_leases) == 4
    for lease in taken_leases:
        results = []
        for e in lease.entries:
            r = UrlResult(e.url_id, e.url, 0, "done", status=200)
            parsed = ParsedDoc(ContentType.HTML, title=e.url, text=f"page {e.url}", lang="en")
            r.doc = FetchedDoc(e.url, f"<p>{e.url}</p>".encode(), parsed, time.time())
            r.counters["pages"] += 1
            results.append(r)
        acker.add_batch(lease.seq, results)
    acker.commit(acker.take())  # killed once mid-acknowledgement, then acknowledged
    assert ack_killed
    commit_killed = _kill_once(node.engine, admin, "INSERT INTO documents")
    node.beat()
    assert node.term
    while node._retrying(node.committer.commit_next, "committing").seqs:
        pass
    assert commit_killed and node.counters["transient_errors"] >= 1
    with sessions() as s:
        nums = s.scalars(select(Document.doc_num).order_by(Document.doc_num)).all()
        states = s.scalars(select(FetchBatch.state)).all()
        counters = read_counters(s)
        urls = s.scalar(select(func.count(func.distinct(Document.url))))
    assert nums == list(range(PAGES)) and urls == PAGES
    assert set(states) == {"committed"} and len(states) == 4
    assert counters["documents"] == PAGES and counters["pages"] == PAGES  # counted once
    for engine in (worker_engine, admin, node.engine):
        engine.dispose()


def test_a_single_process_crawl_commit_outlives_a_killed_connection(mysql_url: str, tmp_path: Path) -> None:
    """`nimbus crawl` on one machine commits through ``Committer`` itself: a connection killed
    mid-flush (a failover, a password rotation's end of old connections) is a pause, not the
    end of the crawl, and the flush is committed once."""
    engine = make_engine(mysql_url, immediate=True)
    admin = make_engine(mysql_url)
    sessions = session_factory(engine)
    init_db(engine)
    with sessions.begin() as s:
        entries.add_urls(s, [NewUrl(f"http://solo.test/{i}", 0, 1.0) for i in range(PAGES)], 0.0)
        (lease,) = leases.lease_batches(
            s, batches=1, limit=PAGES, budget=100, now=time.time(), lease_seconds=600, max_depth=5,
            worker="solo", window=100,
        )  # fmt: skip
    committer = Committer(
        sessions, open_blobstore(f"file://{tmp_path / 'blobs'}"), max_block_bytes=1 << 20, max_block_docs=100
    )
    results = []
    for e in lease.entries:
        r = UrlResult(e.url_id, e.url, 0, "done", status=200)
        parsed = ParsedDoc(ContentType.HTML, title=e.url, text=f"page {e.url}", lang="en")
        r.doc = FetchedDoc(e.url, f"<p>{e.url}</p>".encode(), parsed, time.time())
        r.counters["pages"] += 1
        results.append(r)
    committer.add_batch(lease.seq, results)
    killed = _kill_once(engine, admin, "UPDATE crawl_counters")
    committer.flush()
    assert killed
    with sessions() as s:
        nums = s.scalars(select(Document.doc_num).order_by(Document.doc_num)).all()
        counters = read_counters(s)
    assert nums == list(range(PAGES))
    assert counters["pages"] == PAGES  # counted once
    for e in (engine, admin):
        e.dispose()
