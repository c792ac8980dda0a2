"""``nimbus eval``: a judged collection through the real pipeline, measured.

The collection is stored by an archive crawl of a JSON-lines bundle, as
``nimbus archive crawl`` stores one (``services.eval.crawl``), indexed by the same
MapReduce build (``services.indexing.build.build_index``) and searched by the same
ranking code the API uses (``SearchService.ranked``), so the figures measure
what users get. The run is written in TREC format and scored by ir-measures
over the judged queries.

Eval keeps its state (SQLite database, file:// blobs, segment cache) in a
directory of its own (``state_settings``), never in the user's crawl; running
it again on the same state stores nothing twice and rebuilds the index, so
ranking changes are measured on the same documents.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from services.config import Settings
from services.eval.collection import load_collection
from services.eval.crawl import crawl_collection
from services.eval.metrics import evaluate, write_trec_run
from services.indexing.build import build_index
from services.search.service import SearchService

DEFAULT_DEPTH = 1000  # results per query in the run: trec_eval's customary depth


def default_state(root: Path, settings: Settings) -> Path:
    """``<var_dir>/eval/<collection folder name>``."""
    return Path(settings.var_dir) / "eval" / Path(root).resolve().name


def state_settings(settings: Settings, state: Path) -> Settings:
    """``settings`` with database, blob store and local caches inside ``state``, and no
    near-duplicate folding: folding shows a web searcher one of several copies, but each
    document of a judged collection is judged on its own, and a folded copy is never in
    the run (two identical relevant abstracts cost half their recall)."""
    state = Path(state).resolve()
    return settings.with_overrides(
        database_url=f"sqlite:///{state / 'nimbus.db'}",
        blob_url=f"file://{state / 'blobs'}",
        var_dir=state / "var",
        near_duplicates=False,
    )


def run_hits(
    ranked: list[int], doc_ids: dict[int, list[str]], depth: int
) -> tuple[list[tuple[str, float]], int]:
    """One query's run lines as (collection id, score), at most ``depth``, and how many
    results were no document of the collection (a shared state's).

    trec_eval orders a run by score, not by rank: the run's score is the result order (AND
    matches listed before better-scoring partial matches must stay before them), depth
    minus rank, exact in the file. A document stored once for several copies lists each
    copy's id, in a row where the document ranked: each copy is judged on its own."""
    hits: list[tuple[str, float]] = []
    foreign = 0
    for doc_num in ranked:
        source_ids = doc_ids.get(doc_num)
        if source_ids is None:
            foreign += 1
            continue
        for source_id in source_ids:
            hits.append((source_id, float(depth - len(hits))))
    return hits[:depth], foreign


def run_eval(
    root: Path,
    settings: Settings,
    *,
    run_path: Path,
    state: Path,
    depth: int = DEFAULT_DEPTH,
    progress: bool = True,
) -> dict[str, float]:
    """Archive-crawl (its bundle made in ``state``), index and search the collection at
    ``root`` with ``settings`` as given; write the TREC run to ``run_path``; return the
    measures over the judged queries."""

    def say(message: str) -> None:
        if progress:
            print(f"eval: {message}", file=sys.stderr, flush=True)

    collection = load_collection(root)
    for warning in collection.warnings:  # said even when quiet: they change what the figures mean
        print(f"eval: warning: {warning}", file=sys.stderr, flush=True)
    say(
        f"{len(collection.doc_ids)} documents, {len(collection.queries)} queries "
        f"({len(collection.judged_queries)} judged) in {root}"
    )
    stored = crawl_collection(collection, settings, state, progress=progress)
    say(
        f"stored {stored.documents} documents ({stored.copies} copies of others, "
        f"{len(collection.doc_ids) - stored.documents - stored.copies} empty or unreadable left out) "
        f"in {stored.seconds:.1f} s ({stored.per_second:.0f} docs/s)"
    )
    build_index(settings, progress=progress)

    started = time.monotonic()
    service = SearchService(settings)
    run: dict[str, list[tuple[str, float]]] = {}
    foreign = 0
    try:
        for query in collection.queries:
            ranked = [doc_num for doc_num, _score in service.ranked(query.text, depth, operators=False)]
            run[query.id], outside = run_hits(ranked, stored.doc_ids, depth)
            foreign += outside
    finally:
        service.close()
    seconds = time.monotonic() - started
    say(
        f"searched {len(run)} queries in {seconds:.1f} s "
        f"({len(run) / seconds if seconds > 0 else 0.0:.0f} queries/s), depth {depth}"
    )
    if foreign:
        say(
            f"warning: {foreign} hits were documents outside the collection and were left out "
            "(use a state directory of its own)"
        )
    write_trec_run(run, run_path)
    return evaluate(run, collection.qrels)
