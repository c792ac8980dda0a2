"""Freshness: how long a committed batch waits until its pages are searchable, while a crawl
runs at full speed, Nimbus against tantivy on the same texts.

    .venv/bin/python -m benchmarks.freshness [--docs 100000] [--stream 0.2] [--every 10]

The corpus is ``benchmarks.textcorpus`` (as ``benchmarks.index``'s), cut in two
(``benchmarks.incremental.split_corpus``): the first ``1 - stream`` of the documents, then
the rest. In one run:

* **Nimbus**: archive-crawl the first part and build the index (``nimbus index``), start the
  indexer's daemon (``nimbus index daemon``, ``NIMBUS_UPDATE_EVERY=every``) in a process of
  its own, then archive-crawl the rest at full speed: its batches commit one after another
  while the daemon updates the index. When the crawl has ended and a version includes its
  last commit, the daemon is stopped. A batch's wait is read from the database afterwards:
  from its commit (``fetch_batches.committed_at``) to the activation of the first version
  whose commit mark includes it (``index_versions.created_at``; the mark in the meta of the
  version's newest segment: its last delta, or its base). A search service sees a new
  version at its next recheck, at most 2 s later (not added here).
* **tantivy**: index the first part, then the same stream in batches of the size Nimbus's
  crawl committed, each added, committed and the reader reloaded: its wait is that time.

The daemon shares this machine's two cores with the crawl (on a deployment the indexer is a
machine of its own), so the crawl's documents per second are printed beside the waits.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.incremental import ROOT, split_corpus
from benchmarks.index import tantivy_index
from benchmarks.textcorpus import DATA, build


def percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    if not ordered:
        return {"n": 0, "p50": float("nan"), "p95": float("nan"), "max": float("nan")}
    return {
        "n": len(ordered),
        "p50": ordered[len(ordered) // 2],
        "p95": ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))],
        "max": ordered[-1],
    }


def batch_waits(batches: list[tuple[int, float]], versions: list[tuple[float, int, set[int]]]) -> list[float]:
    """Each committed batch's (seq, committed_at) wait until the first version (activated at,
    through_seq, pending seqs; in activation order) whose mark includes it; batches no
    version includes are left out (the caller says how many)."""
    waits = []
    for seq, committed in batches:
        for activated, through, pending in versions:
            if seq <= through and seq not in pending and activated >= committed:
                waits.append(activated - committed)
                break
    return waits


def nimbus(first: Path, second: Path, every: int, state: Path, timeout: float) -> dict[str, Any]:
    from sqlalchemy import select

    from services.config import Settings
    from services.eval.crawl import crawl_jsonl
    from services.eval.run import state_settings
    from services.storage.blobs.blobstore import open_blobstore
    from services.storage.formats.segment import read_meta
    from services.storage.sql.engines import make_engine, session_factory
    from services.storage.sql.models import FetchBatch, IndexVersion

    shutil.rmtree(state, ignore_errors=True)
    state.mkdir(parents=True)
    settings = state_settings(Settings.from_env({}), state).with_overrides(mr_runner="local")
    env = {
        **os.environ,
        "NIMBUS_DATABASE_URL": settings.database_url,
        "NIMBUS_BLOB_URL": settings.blob_url,
        "NIMBUS_VAR_DIR": str(settings.var_dir),
        "NIMBUS_UPDATE_EVERY": str(every),
    }
    cli = [sys.executable, "-m", "services.cli"]
    crawl_jsonl(first, "older", settings, state, {}, progress=False)
    subprocess.run([*cli, "index", "--runner", "local"], env=env, check=True, stderr=subprocess.DEVNULL)
    engine = make_engine(settings.database_url)
    sessions = session_factory(engine)
    with sessions() as session:
        base_seq = int(session.scalar(select(FetchBatch.seq).order_by(FetchBatch.seq.desc()).limit(1)) or 0)
    log = (state / "daemon.log").open("w")
    daemon = subprocess.Popen([*cli, "index", "daemon"], env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        started = time.monotonic()
        stored = crawl_jsonl(second, "newest", settings, state, {}, progress=False)
        crawl_s = time.monotonic() - started
        with sessions() as session:
            last = int(session.scalar(select(FetchBatch.seq).order_by(FetchBatch.seq.desc()).limit(1)) or 0)
        store = open_blobstore(settings.blob_url, settings.aws_endpoint_url)
        deadline = time.monotonic() + timeout
        marks: dict[str, tuple[float, int, set[int]]] = {}  # by segment: each meta read once
        versions: list[tuple[float, int, set[int]]] = []
        while time.monotonic() < deadline:  # bounded: until a version includes the last commit
            with sessions() as session:
                rows = session.execute(
                    select(IndexVersion.created_at, IndexVersion.segment, IndexVersion.deltas).order_by(
                        IndexVersion.id
                    )
                ).all()
            for created, base, deltas in rows:
                # A version's mark is its newest segment's: its last delta's, or its base's.
                segment = json.loads(deltas)[-1] if deltas else base
                if segment in marks:
                    continue
                try:
                    meta = read_meta(_ranged(store, segment), segment)
                except Exception:  # noqa: BLE001 - a version pruned meanwhile (keep_segments)
                    continue
                marks[segment] = (
                    float(created),
                    int(meta.get("through_seq", 0)),
                    set(meta.get("pending_seqs", [])),
                )
            versions = sorted(marks.values())
            if any(through >= last and last not in pending for _, through, pending in versions):
                break
            time.sleep(1.0)
    finally:
        daemon.send_signal(signal.SIGTERM)
        try:
            daemon.wait(timeout=120)
        except subprocess.TimeoutExpired:
            daemon.kill()
        log.close()
    with sessions() as session:
        batches = [
            (int(seq), float(at or 0.0))
            for seq, at in session.execute(
                select(FetchBatch.seq, FetchBatch.committed_at).where(
                    FetchBatch.seq > base_seq, FetchBatch.committed_at.is_not(None)
                )
            )
        ]
    engine.dispose()
    waits = batch_waits(batches, versions)
    return {
        "waits": waits,
        "batches": len(batches),
        "versions": len([v for v in versions if v[1] > base_seq]),
        "docs": stored.documents,
        "crawl_s": crawl_s,
    }


def _ranged(store: Any, name: str) -> Any:
    return lambda start, end: store.get(name, start, end)


def tantivy_peer(first: Path, second: Path, batches: int, path: Path) -> list[float]:
    import tantivy

    index = tantivy_index(path)
    writer = index.writer(heap_size=512_000_000)

    def documents(docs_file: Path) -> list[Any]:
        with docs_file.open(encoding="utf-8") as fh:
            rows = [json.loads(line) for line in fh]
        return [tantivy.Document(title=d["title"], body=d["text"], id=int(d["id"])) for d in rows]

    for doc in documents(first):
        writer.add_document(doc)
    writer.commit()
    stream = documents(second)
    size = max(1, -(-len(stream) // max(1, batches)))
    waits = []
    for at in range(0, len(stream), size):
        start = time.perf_counter()
        for doc in stream[at : at + size]:
            writer.add_document(doc)
        writer.commit()
        index.reload()
        index.searcher()
        waits.append(time.perf_counter() - start)
    writer.wait_merging_threads()
    return waits


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="freshness under a running crawl: commit to searchable")
    p.add_argument("--docs", type=int, default=100_000)
    p.add_argument("--queries", type=int, default=500, help="the corpus's (benchmarks.textcorpus)")
    p.add_argument("--stream", type=float, default=0.2, help="share of the documents crawled while indexing")
    p.add_argument("--every", type=int, default=10, help="the daemon's NIMBUS_UPDATE_EVERY (s)")
    p.add_argument("--timeout", type=float, default=900.0, help="longest wait for the last commit (s)")
    p.add_argument("--work", type=Path, default=ROOT / "var" / "bench")
    args = p.parse_args(argv)
    # A SIGTERM ends the run through the ``finally`` that stops the daemon, not around it.
    signal.signal(signal.SIGTERM, lambda _signum, _frame: sys.exit(143))
    corpus = args.work / f"corpus-{args.docs}"
    if not (corpus / "docs.jsonl").is_file():
        build(DATA, args.docs, args.queries, corpus)
    first, second, older, newest = split_corpus(corpus, args.stream, args.work / f"freshness-{args.docs}")
    print(
        f"corpus {corpus}: {older} documents indexed first, then {newest} crawled while indexing", flush=True
    )
    n = nimbus(first, second, args.every, args.work / "nimbus-freshness", args.timeout)
    w = percentiles(n["waits"])
    print(
        f"nimbus   {n['batches']} batches crawled in {n['crawl_s']:.1f} s "
        f"({newest / n['crawl_s']:.0f} documents/s) while the daemon (every {args.every} s) "
        f"published {n['versions']} versions; commit to searchable: p50 {w['p50']:.1f} s, "
        f"p95 {w['p95']:.1f} s, max {w['max']:.1f} s ({w['n']} of {n['batches']} batches)",
        flush=True,
    )
    t = percentiles(tantivy_peer(first, second, n["batches"], args.work / "tantivy-freshness"))
    print(
        f"tantivy  the same stream in {t['n']} batches, each added, committed and reloaded: "
        f"p50 {t['p50']:.2f} s, p95 {t['p95']:.2f} s, max {t['max']:.2f} s",
        flush=True,
    )
    print(f"nimbus/tantivy: p50 wait {w['p50'] / t['p50']:.0f}x, p95 {w['p95'] / t['p95']:.0f}x", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
