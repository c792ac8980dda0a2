"""`nimbus crawl`: a crawl on this machine, one role of a crawl cluster, or an operator's
command to every crawler (status, seed, pause, resume, stop, block, unblock) through the
database."""

from __future__ import annotations

import argparse
import sys

from services.config import Settings


def crawl(args: argparse.Namespace, settings: Settings) -> int:
    from services.crawler.crawl import run_crawl
    from services.text.errors import BadUrlError

    if args.seeds == ["status"]:
        return crawl_status(settings)
    if args.seeds[:1] in (["pause"], ["resume"], ["stop"], ["seed"]):
        return crawl_command(settings, args.seeds[0], args.seeds[1:], recrawl=args.recrawl)
    if args.seeds[:1] in (["block"], ["unblock"]):
        return block_command(settings, args.seeds[0], args.seeds[1:], args.reason)
    if args.seeds[:1] in (["worker"], ["committer"]):
        return cluster_role(args, settings)
    settings = settings.with_overrides(
        crawl_delay=args.delay, concurrency=args.concurrency, crawl_processes=args.processes
    )
    try:
        if settings.crawl_processes > 1:
            from services.crawler.local_cluster import run_local_cluster

            stats = run_local_cluster(
                settings,
                args.seeds,
                settings.crawl_processes,
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


def cluster_role(args: argparse.Namespace, settings: Settings) -> int:
    """One role of a crawl cluster, for a machine of its own (``infra/``)."""
    from services.crawler.crawl import run_crawl
    from services.crawler.errors import CrawlCommandError

    role, rest = args.seeds[0], args.seeds[1:]
    if rest:
        raise CrawlCommandError(
            f"nimbus crawl {role} takes no URLs; add seeds with `nimbus crawl seed URL...`"
        )
    if role == "committer":
        from services.crawler.cluster.committer_role import run_committer

        counters = run_committer(settings)
        print(
            f"committer stopped: {counters['batches_committed']} batches, "
            f"{counters['documents']} documents committed",
            file=sys.stderr,
        )
        return 0
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


def crawl_status(settings: Settings) -> int:
    """The crawler nodes (from their heartbeats) and the frontier by state."""
    import time

    from services.crawler.cluster import heartbeat
    from services.crawler.frontier import entries
    from services.storage.engines import make_engine, session_factory
    from services.storage.schema import init_db

    engine = make_engine(settings.database_url)
    try:
        init_db(engine)
        with session_factory(engine)() as session:
            now = time.time()
            views = heartbeat.nodes(session, now, settings.heartbeat_seconds)
            print(heartbeat.status_table(views, now))
            states = entries.count_by_state(session)
            by_state = ", ".join(f"{n} {state}" for state, n in sorted(states.items()))
            print(f"frontier: {by_state or 'empty'}")
            for row in heartbeat.blocked_hosts(session):
                print(f"blocked: {row.host}" + (f" ({row.reason})" if row.reason else ""))
    finally:
        engine.dispose()
    return 0


def crawl_command(settings: Settings, name: str, urls: list[str], *, recrawl: bool = False) -> int:
    """Operator commands through the database, so they reach crawlers on every machine."""
    import time

    from services.crawler.cluster import heartbeat
    from services.crawler.errors import CrawlCommandError
    from services.crawler.frontier import entries
    from services.storage.engines import make_engine, session_factory
    from services.storage.schema import init_db
    from services.text.errors import BadUrlError
    from services.text.urls import normalize_url

    if name == "seed" and not urls:
        raise CrawlCommandError("nimbus crawl seed: give one or more absolute http(s) URLs")
    if name != "seed" and urls:
        raise CrawlCommandError(f"nimbus crawl {name} takes no URLs")
    try:
        seeds = [entries.NewUrl(normalize_url(u), 0, entries.SEED_PRIORITY) for u in urls]
    except BadUrlError as exc:
        raise BadUrlError(f"bad seed: {exc}; give absolute http(s) URLs") from exc
    engine = make_engine(settings.database_url)
    try:
        init_db(engine)
        with session_factory(engine).begin() as session:
            if name == "seed":
                again = entries.recrawl_now(session, [s.url for s in seeds]) if recrawl else 0
                added = entries.add_urls(session, seeds, time.time(), partitions=settings.partitions)
                print(f"{added} new URLs in the frontier ({len(seeds) - added} known already)")
                if recrawl:
                    print(f"{again} known URLs due again now, before every other")
            else:
                heartbeat.command(session, name, time.time())
                print(
                    f"asked every crawler to {name}; each reads it at its next heartbeat "
                    f"(within {heartbeat.BEAT_EVERY:.0f} s)"
                )
    finally:
        engine.dispose()
    return 0


def block_command(settings: Settings, name: str, hosts: list[str], reason: str) -> int:
    """`block HOST...` / `unblock HOST...`: through the database, for every crawler."""
    import time

    from services.crawler.cluster import heartbeat
    from services.crawler.errors import CrawlCommandError
    from services.storage.engines import make_engine, session_factory
    from services.storage.schema import init_db

    if not hosts:
        raise CrawlCommandError(f"nimbus crawl {name}: give one or more host names (example.org)")
    engine = make_engine(settings.database_url)
    try:
        init_db(engine)
        with session_factory(engine).begin() as session:
            if name == "block":
                names = heartbeat.block_hosts(session, hosts, time.time(), reason)
                print(
                    f"blocked {', '.join(names)} (and their subdomains) for every crawler, from its "
                    f"next heartbeat (within {heartbeat.BEAT_EVERY:.0f} s)"
                )
            else:
                names = heartbeat.unblock_hosts(session, hosts)
                print(f"unblocked {', '.join(names)}: links found from now on are crawled")
    finally:
        engine.dispose()
    return 0
