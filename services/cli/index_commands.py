"""`nimbus index`: the published index (the schema it reads: ``db_commands``, `nimbus migrate`).

``nimbus index`` builds here and now (``build``, the bare form: a developer's machine,
``make index-emr``); ``nimbus index update`` publishes what was committed since as a delta
segment of the active index (``services.indexing.delta_build``), ``--merge`` folds the base,
its deltas and anything since into one segment (``services.indexing.incremental``); on the
stack the indexer instance runs ``nimbus index daemon``, which builds, updates and merges on a
schedule and on request, and
``nimbus index now`` / ``status`` ask it and follow it through the database
(``services.indexing.builds``).
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import TYPE_CHECKING

from services.cli.parsing import Default, leaf, positive
from services.config import Settings
from services.indexing.errors import IndexBuildError

if TYPE_CHECKING:
    from sqlalchemy import Engine
    from sqlalchemy.orm import Session, sessionmaker

    from services.indexing.builds import BuildView

# What `nimbus index [options]` means without a subcommand (services.cli.parsing).
DEFAULT = Default("build", "an option of `nimbus index build`")
FOLLOW_POLL = 1.0  # seconds between looks at a build `nimbus index now --wait` follows
_RUNNERS = ["inline", "local", "emr"]


class BuildFailedError(IndexBuildError):
    """The build `nimbus index now --wait` followed ended failed; the message is its error."""


def add_parsers(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``nimbus index`` and its subcommands."""
    index_ = commands.add_parser(
        "index",
        help="build the index and PageRank with MapReduce and publish; the indexer's daemon",
        description="Build the index and PageRank from the crawled documents with MapReduce and "
        "publish the segment the search service loads, here and now (`nimbus index [build "
        "options]` is `nimbus index build ...`); or run the indexer's daemon, ask it for a build "
        "and follow its builds.",
        usage="%(prog)s [-h] SUBCOMMAND ...\n       %(prog)s [build options]",
    )
    sub = index_.add_subparsers(
        dest="action", metavar="SUBCOMMAND", title="subcommands", required=True, prog=index_.prog
    )
    build_ = sub.add_parser(
        "build",
        help="build and publish here and now (the default: `nimbus index`)",
        description="Build the index and PageRank with MapReduce in this process and publish "
        "the segment, printing each stage; the indexer's queue is not involved.",
    )
    build_.add_argument("--runner", choices=_RUNNERS, help="mrjob runner (NIMBUS_MR_RUNNER)")
    build_.add_argument("--quiet", action="store_true", help="no progress on stderr")
    leaf(build_, build)

    update_ = sub.add_parser(
        "update",
        help="index what was committed since the active index as a delta segment (--merge: "
        "merge it all into one), here and now",
        description="Index the documents committed since the active index version's newest "
        "segment (new pages and recrawls) with the same MapReduce jobs and publish them as a "
        "delta segment searched beside the base, scored with the collection's statistics; anchor "
        "text from older pages and PageRank wait for the next merge. With --merge, index "
        "everything committed since the base instead, merge it into the base with the whole link "
        "graph, PageRank and the statistics recomputed (a full build's segment), and publish that.",
    )
    update_.add_argument(
        "--merge", action="store_true", help="merge the base, its deltas and what is new into one segment"
    )
    update_.add_argument("--runner", choices=_RUNNERS, help="mrjob runner (NIMBUS_MR_RUNNER)")
    update_.add_argument("--quiet", action="store_true", help="no progress on stderr")
    leaf(update_, update)

    daemon_ = sub.add_parser(
        "daemon",
        help="the indexer: build on a schedule and on request, one at a time, until stopped",
        description="Run the indexer instance's service: every NIMBUS_INDEX_EVERY seconds (0: "
        "never) and for every `nimbus index now`, build and publish, one build at a time, keeping "
        "each build's state and progress in the database; in between, a delta segment every "
        "NIMBUS_UPDATE_EVERY seconds and a merge in the background once NIMBUS_MERGE_DELTAS "
        "deltas or NIMBUS_MERGE_SHARE of the base's documents are in them. SIGTERM hands a "
        "running build back.",
    )
    leaf(daemon_, daemon, no_words="takes no arguments")

    now_ = sub.add_parser(
        "now",
        help="ask the indexer for a build now (it starts within seconds)",
        description="Ask the indexer (`nimbus index daemon`) for a build; with --wait, follow "
        "it, printing its progress, until it ends (exit status 1 when it failed).",
    )
    now_.add_argument("--wait", action="store_true", help="follow the build until it ends")
    now_.add_argument("--runner", choices=_RUNNERS, help="mrjob runner (default: the indexer's)")
    leaf(now_, now, no_words="takes no arguments")

    status_ = sub.add_parser(
        "status",
        help="the recent index builds: state, who asked, runner, duration, outcome, progress",
        description="Print the recent index builds, newest first: state, who asked, runner, "
        "start and duration, the published segment or the error, and the last progress line.",
    )
    status_.add_argument("--last", type=positive, default=10, metavar="N", help="how many (10)")
    leaf(status_, status, no_words="takes no arguments")


def build(args: argparse.Namespace, settings: Settings) -> int:
    from services.indexing.build import build_index

    result = build_index(settings.with_overrides(mr_runner=args.runner), progress=not args.quiet)
    print(
        f"published {result.segment}: {result.num_docs} documents "
        f"({result.near_duplicates} near-duplicates folded), {result.num_terms} terms, "
        f"PageRank in {result.pagerank_iterations} iterations, {result.seconds:.1f} s"
    )
    return 0


def update(args: argparse.Namespace, settings: Settings) -> int:
    from services.indexing.delta_build import publish_delta
    from services.indexing.incremental import update_index

    run = update_index if args.merge else publish_delta
    result = run(settings.with_overrides(mr_runner=args.runner), progress=not args.quiet)
    if result.version_id is None:
        print(f"nothing committed since index version {result.base_version}: {result.segment} stays")
        return 0
    print(
        f"published {'merged segment' if args.merge else 'delta'} {result.segment} (version "
        f"{result.version_id}): {result.new_documents} documents added or replaced, "
        f"{result.num_docs} in all, through commit seq {result.through_seq}, {result.seconds:.1f} s"
    )
    return 0


def daemon(args: argparse.Namespace, settings: Settings) -> int:
    """Until SIGTERM (systemd) or Ctrl-C: both stop it cleanly, handing a running build back."""
    import os
    import signal
    import threading

    from services.indexing.daemon import IndexDaemon

    indexer = IndexDaemon(settings, echo=True)

    def stop(*_: object) -> None:
        # From another thread: the handler interrupts the main thread, which may hold the
        # very lock stop() takes (Event.set), and would wait for itself.
        threading.Thread(target=indexer.stop, name="stop").start()

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, stop)
    every = settings.index.index_every
    print(
        f"index daemon {indexer.worker}: builds on request"
        + (f" and every {every} s" if every else " only (NIMBUS_INDEX_EVERY=0)")
        + f", runner {settings.index.mr_runner}",
        file=sys.stderr,
        flush=True,
    )
    indexer.run()
    print(f"index daemon {indexer.worker} stopped: {dict(indexer.counters)}", file=sys.__stderr__, flush=True)
    if indexer.abandoned is not None and indexer.abandoned.is_alive():
        # A build handed back at the stop still runs in its thread, which nothing can
        # interrupt; the interpreter's shutdown would run its cleanup under it (the inline
        # runner has replaced sys.stderr): leave at once, the row is already handed back.
        sys.stdout.flush()
        os._exit(0)
    return 0


def _sessions(settings: Settings) -> tuple[Engine, sessionmaker[Session]]:
    from services.storage.sql.engines import make_engine, session_factory
    from services.storage.sql.schema import init_db

    engine = make_engine(settings.database_url)
    init_db(engine)
    return engine, session_factory(engine)


def _requester() -> str:
    import getpass
    import socket

    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no name for this uid (a bare container)
        user = "unknown"
    return f"{user}@{socket.gethostname()}"


def now(args: argparse.Namespace, settings: Settings) -> int:
    """A requested row for the indexer; with ``--wait``, its progress until it ends."""
    from services.indexing import builds
    from services.indexing.daemon import POLL

    engine, sessions = _sessions(settings)
    try:
        with sessions.begin() as session:
            asked = builds.request_build(session, _requester(), time.time(), runner=args.runner or "")
        print("\n".join(asked.asked_lines(POLL)))
        if not args.wait:
            return 0
        ended = _follow(sessions, asked.id)
    finally:
        engine.dispose()
    if ended.state == builds.BuildState.FAILED:
        raise BuildFailedError(f"index build {ended.id} failed: {ended.error}")
    print(f"index build {ended.id} succeeded: published {ended.segment}")
    return 0


def _follow(sessions: sessionmaker[Session], build_id: int) -> BuildView:
    """Print the build's new progress lines until it ends; returns it as it ended."""
    from services.indexing import builds
    from services.indexing.daemon import POLL

    shown: list[str] = []
    asked_at = time.monotonic()
    hinted = False
    while True:
        with sessions() as session:
            view = builds.get_build(session, build_id)
        if view is None:
            raise BuildFailedError(f"index build {build_id} is gone from the database")
        lines = view.progress.splitlines()
        for line in _new_lines(shown, lines):
            print(line, file=sys.stderr, flush=True)
        shown = lines
        if view.state in (builds.BuildState.SUCCEEDED, builds.BuildState.FAILED):
            return view
        waited = time.monotonic() - asked_at
        if view.state == builds.BuildState.REQUESTED and not hinted and waited > 6 * POLL:
            hinted = True
            print(
                f"index build {build_id} is still waiting for an indexer: is `nimbus index daemon` "
                "running against this database?",
                file=sys.stderr,
                flush=True,
            )
        time.sleep(FOLLOW_POLL)


def _new_lines(shown: list[str], lines: list[str]) -> list[str]:
    """The lines of ``lines`` after those already ``shown``: the row keeps a bounded tail,
    so the longest end of ``shown`` that starts ``lines`` is where the new ones begin."""
    for k in range(min(len(shown), len(lines)), 0, -1):
        if shown[-k:] == lines[:k]:
            return lines[k:]
    return lines


def status(args: argparse.Namespace, settings: Settings) -> int:
    from services.indexing import builds

    engine, sessions = _sessions(settings)
    try:
        with sessions() as session:
            views = builds.recent_builds(session, args.last)
    finally:
        engine.dispose()
    print("\n".join(builds.status_lines(views, time.time())))
    return 0
