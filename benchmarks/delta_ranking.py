"""Ranking with delta segments: a judged collection searched as a base and its deltas, then
merged, then fully built, over the same stored documents.

    .venv/bin/python -m benchmarks.delta_ranking [data/ir/cranfield] [--share 0.3] [--deltas 3]

A delta's impacts are scored with the version's statistics at its build, and the base keeps
its own until a merge (docs/architecture.md, "Segments searched side by side"): between
merges, the base's idf and average lengths lag the collection by the deltas' share. This
measures what that lag does to a judged collection's figures (the issue's: the ranking
figures of ``nimbus eval`` unchanged). The collection's documents are cut in order: the
first ``1 - share`` archive-crawled and built (``nimbus index``), the rest in ``deltas``
parts, each crawled and published as a delta (``nimbus index update``); the judged queries
are searched (``SearchService.ranked``, as ``nimbus eval``) on the base with its deltas, then
after the merge (``--merge``), then after a full build. The peer is Nimbus's own full build
over the same documents (the figure ``nimbus eval`` reports, the same numbering here).
"""

from __future__ import annotations

import argparse
import shutil
import sys
from dataclasses import replace
from pathlib import Path

from benchmarks.incremental import ROOT


def cut(root: Path, share: float, parts: int, out: Path) -> list[Path]:
    """The collection's docs cut into folders ``<name>-0`` (the base) .. ``<name>-<parts>``,
    each holding its ``docs.jsonl``: a bundle of its own, its documents' URLs those its
    folder's name gives."""
    lines = (root / "docs.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    first = len(lines) - max(parts, round(len(lines) * share))
    rest = lines[first:]
    size = -(-len(rest) // parts)
    chunks = [lines[:first]] + [rest[i : i + size] for i in range(0, len(rest), size)]
    folders = []
    for i, chunk in enumerate(chunks):
        folder = out / f"{root.name}-{i}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "docs.jsonl").write_text("".join(chunk), encoding="utf-8")
        folders.append(folder)
    return folders


def main(argv: list[str] | None = None) -> int:
    from services.config import Settings
    from services.eval.collection import load_collection
    from services.eval.crawl import crawl_collection
    from services.eval.metrics import evaluate
    from services.eval.run import run_hits, state_settings
    from services.indexing.build import build_index
    from services.indexing.delta_build import publish_delta
    from services.indexing.incremental import update_index
    from services.search.service import SearchService

    p = argparse.ArgumentParser(description="ranking on a base and its deltas, merged, and fully built")
    p.add_argument("collection", type=Path, nargs="?", default=ROOT / "data" / "ir" / "cranfield")
    p.add_argument("--share", type=float, default=0.3, help="share of the documents in deltas")
    p.add_argument("--deltas", type=int, default=3)
    p.add_argument("--depth", type=int, default=1000)
    p.add_argument("--work", type=Path, default=ROOT / "var" / "bench" / "delta-ranking")
    args = p.parse_args(argv)
    shutil.rmtree(args.work, ignore_errors=True)
    folders = cut(args.collection, args.share, args.deltas, args.work / "parts")
    judged = load_collection(args.collection)  # the queries and judgments
    collections = [replace(judged, root=f) for f in folders]  # each part's documents
    state = args.work / "state"
    settings = state_settings(Settings.from_env({}), state)
    ids: dict[int, list[str]] = {}

    def crawl(i: int) -> None:
        stored = crawl_collection(collections[i], settings, state, progress=False)
        ids.update(stored.doc_ids)

    def figures(label: str) -> dict[str, float]:
        service = SearchService(settings, recheck_seconds=0.0)
        try:
            run = {}
            for query in judged.queries:
                ranked = [d for d, _ in service.ranked(query.text, args.depth, operators=False)]
                run[query.id], _ = run_hits(ranked, ids, args.depth)
            index = service.holder.current()
            segments = len(index.segments) if index is not None else 0
        finally:
            service.close()
        found = evaluate(run, judged.qrels)
        print(
            f"{label:34s} segments {segments}  "
            + "  ".join(f"{name} {value:.4f}" for name, value in found.items()),
            flush=True,
        )
        return found

    crawl(0)
    build_index(settings, progress=False)
    base_only = figures("base alone (part of the documents)")
    for i in range(1, len(collections)):
        crawl(i)
        publish_delta(settings, progress=False)
    with_deltas = figures(f"base + {len(collections) - 1} deltas (all documents)")
    update_index(settings, progress=False)
    merged = figures("merged")
    build_index(settings, progress=False)
    full = figures("full build")
    del base_only
    for name in ("MAP", "nDCG@10"):
        if name in full:
            print(
                f"{name}: base + deltas {with_deltas[name]:.4f}, merged {merged[name]:.4f}, "
                f"full build {full[name]:.4f} (deltas / full {with_deltas[name] / full[name]:.4f}x)",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
