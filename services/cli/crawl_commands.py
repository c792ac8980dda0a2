"""`nimbus crawl`: a crawl on this machine, one role of a crawl cluster, or an operator's
command to every crawler (status, seed, pause, resume, stop, block, unblock) through the
database (``services.admin.operations``), or with ``--remote`` through the site's admin API
(``services.cli.remote``).

Each is a subcommand with its own options and ``--help``; a bare ``nimbus crawl URL...``
(or no argument: continue the frontier) is ``nimbus crawl run``.
"""

from __future__ import annotations

import argparse
import sys

from services.cli.parsing import Default, count, leaf, positive, seconds
from services.config import Settings

# What `nimbus crawl ARG...` means when ARG is no subcommand name (services.cli.parsing).
DEFAULT = Default("run", "an absolute http(s) seed URL")

_SEED_ELSEWHERE = "takes no URLs; add seeds with `nimbus crawl seed URL...`"


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``nimbus crawl`` and its subcommands."""
    crawl = commands.add_parser(
        "crawl",
        help="crawl from seed URLs; the crawl cluster's roles and its operator commands",
        description="Crawl into the database and blob store, run one role of a crawl cluster "
        "(machines sharing one database and one bucket), or tell every running crawler, on any "
        "machine, what to do. `nimbus crawl SEED_URL... [options]` is `nimbus crawl run ...`.",
        usage="%(prog)s [-h] SUBCOMMAND ...\n       %(prog)s [SEED_URL ...] [run options]",
    )
    # prog given: argparse would otherwise build the subcommands' from the two-line usage above.
    sub = crawl.add_subparsers(
        dest="action", metavar="SUBCOMMAND", title="subcommands", required=True, prog=crawl.prog
    )

    run_ = sub.add_parser(
        "run",
        help="crawl from seed URLs on this machine (the default: `nimbus crawl URL...`)",
        description="Crawl from seed URLs into the database and blob store, with a live progress "
        "line and a closing summary. Without URLs it continues the frontier in the database.",
    )
    run_.add_argument(
        "seeds",
        nargs="*",
        metavar="SEED_URL",
        help="absolute http(s) URLs to start from (none: continue the frontier in the database)",
    )
    _fetch_options(run_)
    run_.add_argument(
        "--processes",
        type=positive,
        metavar="N",
        help="worker processes sharing the host partitions (one per core); 2 or more run as a crawl "
        "cluster on this machine: that many workers and one committer process",
    )
    leaf(run_, run, words="seeds")

    status_ = sub.add_parser(
        "status",
        help="the crawler nodes (heartbeats; dead ones marked), the frontier and blocked hosts",
        description="Print every crawler node from its last heartbeat, the frontier by state and "
        "the blocked hosts.",
    )
    leaf(status_, status, no_words="takes no URLs")

    # seed, block and unblock check for an empty list themselves (services.admin.operations, as
    # the admin API does: exit status 2, from main), so argparse's `*` usage is written out.
    seed_ = sub.add_parser(
        "seed",
        help="add URLs to the frontier without crawling",
        description="Add URLs to the frontier of the crawl in the database, for the running (or "
        "next) crawlers to fetch; nothing is fetched here.",
        usage="%(prog)s [-h] [--recrawl] [--file FILE] [--remote URL] [--insecure-http] URL [URL ...]",
    )
    seed_.add_argument("urls", nargs="*", metavar="URL", help="absolute http(s) URLs, one or more")
    seed_.add_argument(
        "--file",
        metavar="FILE",
        help="also the URLs in FILE (one or more a line, # starts a comment line; - for standard "
        "input), any number: sent in batches",
    )
    seed_.add_argument(
        "--recrawl", action="store_true", help="fetch URLs already known again, before every other"
    )
    leaf(seed_, seed, words="urls")

    for name, text in (
        ("pause", "ask every running crawler, on any machine, to pause"),
        ("resume", "ask every paused crawler, on any machine, to go on"),
        ("stop", "ask every running crawler, on any machine, to stop (batches in flight handed back)"),
    ):
        signal_ = sub.add_parser(
            name, help=text, description=f"{text[0].upper()}{text[1:]}; each reads it at its next heartbeat."
        )
        leaf(signal_, signal, no_words="takes no URLs")

    block_ = sub.add_parser(
        "block",
        help="take hosts (and their subdomains) out of every crawl",
        description="Take hosts and their subdomains out of every crawl, from each crawler's next "
        "heartbeat; `nimbus crawl status` and the dashboard list them. Their stored pages stay "
        "searchable unless --purge is given (again on a host blocked earlier, to purge it then).",
        usage="%(prog)s [-h] [--reason R] [--purge] [--remote URL] [--insecure-http] HOST [HOST ...]",
    )
    block_.add_argument(
        "hosts", nargs="*", metavar="HOST", help="host names (example.org) or URLs, one or more"
    )
    block_.add_argument("--reason", default="", metavar="R", help="why, shown on the dashboard")
    block_.add_argument(
        "--purge",
        action="store_true",
        help="also take their stored pages (their subdomains' too) out of the index, from its next "
        "update; unblocking does not bring them back, a recrawl that finds a page good does",
    )
    leaf(block_, block, words="hosts")

    unblock_ = sub.add_parser(
        "unblock",
        help="let blocked hosts back into the crawl",
        description="Let blocked hosts back: links to them found from now on are crawled. Pages a "
        "purge took out of the index stay out until a recrawl finds them good.",
        usage="%(prog)s [-h] [--remote URL] [--insecure-http] HOST [HOST ...]",
    )
    unblock_.add_argument("hosts", nargs="*", metavar="HOST", help="blocked host names, one or more")
    leaf(unblock_, unblock, words="hosts")

    worker_ = sub.add_parser(
        "worker",
        help="run a crawl cluster's worker: fetch leased batches, write blocks, acknowledge",
        description="Run one worker of a crawl cluster (machines sharing one database and one "
        "bucket): lease fetch batches from the shared frontier, fetch, write blocks, acknowledge. "
        "A committer commits them.",
    )
    worker_.add_argument(
        "--id", dest="identity", metavar="NAME", help="this worker's name (default: host and partitions)"
    )
    _fetch_options(worker_)
    leaf(worker_, worker, no_words=_SEED_ELSEWHERE)

    committer_ = sub.add_parser(
        "committer",
        help="run a crawl cluster's committer: one elected commits, the others stand by",
        description="Run one committer of a crawl cluster: the one elected through the database "
        "commits the workers' acknowledged batches in order; the others stand by and take over.",
    )
    committer_.add_argument(
        "--quiet",
        action="store_true",
        help="no effect: a committer has no live line (taken so both roles share a command line)",
    )
    leaf(committer_, committer, no_words=_SEED_ELSEWHERE)


def _fetch_options(parser: argparse.ArgumentParser) -> None:
    """The options of the commands that fetch pages (``run``, ``worker``)."""
    parser.add_argument(
        "--max-pages", type=count, metavar="N", help="page requests this run (NIMBUS_MAX_PAGES)"
    )
    parser.add_argument(
        "--max-depth", type=count, metavar="N", help="links followed from a seed (NIMBUS_MAX_DEPTH)"
    )
    parser.add_argument("--delay", type=seconds, metavar="S", help="seconds between requests to one host")
    parser.add_argument(
        "--concurrency", type=positive, metavar="N", help="requests in flight, all processes together"
    )
    parser.add_argument("--quiet", action="store_true", help="no live progress line (the summary stays)")


def run(args: argparse.Namespace, settings: Settings) -> int:
    """``nimbus crawl run``: a crawl on this machine, in one process or a local cluster."""
    from services.crawler.crawl import run_crawl
    from services.text.errors import BadUrlError

    settings = settings.with_overrides(
        crawl_delay=args.delay, concurrency=args.concurrency, crawl_processes=args.processes
    )
    try:
        if settings.crawl.crawl_processes > 1:
            from services.crawler.local_cluster import run_local_cluster

            stats = run_local_cluster(
                settings,
                args.seeds,
                settings.crawl.crawl_processes,
                max_pages=args.max_pages,
                max_depth=args.max_depth,
                progress=not args.quiet,
            )
        else:
            stats = run_crawl(
                settings,
                args.seeds,
                max_pages=args.max_pages,
                max_depth=args.max_depth,
                progress=not args.quiet,
            )
    except BadUrlError as exc:
        raise BadUrlError(f"bad seed: {exc}; give absolute http(s) URLs") from exc
    if args.quiet:  # the live line is off; the summary is always printed
        print(stats.summary(), file=sys.stderr)
    if stats.pages == 0 and args.seeds:
        from services.crawler.report.diagnose import why_nothing

        for line in why_nothing(settings, args.seeds):
            print(f"nimbus crawl: {line}", file=sys.stderr)
        return 1
    return 0 if stats.pages or not stats.errors else 1


def worker(args: argparse.Namespace, settings: Settings) -> int:
    """One worker of a crawl cluster, for a machine of its own (``infra/``)."""
    from services.crawler.crawl import run_crawl

    settings = settings.with_overrides(crawl_delay=args.delay, concurrency=args.concurrency)
    stats = run_crawl(
        settings,
        [],
        max_pages=args.max_pages,
        max_depth=args.max_depth,
        progress=not args.quiet,
        role="worker",
        identity=args.identity,
    )
    if args.quiet:
        print(stats.summary(), file=sys.stderr)
    return 0


def committer(args: argparse.Namespace, settings: Settings) -> int:
    """One committer of a crawl cluster (active or standing by) until stopped."""
    from services.crawler.cluster.committer_role import run_committer

    counters = run_committer(settings)
    print(
        f"committer stopped: {counters['batches_committed']} batches, "
        f"{counters['documents']} documents committed",
        file=sys.stderr,
    )
    return 0


def status(args: argparse.Namespace, settings: Settings) -> int:
    """The crawler nodes (from their heartbeats), the frontier by state, the operator's switches."""
    import time

    from services.admin import operations

    with operations.database(settings.database_url) as sessions, sessions() as session:
        found = operations.crawl_status(session, time.time(), settings.crawl.heartbeat_seconds)
    return _say(found.lines())


def seed(args: argparse.Namespace, settings: Settings) -> int:
    """URLs into the frontier through the database, for crawlers on every machine."""
    import time

    from services.admin import operations

    # Every URL checked (exit status 2 on a bad one) before the database is opened.
    batches = operations.seed_batches(seed_words(args))
    results, partitions = [], settings.crawl.partitions
    with operations.database(settings.database_url) as sessions:
        for urls in batches:
            with sessions.begin() as session:
                done = operations.seed(
                    session, urls, recrawl=args.recrawl, now=time.time(), partitions=partitions
                )
                results.append(done)
    return _say(operations.seeded_total(results).lines())


def seed_words(args: argparse.Namespace) -> list[str]:
    """The seed URLs as given: the command line's, then those of ``--file``."""
    from services.admin import operations

    return list(args.urls) + (operations.seed_file_words(args.file) if args.file else [])


def signal(args: argparse.Namespace, settings: Settings) -> int:
    """``pause``, ``resume``, ``stop``: through the database, so they reach every machine."""
    import time

    from services.admin import operations

    what = operations.crawl_command(args.action)
    with operations.database(settings.database_url) as sessions, sessions.begin() as session:
        done = operations.command(session, what, time.time())
    return _say(done.lines())


def block(args: argparse.Namespace, settings: Settings) -> int:
    """Hosts out of every crawl, through the database, from each crawler's next heartbeat."""
    import time

    from services.admin import operations

    hosts, reason = operations.host_names(args.hosts), operations.block_reason(args.reason)
    with operations.database(settings.database_url) as sessions, sessions.begin() as session:
        done = operations.block(session, hosts, reason, time.time(), purge=args.purge)
    return _say(done.lines())


def unblock(args: argparse.Namespace, settings: Settings) -> int:
    """Blocked hosts back into the crawl, through the database."""
    from services.admin import operations

    hosts = operations.host_names(args.hosts)
    with operations.database(settings.database_url) as sessions, sessions.begin() as session:
        done = operations.unblock(session, hosts)
    return _say(done.lines())


def _say(lines: list[str]) -> int:
    """An operator command's answer (the remote commands print the same: services.cli.admin_client)."""
    for line in lines:
        print(line)
    return 0
