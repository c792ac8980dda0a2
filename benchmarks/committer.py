"""Committer ceiling: how many pages per second one crawl-cluster committer commits when the
workers are not the limit.

    .venv/bin/python -m benchmarks.committer [--pages 20000] [--mariadb] [--worker-rate R]

Pre-fetched batches: the benchmark leases ``--pages`` frontier URLs (64 hosts, batches of
32) as a worker would, gives each a synthetic 6 KB page with 20 out-links, and
acknowledges them through the worker's own code (``worker_flush``: blocks and a manifest per
8 batches, file:// blobs). Then one committer (``ordered_commit``) commits them in
sequence order, as fast as it can, and the benchmark prints its pages/s, its CPU ms per
page and its database round trips per page (``services.storage.sql.round_trips.RoundTrips``). The
database server's CPU is not counted in the committer's (it is another machine in AWS);
with ``--mariadb`` against a server on this machine it is printed beside it, read from
the server process's ``/proc`` entry: what one page costs the database (RDS) itself.

With ``--worker`` it first crawls the crawl benchmark's synthetic web with one Nimbus
process (``benchmarks.crawl --only nimbus``) in the same run, and prints the ratio of the
two rates: the number of workers one committer carries. (This VM's speed drifts severalfold
over hours (docs/performance-notes.md), so a worker rate from another run does not compare;
``--worker-rate R`` still takes one.)
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from sqlalchemy.engine import make_url

from benchmarks.crawl import LOCAL_HOSTS, MARIADB, database, measure
from benchmarks.proc_stat import database_server_cpu
from services.crawler.cluster import election
from services.crawler.cluster.ordered_commit import OrderedCommitter
from services.crawler.commit.results import FetchedDoc, UrlResult
from services.crawler.commit.worker_flush import WorkerFlush
from services.crawler.frontier import entries, leases
from services.crawler.frontier.entries import NewUrl
from services.crawler.web.parse import ParsedDoc
from services.gc_thresholds import fewer_collections
from services.storage.blobs.blobstore import open_blobstore
from services.storage.formats.blocks import ContentType
from services.storage.formats.records import Link
from services.storage.sql.counters import lock_counter
from services.storage.sql.engines import make_engine, session_factory
from services.storage.sql.round_trips import RoundTrips
from services.storage.sql.schema import init_db

WORDS = [
    "wing",
    "lift",
    "drag",
    "flow",
    "boundary",
    "layer",
    "shock",
    "pressure",
    "heat",
    "transfer",
    "supersonic",
    "plate",
]


def _url(n: int) -> str:
    return f"http://h{n % 64}.bench/p{n}"


def _page(n: int, pages: int, fresh_links: bool) -> tuple[bytes, ParsedDoc]:
    """Page ``n``: 20 links, to pages of the collection (as on a site, where most links lead
    to known pages) or, with ``fresh_links``, to 20 URLs nobody has seen (the worst case)."""
    text = " ".join(WORDS[(n * 7 + i) % len(WORDS)] for i in range(800))
    targets = [pages + n * 20 + i if fresh_links else (n * 7919 + i * 104_729) % pages for i in range(20)]
    links = [Link(_url(t), f"page {t}") for t in targets]
    body = f"<html><title>Page {n}</title><p>{text}</p></html>".encode()
    return body, ParsedDoc(ContentType.HTML, title=f"Page {n}", text=text, lang="en", links=links)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="committer ceiling benchmark")
    p.add_argument("--pages", type=int, default=20_000)
    p.add_argument("--mariadb", action="store_true", help="metadata on the local MariaDB")
    p.add_argument("--worker-rate", type=float, help="one worker's pages/s (crawl benchmark)")
    p.add_argument("--worker", action="store_true", help="measure one worker's pages/s first, same run")
    p.add_argument(
        "--links",
        choices=["collection", "new"],
        default="collection",
        help="links to the collection's own pages (a site) or to new URLs only (worst case)",
    )
    args = p.parse_args(argv)
    if args.worker:
        one = measure(["--only", "nimbus", "--pages", str(args.pages)])[0]["nimbus"]
        args.worker_rate = one["pages_per_s"]
    with tempfile.TemporaryDirectory() as tmp, database("x-mariadb" if args.mariadb else "x", tmp) as url:
        engine = make_engine(url, immediate=True)
        init_db(engine)
        sessions = session_factory(engine)
        blobs = open_blobstore(f"file://{Path(tmp) / 'blobs'}")
        caps = {"max_block_bytes": 200 * 1024 * 1024, "max_block_docs": 10_000, "partitions": 64}
        with sessions.begin() as s:
            lock_counter(s, leases.LEASE_LOCK)
            seeds = [NewUrl(_url(n), 0, 1.0) for n in range(args.pages)]
            entries.add_urls(s, seeds, 0.0, partitions=64)
        acker = WorkerFlush(sessions, blobs, **caps)
        acker.worker = "bench"
        started = time.process_time()
        made = 0
        while made < args.pages:
            with sessions.begin() as s:
                taken_leases = leases.lease_batches(
                    s, batches=8, limit=32, budget=10**9, now=1.0, lease_seconds=1e9, max_depth=9,
                    worker="bench", window=10**9,
                )  # fmt: skip
            if not taken_leases:
                break
            for lease in taken_leases:
                results = []
                for e in lease.entries:
                    body, parsed = _page(made, args.pages, args.links == "new")
                    made += 1
                    r = UrlResult(e.url_id, e.url, e.depth, "done", status=200)
                    r.doc, r.links = FetchedDoc(e.url, body, parsed, 2.0), list(parsed.links)
                    r.counters["pages"] += 1
                    results.append(r)
                acker.add_batch(lease.seq, results)
            acker.commit(acker.take())
        ack_cpu = time.process_time() - started
        trips = RoundTrips(engine)
        committer = OrderedCommitter(sessions, blobs, **caps)
        with sessions.begin() as s:
            committer.term = election.acquire(s, election.COMMITTER, "bench", time.time(), 1e9) or 0
        committer.me = "bench"
        before = trips.count
        # A remote server's CPU is not ours to read (a local mariadbd would be the wrong one).
        local = make_url(MARIADB).host in LOCAL_HOSTS
        server0 = database_server_cpu() if args.mariadb and local else None
        cpu0, wall0 = time.process_time(), time.perf_counter()
        committed = batches = 0
        with fewer_collections():  # as run_committer, the committer process's loop, runs
            while result := committer.commit_next():
                if not result.seqs:
                    break
                committed += result.pages
                batches += len(result.seqs)
        wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
        server = None if server0 is None else (database_server_cpu() or server0) - server0
        skipped = committer.finished.skipped
        round_trips = trips.count - before
        engine.dispose()
    rate = committed / wall
    backend = "MariaDB" if args.mariadb else "SQLite"
    print(f"worker side (blocks + manifest + ack): {1000 * ack_cpu / made:.3f} CPU ms/page")
    print(
        f"committer ({backend}, links to {args.links} URLs): {committed} pages in {batches} batches, "
        f"{rate:,.0f} pages/s, {1000 * cpu / committed:.3f} CPU ms/page, "
        f"{round_trips / committed:.2f} DB round trips/page, "
        f"{skipped / committed:.1f} links/page to finished pages left out"
    )
    if server is not None:
        print(f"database server (local mariadbd): {1000 * server / committed:.3f} CPU ms/page")
    if args.worker_rate:
        print(f"one worker: {args.worker_rate:,.0f} pages/s; ceiling/worker = {rate / args.worker_rate:.1f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
