"""Incremental index updates: adding the newest 1 % of a collection to its index, Nimbus
against tantivy on the same texts.

    .venv/bin/python -m benchmarks.incremental [--docs 100000] [--new 0.01] [--runner local]

The corpus is ``benchmarks.textcorpus`` (as ``benchmarks.index``'s), cut in two: the first
``1 - new`` of the documents, then the rest. In one run:

* **Nimbus**: archive-crawl the first part, ``nimbus index`` (the full build, timed), crawl
  the rest (its own commits), then ``nimbus index update`` (a delta segment, timed: the
  figure), ``nimbus index update --merge`` (the merge of base and delta the daemon runs in
  the background, timed), and a full build of everything (timed) for the ratio an update
  saves. Each command in a process of its own, timed from outside, as an operator runs it.
  The stage times are shown from the commands' own progress lines.
* **tantivy**: index the first part and commit, then add the rest to the same index and
  commit (timed: the figure), with its default merge policy, as an application adds
  documents to a live tantivy index.

What the figures mean: an update makes the newest pages searchable, and the time from a
batch's commit to its pages being searchable is at most the daemon's interval
(``NIMBUS_UPDATE_EVERY``) plus one update plus the search service's 2 s recheck.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.index import load_queries, nimbus_latency, published_bytes, tantivy_index
from benchmarks.passes import timed_queries
from benchmarks.textcorpus import DATA, build

ROOT = Path(__file__).resolve().parents[1]


def split_corpus(corpus: Path, new: float, out: Path) -> tuple[Path, Path, int, int]:
    """docs.jsonl cut into first.jsonl (the older documents) and second.jsonl (the newest)."""
    lines = (corpus / "docs.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    cut = len(lines) - max(1, round(len(lines) * new))
    out.mkdir(parents=True, exist_ok=True)
    first, second = out / "first.jsonl", out / "second.jsonl"
    first.write_text("".join(lines[:cut]), encoding="utf-8")
    second.write_text("".join(lines[cut:]), encoding="utf-8")
    return first, second, cut, len(lines) - cut


def nimbus(first: Path, second: Path, runner: str, state: Path, queries: list[str]) -> dict[str, float]:
    from services.config import Settings
    from services.eval.crawl import crawl_jsonl
    from services.eval.run import state_settings

    shutil.rmtree(state, ignore_errors=True)
    state.mkdir(parents=True)
    settings = state_settings(Settings.from_env({}), state).with_overrides(mr_runner=runner)
    env = {
        **os.environ,
        "NIMBUS_DATABASE_URL": settings.database_url,
        "NIMBUS_BLOB_URL": settings.blob_url,
        "NIMBUS_VAR_DIR": str(settings.var_dir),
    }

    def timed(*argv: str) -> tuple[float, str]:
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "services.cli", *argv, "--runner", runner],
            env=env,
            check=True,
            stderr=subprocess.PIPE,
            text=True,
        )
        return time.perf_counter() - start, done.stderr

    crawl_jsonl(first, "older", settings, state, {}, progress=False)
    base_s, _ = timed("index")
    crawl_jsonl(second, "newest", settings, state, {}, progress=False)
    update_s, said = timed("index", "update")
    delta_bytes = published_bytes(settings)
    with_delta = nimbus_latency(settings, queries)
    merge_s, merged = timed("index", "update", "--merge")
    merged_bytes = published_bytes(settings)
    after_merge = nimbus_latency(settings, queries)
    for line in [*said.splitlines(), *merged.splitlines()]:
        print(f"  {line}", flush=True)
    full_s, _ = timed("index")
    return {
        "base_s": base_s,
        "update_s": update_s,
        "merge_s": merge_s,
        "full_s": full_s,
        "delta_bytes": delta_bytes,
        "merged_bytes": merged_bytes,
        **{f"delta_{k}": v for k, v in with_delta.items()},
        **{f"merged_{k}": v for k, v in after_merge.items()},
    }


def tantivy_peer(first: Path, second: Path, path: Path, queries: list[str]) -> dict[str, float]:
    import tantivy

    index = tantivy_index(path)

    def add(docs_file: Path) -> float:
        start = time.perf_counter()
        writer = index.writer(heap_size=512_000_000)
        with docs_file.open(encoding="utf-8") as fh:
            for line in fh:
                d = json.loads(line)
                writer.add_document(tantivy.Document(title=d["title"], body=d["text"], id=int(d["id"])))
        writer.commit()
        writer.wait_merging_threads()
        return time.perf_counter() - start

    base_s = add(first)
    update_s = add(second)
    index.reload()
    searcher = index.searcher()

    def run(q: str) -> object:
        return searcher.search(index.parse_query(q, ["title", "body"]), 10).hits

    latency = timed_queries(run, queries)
    return {"base_s": base_s, "update_s": update_s, "segments": searcher.num_segments, **latency}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="incremental index update benchmark")
    p.add_argument("--docs", type=int, default=100_000)
    p.add_argument("--queries", type=int, default=500, help="the corpus's (benchmarks.textcorpus)")
    p.add_argument("--new", type=float, default=0.01, help="share of the documents added by the update")
    p.add_argument("--runner", default="local", choices=["inline", "local"])
    p.add_argument("--work", type=Path, default=ROOT / "var" / "bench")
    args = p.parse_args(argv)
    corpus = args.work / f"corpus-{args.docs}"
    if not (corpus / "docs.jsonl").is_file():
        build(DATA, args.docs, args.queries, corpus)
    first, second, older, newest = split_corpus(corpus, args.new, args.work / f"incremental-{args.docs}")
    print(f"corpus {corpus}: {older} older documents, then {newest} new ones", flush=True)
    queries = load_queries(corpus)
    t = tantivy_peer(first, second, args.work / "tantivy-incremental", queries)
    print(
        f"tantivy  index {t['base_s']:7.1f} s; add {newest} and commit {t['update_s']:6.2f} s; "
        f"queries on its {t['segments']} segments p50 {t['p50']:.2f} ms p95 {t['p95']:.2f} ms",
        flush=True,
    )
    n = nimbus(first, second, args.runner, args.work / "nimbus-incremental", queries)
    print(
        f"nimbus   index {n['base_s']:7.1f} s; delta with {newest}: {n['update_s']:6.2f} s, its "
        f"merge {n['merge_s']:.1f} s (a full build of all: {n['full_s']:.1f} s, "
        f"{n['full_s'] / n['update_s']:.1f}x the delta)",
        flush=True,
    )
    for name, label in (("delta", "base + delta"), ("merged", "merged")):
        print(
            f"nimbus   {label:12s} {n[f'{name}_bytes'] / 1e6:7.1f} MB; "
            f"queries p50 {n[f'{name}_p50']:.2f} ms p95 {n[f'{name}_p95']:.2f} ms, "
            f"OR p50 {n[f'{name}_or_p50']:.2f} ms p95 {n[f'{name}_or_p95']:.2f} ms",
            flush=True,
        )
    ratio = n["delta_p95"] / n["merged_p95"]
    print(f"nimbus/tantivy: update {n['update_s'] / t['update_s']:.1f}x the time", flush=True)
    print(f"nimbus base + delta / merged: query p95 {ratio:.2f}x", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
