"""`nimbus index` and `nimbus migrate`: the published index and the database schema it reads."""

from __future__ import annotations

import argparse

from services.cli.parsing import leaf
from services.config import Settings


def add_parsers(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``nimbus index`` and ``nimbus migrate``."""
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
    # The indexer's queue (index_builds): `index now` asks it for a build, `index status` follows.
    builds = index_.add_subparsers(dest="index_action", metavar="SUBCOMMAND", title="subcommands")
    now_ = builds.add_parser(
        "now",
        help="ask the stack's indexer for a build now",
        description="Ask the indexer for an index build: a requested row it takes when it next looks.",
    )
    leaf(now_, index_now)
    status_ = builds.add_parser(
        "status", help="the recent index builds", description="Print the recent index builds, newest first."
    )
    leaf(status_, index_status)

    migrate_ = commands.add_parser(
        "migrate",
        help="bring the database schema to this release's (Alembic, under a lock)",
        description="Bring the database schema to this release's (Alembic), under a lock, so "
        "instances starting together against one database are safe.",
    )
    migrate_.add_argument("--database-url", help="the database (default: NIMBUS_DATABASE_URL)")
    leaf(migrate_, migrate)


def index(args: argparse.Namespace, settings: Settings) -> int:
    from services.indexing.build import build_index

    result = build_index(settings.with_overrides(mr_runner=args.runner), progress=not args.quiet)
    print(
        f"published {result.segment}: {result.num_docs} documents "
        f"({result.near_duplicates} near-duplicates folded), {result.num_terms} terms, "
        f"PageRank in {result.pagerank_iterations} iterations, {result.seconds:.1f} s"
    )
    return 0


def index_now(args: argparse.Namespace, settings: Settings) -> int:
    import getpass
    import time

    from services.admin import operations

    with operations.database(settings.database_url) as sessions, sessions.begin() as session:
        build = operations.request_index_build(session, getpass.getuser(), time.time())
    for line in build.requested_lines():
        print(line)
    return 0


def index_status(args: argparse.Namespace, settings: Settings) -> int:
    from services.admin import operations

    with operations.database(settings.database_url) as sessions, sessions() as session:
        builds = operations.recent_index_builds(session)
    for line in operations.builds_lines(builds):
        print(line)
    return 0


def migrate(args: argparse.Namespace, settings: Settings) -> int:
    from services.storage.sql.engines import make_engine
    from services.storage.sql.migrate import upgrade_to_head

    url = args.database_url or settings.database_url
    engine = make_engine(url)
    try:
        done = upgrade_to_head(engine)
    finally:
        engine.dispose()
    where = engine.url.render_as_string(hide_password=True)
    if done.changed:
        print(f"migrated {where} from {done.before or 'no schema'} to {done.after}")
    else:
        print(f"{where} is at {done.after}, this release's schema: nothing to do")
    return 0
