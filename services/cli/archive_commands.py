"""`nimbus archive`: archive crawls in, WARC out (``services.archives``, ``services.crawler.archive``).

``crawl`` registers a bundle (a folder or an ``s3://`` prefix with its ``bundle.toml``) and
runs its archive crawl to the end on this machine, with a progress line; ``register`` only
registers it, for a crawl cluster's workers and committer to process (``nimbus crawl
worker`` / ``committer`` take archive batches as they take URL batches); ``export`` writes
the crawl's stored documents as WARC 1.1. ``nimbus crawl status`` and the admin dashboard
show archive crawls beside the web crawl.

The group's subcommands each come from a function ``add_<name>(sub)`` listed in
``SUBCOMMANDS``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from services.cli.parsing import leaf, positive
from services.config import Settings

if TYPE_CHECKING:  # argparse's class is generic only to type checkers
    from services.crawler.archive.register import Registered

    Subcommands = argparse._SubParsersAction[argparse.ArgumentParser]


def add_parsers(commands: Subcommands) -> None:
    """``nimbus archive`` and its subcommands."""
    sub = add_group(commands)
    for add in SUBCOMMANDS:
        add(sub)


def add_group(commands: Subcommands) -> Subcommands:
    """The ``archive`` group; returns its subcommands' action, for ``add_<name>(sub)``."""
    archive = commands.add_parser(
        "archive",
        help="crawl web archives, wiki and directory dumps, collections; export the crawl as WARC",
        description="Archive crawls: a bundle's records stored as if their pages had been fetched, "
        "through the crawl's ledger, committer and document writer; and the crawl's stored "
        "documents exported as standard WARC 1.1.",
    )
    return archive.add_subparsers(
        dest="action", metavar="SUBCOMMAND", title="subcommands", required=True, prog=archive.prog
    )


def add_export(sub: Subcommands) -> None:
    export_ = sub.add_parser(
        "export",
        help="write the stored documents as WARC 1.1 (request, response, metadata records)",
        description="Write what was crawled (the documents in the database, their bytes from the "
        "blob store) as standard WARC 1.1: a request, a response and a metadata record (title, "
        "language, out-links) a document, duplicate URLs as revisit records, WARC-Payload-Digest "
        "and WARC-Block-Digest on each, every record its own gzip member (a plain file when OUT "
        "ends in .warc). warcio, pywb and Nimbus's own archive readers read it. A document whose stored "
        "bytes cannot be read is named and left out, the rest written; the exit status is then 1.",
    )
    export_.add_argument(
        "out", metavar="OUT", help="the file to write (crawl.warc.gz), or s3://bucket/path/crawl.warc.gz"
    )
    export_.add_argument(
        "--since",
        type=moment,
        metavar="WHEN",
        help="only documents fetched at or after WHEN (UTC: 2026-11-01 or 2026-11-01T12:00:00)",
    )
    export_.add_argument("--host", default="", help="only documents on this host name (any port)")
    export_.add_argument("--quiet", action="store_true", help="no progress line on stderr")
    leaf(export_, export)


def add_crawl(sub: Subcommands) -> None:
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


def add_register(sub: Subcommands) -> None:
    register_ = sub.add_parser(
        "register",
        help="register a bundle for a crawl cluster's workers (nothing is read but its plan)",
        description="Register the bundle at PATH_OR_S3_URI and plan its batches; the crawl "
        "cluster's workers (`nimbus crawl worker`) and committer process them.",
    )
    _bundle_options(register_)
    leaf(register_, register)


SUBCOMMANDS: tuple[Callable[[Subcommands], None], ...] = (
    add_crawl,
    add_register,
    add_export,
)  # in `--help` order


def moment(text: str) -> float:
    """An argparse type: an ISO 8601 date or time (UTC unless it says otherwise), as epoch seconds."""
    try:
        parsed = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a date or time: give 2026-11-01 or 2026-11-01T12:00:00"
        ) from None
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).timestamp()


def export(args: argparse.Namespace, settings: Settings) -> int:
    from services.archives.stored_export import ERRORS_SHOWN, Selection, export_store

    selection = Selection(since=args.since, host=args.host)
    compress = not args.out.lower().endswith(".warc")
    report = export_store(settings, args.out, selection, progress=not args.quiet, compress=compress)
    for error in report.errors[:ERRORS_SHOWN]:
        print(f"nimbus archive export: {error}", file=sys.stderr)
    if report.failed > ERRORS_SHOWN:
        print(f"nimbus archive export: ... and {report.failed - ERRORS_SHOWN} more", file=sys.stderr)
    print(f"exported {report.summary()} to {args.out}")
    return 1 if report.failed else 0


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
