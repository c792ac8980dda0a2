"""`nimbus eval` and `nimbus compare`: ranking quality on a judged collection (TREC runs)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from services.cli.parsing import leaf, positive
from services.config import Settings


def add_parsers(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``nimbus eval`` and ``nimbus compare``."""
    ev = commands.add_parser(
        "eval",
        help="measure ranking quality on a judged collection (MAP, nDCG@10, ...)",
        description="Store a judged collection by an archive crawl of a JSON-lines bundle (as "
        "`nimbus archive crawl`), index it with the same MapReduce jobs as `nimbus index`, "
        "run every query through the search service's ranking, write a TREC run and print "
        "MAP, nDCG@10 and the other measures.",
    )
    ev.add_argument(
        "collection",
        type=Path,
        metavar="DIR",
        help="docs.jsonl, queries.jsonl and qrels.tsv (as data/ir/cranfield)",
    )
    ev.add_argument("--run", type=Path, help="TREC run file to write (default: STATE/run.trec)")
    ev.add_argument("--depth", type=positive, default=1000, help="results per query in the run")
    ev.add_argument(
        "--state", type=Path, help="database, blobs and caches of the eval (default: var/eval/<DIR name>)"
    )
    ev.add_argument("--quiet", action="store_true", help="no progress on stderr")
    leaf(ev, evaluate)

    cmp = commands.add_parser(
        "compare",
        help="two TREC runs on one judged collection, query by query",
        description="Compare two TREC runs on one judged collection, query by query, with a "
        "paired significance test.",
    )
    cmp.add_argument("run_a", type=Path, metavar="RUN_A", help="the baseline run file")
    cmp.add_argument("run_b", type=Path, metavar="RUN_B", help="the run to compare with it")
    cmp.add_argument("--collection", type=Path, required=True, help="the collection's directory (qrels.tsv)")
    cmp.add_argument(
        "--measure",
        action="append",
        choices=["MAP", "nDCG@10", "P@10", "Recall@100", "MRR"],
        help="repeatable",
    )
    leaf(cmp, compare)


def evaluate(args: argparse.Namespace, settings: Settings) -> int:
    from services.eval.metrics import format_metrics
    from services.eval.run import default_state, run_eval, state_settings

    state = args.state or default_state(args.collection, settings)
    if not os.environ.get("NIMBUS_MR_RUNNER"):  # a few thousand documents: no subprocesses
        settings = settings.with_overrides(mr_runner="inline")
    settings = state_settings(settings, state)
    run_path = args.run or state / "run.trec"
    if not args.quiet:
        print(
            f"eval: state in {state}, MapReduce runner {settings.index.mr_runner} "
            "(set NIMBUS_MR_RUNNER to choose another)",
            file=sys.stderr,
        )
    metrics = run_eval(
        args.collection, settings, run_path=run_path, state=state, depth=args.depth, progress=not args.quiet
    )
    for line in format_metrics(metrics):
        print(line)
    print(f"run file {run_path}")
    return 0


def compare(args: argparse.Namespace, settings: Settings) -> int:
    from services.eval.collection import load_collection
    from services.eval.compare import compare as compare_runs

    qrels = load_collection(args.collection).qrels
    for measure in args.measure or ["MAP", "nDCG@10"]:
        for line in compare_runs(args.run_a, args.run_b, qrels, measure).lines():
            print(line)
    return 0
