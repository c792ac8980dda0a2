"""`nimbus archive`: web archives in and out of the store (``services.archives``).

The group's subcommands each come from a function ``add_<name>(sub)`` listed in
``SUBCOMMANDS``; a new one (``nimbus archive crawl``) is one more function and one more
entry there, or a module of its own whose ``add_parser(sub)`` is listed the same way.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from services.cli.parsing import leaf
from services.config import Settings

if TYPE_CHECKING:  # argparse's class is generic only to type checkers
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
        help="web archives and dumps: export what was crawled as WARC",
        description="Work with archives: export the crawl's stored documents as standard WARC 1.1.",
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


SUBCOMMANDS: tuple[Callable[[Subcommands], None], ...] = (add_export,)  # in `--help` order


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
