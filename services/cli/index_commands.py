"""`nimbus index`: the published index (`nimbus migrate`, the schema it reads: db_commands)."""

from __future__ import annotations

import argparse

from services.cli.parsing import leaf
from services.config import Settings


def add_parsers(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``nimbus index``."""
    index_ = commands.add_parser(
        "index",
        help="build the index and PageRank with MapReduce and publish",
        description="Build the index and PageRank from the crawled documents with MapReduce, "
        "then publish the segment the search service loads.",
    )
    index_.add_argument(
        "--runner", choices=["inline", "local", "emr"], help="mrjob runner (NIMBUS_MR_RUNNER)"
    )
    index_.add_argument("--quiet", action="store_true", help="no progress on stderr")
    leaf(index_, index)


def index(args: argparse.Namespace, settings: Settings) -> int:
    from services.indexing.build import build_index

    result = build_index(settings.with_overrides(mr_runner=args.runner), progress=not args.quiet)
    print(
        f"published {result.segment}: {result.num_docs} documents "
        f"({result.near_duplicates} near-duplicates folded), {result.num_terms} terms, "
        f"PageRank in {result.pagerank_iterations} iterations, {result.seconds:.1f} s"
    )
    return 0
