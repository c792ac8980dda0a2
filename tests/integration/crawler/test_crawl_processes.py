"""A crawl cluster on one machine: worker processes share one database and blob store by host
partition, and one committer process commits their acknowledged batches in sequence order."""

from __future__ import annotations

import threading

import pytest
from sqlalchemy import select

from services.crawler.cluster.partitions import child_settings, split_partitions
from services.crawler.crawl import run_crawl
from services.crawler.frontier import leases
from services.crawler.frontier.entries import partition_of
from services.crawler.local_cluster import run_local_cluster
from services.demo.sampleweb import Resource, Site, SiteServer
from services.indexing.build import build_index
from services.search.service import SearchService
from services.storage.blobs.blobstore import open_blobstore
from services.storage.formats.blocks import read_block
from services.storage.sql.engines import make_engine, session_factory
from services.storage.sql.models import Document, FetchBatch
from services.storage.sql.schema import init_db


def test_partitions_split_evenly_and_completely():
    shares = split_partitions(list(range(64)), 3)
    assert [len(s) for s in shares] == [22, 21, 21]
    assert sorted(p for s in shares for p in s) == list(range(64))
    assert split_partitions([5, 9], 2) == [[5], [9]]


def test_child_settings_take_their_partitions_and_share_of_concurrency(settings):
    child = child_settings(settings.with_overrides(concurrency=32), [0, 1, 2], 2)
    assert child.crawl.partition_list == [0, 1, 2] and child.crawl.concurrency == 16


def _site(name: str, pages: int) -> SiteServer:
    links = "".join(f"<a href='/p{i}'>page {i}</a>" for i in range(pages))
    resources = {"/": Resource("text/html", f"<title>{name}</title>{links}".encode())}
    for i in range(pages):
        body = f"<title>{name} {i}</title><p>{name} page {i} about wing number {i * 7}</p>"
        resources[f"/p{i}"] = Resource("text/html", body.encode())
    return SiteServer(Site(name, resources)).start()


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("mariadb", marks=pytest.mark.mariadb)])
def test_two_workers_and_a_committer_crawl_every_page_once_with_dense_doc_numbers(settings, backend, request):
    if backend == "mariadb":
        settings = settings.with_overrides(database_url=request.getfixturevalue("mysql_url"))
    sites = [_site(f"site{i}", 6) for i in range(4)]
    try:
        seeds = [s.origin + "/" for s in sites]
        # Own exactly the sites' partitions, so that each of the two processes gets sites.
        owned = sorted({partition_of(s.origin, settings.crawl.partitions) for s in sites})
        assert len(owned) >= 2, "four ports hashed into one partition: rerun"
        settings = settings.with_overrides(partition_ids=",".join(map(str, owned)))
        stats = run_local_cluster(settings, seeds, 2, max_pages=200, progress=False)
        served = {
            s.origin + path
            for s in sites
            for method, path in s.requests
            if method == "GET" and path not in ("/robots.txt", "/sitemap.xml")
        }
        requests = [(s.origin, m, p) for s in sites for m, p in s.requests if m == "GET"]
        assert len(requests) == len(set(requests))  # no page asked twice
        assert stats.pages == len(served) == 4 * 7
        sessions = session_factory(make_engine(settings.database_url))
        with sessions() as session:
            docs = session.scalars(select(Document).order_by(Document.doc_num)).all()
        assert [d.doc_num for d in docs] == list(range(28))
        with sessions() as session:
            ledger = session.execute(
                select(FetchBatch.seq, FetchBatch.state, FetchBatch.committed_at).order_by(FetchBatch.seq)
            ).all()
        assert {state for _seq, state, _at in ledger} == {"committed"}
        committed_at = [at for _seq, _state, at in ledger]
        assert committed_at == sorted(committed_at)  # commit order is sequence order
        assert stats.counters["documents"] == 28
        blobs = open_blobstore(settings.blob_url)
        stored = {
            e.doc_id.hex() for name in {d.content_block for d in docs} for e, _ in read_block(blobs.get(name))
        }
        assert {d.doc_id for d in docs} <= stored
        # A later single-process run on the same database finds nothing left to do.
        assert run_crawl(settings, seeds, max_pages=50, progress=False).pages == 0
        # The workers' records carry no doc numbers; the index takes them from the documents.
        build_index(settings.with_overrides(feedback_docs=0), progress=False)
        service = SearchService(settings, recheck_seconds=0)
        try:
            hits = service.search("wing number 35").hits
            assert hits and hits[0].url.endswith("/p5") and hits[0].title.endswith(" 5")
            by_url = {d.url: d.doc_num for d in docs}
            assert hits[0].doc_num == by_url[hits[0].url]
        finally:
            service.close()
    finally:
        for site in sites:
            site.stop()


@pytest.mark.mariadb
def test_two_crawlers_leasing_at_once_on_mariadb_do_not_deadlock(mysql_url):
    """Both look for expired batches (SELECT ... FOR UPDATE SKIP LOCKED), then both insert
    their new batch. Under InnoDB's default REPEATABLE READ the first step takes gap locks
    that block the other's insert, both ways: a deadlock, which the two-process benchmark
    hit. The crawler's engines run READ COMMITTED, where both commit."""
    engine = make_engine(mysql_url, immediate=True)
    init_db(engine)
    sessions = session_factory(engine)
    with sessions.begin() as session:  # an old batch, so the first step scans some rows
        session.add(FetchBatch(state="done", leased_by="x", lease_expires=0.0, created_at=0.0, num_urls=0))
    both_looked = threading.Barrier(2, timeout=10)
    errors: list[BaseException] = []

    def lease(worker: str) -> None:
        try:
            with sessions.begin() as session:
                assert (
                    leases.lease_batch(
                        session, limit=0, now=1e9, lease_seconds=60, max_depth=5, worker=worker
                    )
                    is None
                )
                both_looked.wait()
                session.add(
                    FetchBatch(
                        state="leased", leased_by=worker, lease_expires=1e9 + 60, created_at=1e9, num_urls=1
                    )
                )
                session.flush()
        except BaseException as exc:  # noqa: BLE001 - reported by the test thread
            errors.append(exc)

    threads = [threading.Thread(target=lease, args=(f"w{i}",)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    engine.dispose()
    assert not errors, errors[0]


def test_forked_children_get_the_environment_and_directory_of_the_clusters_start(tmp_path, monkeypatch):
    """Children fork from a fork server that started earlier, with the environment of then;
    ``_as_parent`` gives them the parent's of now (credentials, say), as a spawned child gets."""
    import os
    import subprocess

    from services.crawler.local_cluster import _as_parent, _process_context

    ctx = _process_context()
    warm = ctx.Process(target=subprocess.check_call, args=(["true"],))  # the server is up now
    warm.start()
    warm.join()
    monkeypatch.setenv("NIMBUS_TEST_MARK", "set-after-the-server-started")
    monkeypatch.chdir(tmp_path)
    parent = (dict(os.environ), str(tmp_path))
    script = 'echo "${NIMBUS_TEST_MARK:-unset} $(pwd)" > "$0"'
    seen = {}
    for name, target, args in (
        (
            "as_parent",
            _as_parent,
            (parent, subprocess.check_call, ["sh", "-c", script, str(tmp_path / "as_parent")]),
        ),
        ("plain", subprocess.check_call, (["sh", "-c", script, str(tmp_path / "plain")],)),
    ):
        child = ctx.Process(target=target, args=args)
        child.start()
        child.join()
        assert child.exitcode == 0
        seen[name] = (tmp_path / name).read_text().split()
    assert seen["as_parent"] == ["set-after-the-server-started", str(tmp_path)]
    if ctx.get_start_method() == "forkserver":  # what _as_parent is for
        assert seen["plain"][0] == "unset"
