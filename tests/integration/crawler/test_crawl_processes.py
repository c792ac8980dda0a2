"""Several crawler processes share one database and blob store by host partition."""

from __future__ import annotations

from sqlalchemy import select

from services.crawler.crawl import run_crawl
from services.crawler.frontier import partition_of
from services.crawler.processes import child_settings, run_crawl_processes, split_partitions
from services.demo.sampleweb import Resource, Site, SiteServer
from services.storage.blobstore import open_blobstore
from services.storage.blocks import read_block
from services.storage.db import make_engine, session_factory
from services.storage.models import Document


def test_partitions_split_evenly_and_completely():
    shares = split_partitions(list(range(64)), 3)
    assert [len(s) for s in shares] == [22, 21, 21]
    assert sorted(p for s in shares for p in s) == list(range(64))
    assert split_partitions([5, 9], 2) == [[5], [9]]


def test_child_settings_take_their_partitions_and_share_of_concurrency(settings):
    child = child_settings(settings.with_overrides(concurrency=32), [0, 1, 2], 2)
    assert child.partition_list == [0, 1, 2] and child.concurrency == 16


def _site(name: str, pages: int) -> SiteServer:
    links = "".join(f"<a href='/p{i}'>page {i}</a>" for i in range(pages))
    resources = {"/": Resource("text/html", f"<title>{name}</title>{links}".encode())}
    for i in range(pages):
        body = f"<title>{name} {i}</title><p>{name} page {i} about wing number {i * 7}</p>"
        resources[f"/p{i}"] = Resource("text/html", body.encode())
    return SiteServer(Site(name, resources)).start()


def test_two_processes_crawl_every_page_once_with_dense_doc_numbers(settings):
    sites = [_site(f"site{i}", 6) for i in range(4)]
    try:
        seeds = [s.origin + "/" for s in sites]
        # Own exactly the sites' partitions, so that each of the two processes gets sites.
        owned = sorted({partition_of(s.origin, settings.partitions) for s in sites})
        assert len(owned) >= 2, "four ports hashed into one partition: rerun"
        settings = settings.with_overrides(partition_ids=",".join(map(str, owned)))
        stats = run_crawl_processes(settings, seeds, 2, max_pages=200, progress=False)
        served = {s.origin + path for s in sites for method, path in s.requests if method == "GET"
                  and path not in ("/robots.txt", "/sitemap.xml")}
        requests = [(s.origin, m, p) for s in sites for m, p in s.requests if m == "GET"]
        assert len(requests) == len(set(requests))  # no page asked twice
        assert stats.pages == len(served) == 4 * 7
        sessions = session_factory(make_engine(settings.database_url))
        with sessions() as session:
            docs = session.scalars(select(Document).order_by(Document.doc_num)).all()
        assert [d.doc_num for d in docs] == list(range(28))
        blobs = open_blobstore(settings.blob_url)
        stored = {e.doc_id.hex() for name in {d.content_block for d in docs}
                  for e, _ in read_block(blobs.get(name))}
        assert {d.doc_id for d in docs} <= stored
        # A later single-process run on the same database finds nothing left to do.
        assert run_crawl(settings, seeds, max_pages=50, progress=False).pages == 0
    finally:
        for site in sites:
            site.stop()
