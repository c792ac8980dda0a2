"""`nimbus archive`: archive crawls (WARC and ARC files, wiki and directory dumps, collections).

``crawl`` registers a bundle (a folder or an ``s3://`` prefix with its ``bundle.toml``) and
runs its archive crawl to the end on this machine, with a progress line; ``register`` only
registers it, for a crawl cluster's workers and committer to process (``nimbus crawl
worker`` / ``committer`` take archive batches as they take URL batches). ``nimbus crawl
status`` and the admin dashboard show archive crawls beside the web crawl.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from services.cli.parsing import leaf, positive
from services.config import Settings

if TYPE_CHECKING:
    from services.crawler.archive.register import Registered


def add_parsers(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``nimbus archive`` and its subcommands."""
    archive = commands.add_parser(
        "archive",
        help="crawl web archives, wiki and directory dumps, collections (bundles with a bundle.toml)",
        description="Archive crawls: a bundle's records stored as if their pages had been fetched, "
        "through the crawl's ledger, committer and document writer.",
    )
    sub = archive.add_subparsers(
        dest="action", metavar="SUBCOMMAND", title="subcommands", required=True, prog=archive.prog
    )
    crawl_ = sub.add_parser(
        "crawl",
        help="register a bundle and run its archive crawl to the end on this machine",
        description="Register the bundle at PATH_OR_S3_URI (a folder or s3:// prefix holding "
        "bundle.toml and its archive files) and process every batch of every registered "
        "archive crawl on this machine, with progress (records/s, bytes/s, ETA, errors by kind). "
        "Running it again on a finished bundle changes nothing; after a kill it goes on where "
        "the last commit stopped.",
    )
    _bundle_options(crawl_)
    crawl_.add_argument("--quiet", action="store_true", help="no live progress line (the summary stays)")
    crawl_.add_argument(
        "--id", dest="identity", metavar="NAME", help="this crawler's name (default: host/archive)"
    )
    leaf(crawl_, crawl)

    register_ = sub.add_parser(
        "register",
        help="register a bundle for a crawl cluster's workers (nothing is read but its plan)",
        description="Register the bundle at PATH_OR_S3_URI and plan its batches; the crawl "
        "cluster's workers (`nimbus crawl worker`) and committer process them.",
    )
    _bundle_options(register_)
    leaf(register_, register)


def _bundle_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", metavar="PATH_OR_S3_URI", help="the bundle: a folder or an s3:// prefix")
    parser.add_argument(
        "--seed-frontier",
        action="store_true",
        help="put the archive's out-links in the web frontier (a re-crawl of the archived web)",
    )
    parser.add_argument(
        "--batch-size", type=positive, metavar="N", help="records per batch (default: bundle.toml's, or 500)"
    )


def _register(args: argparse.Namespace, settings: Settings) -> Registered:
    import time

    from services.crawler.archive.register import register_bundle
    from services.storage.sql.engines import make_engine, session_factory
    from services.storage.sql.schema import init_db

    source = args.source
    if "://" not in source:
        from pathlib import Path

        source = str(Path(source).resolve())
    engine = make_engine(settings.database_url)
    try:
        init_db(engine)
        return register_bundle(
            session_factory(engine),
            source,
            now=time.time(),
            endpoint_url=settings.aws_endpoint_url,
            seed_frontier=args.seed_frontier,
            batch_size=args.batch_size,
        )
    finally:
        engine.dispose()


def register(args: argparse.Namespace, settings: Settings) -> int:
    print(_register(args, settings).line())
    return 0


def crawl(args: argparse.Namespace, settings: Settings) -> int:
    import socket
    import time

    from services.crawler.crawl import run_crawl
    from services.crawler.frontier import archive_batches
    from services.storage.sql.engines import make_engine, session_factory

    registered = _register(args, settings)
    print(registered.line(), file=sys.stderr)
    stats = run_crawl(
        settings,
        [],
        progress=not args.quiet,
        web=False,
        archives=True,
        identity=args.identity or f"{socket.gethostname()}/archive",
    )
    engine = make_engine(settings.database_url)
    try:
        with session_factory(engine)() as session:
            shown = [
                p for p in archive_batches.progress(session, time.time()) if p.id == registered.bundle_id
            ]
    finally:
        engine.dispose()
    for p in shown:
        print(p.line(), file=sys.stderr)
        for damage in p.damage:
            print(f"  damaged: {damage}", file=sys.stderr)
    finished = all(p.state == archive_batches.BundleState.FINISHED for p in shown)
    if not finished:
        print(
            f"nimbus archive crawl: archive #{registered.bundle_id} is not finished "
            "(stopped, or batches still leased elsewhere); run it again to go on",
            file=sys.stderr,
        )
    del stats
    return 0 if finished else 1
