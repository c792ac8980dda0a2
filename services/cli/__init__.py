"""The `nimbus` command: crawl, index, serve, demo, eval, sampleweb.

Settings come from the environment (services.config.Settings.from_env);
flags override them for one run. Errors are translated here, once: every
error Nimbus raises on purpose is a ``NimbusError`` whose message says what
to do; it is printed as ``nimbus <command>: <message>`` and its
``exit_code`` (1 for a failure, 2 for bad input) is the command's exit status.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path

from services.aws_database import resolve_database_url
from services.cli import crawl_commands, deploy_commands, serve_command
from services.config import Settings
from services.errors import NimbusError

# The sample data of a checkout (data/README.md); an installed wheel has none: pass --data.
DEFAULT_DATA = Path(__file__).resolve().parents[2] / "data"


def _count(text: str) -> int:
    """An argparse type: a whole number, zero or more."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is negative: give 0 or more")
    return value


def _positive(text: str) -> int:
    value = _count(text)
    if value == 0:
        raise argparse.ArgumentTypeError("give 1 or more")
    return value


def _data_option(parser: argparse.ArgumentParser) -> None:
    """``--data``: the sample data the demo and the sample web serve."""
    parser.add_argument(
        "--data",
        type=Path,
        default=DEFAULT_DATA,
        help="the sample data directory (default: the checkout's data/)",
    )


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"{text} is not a duration: give 0 or more seconds")
    return value


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="nimbus", description="Nimbus Search")
    p.add_argument("-v", "--verbose", action="store_true", help="log debug details")
    sub = p.add_subparsers(dest="command", required=True)

    crawl = sub.add_parser("crawl", help="crawl from seed URLs into the database and blob store")
    crawl.add_argument(
        "seeds",
        nargs="*",
        metavar="SEED_URL",
        help="absolute http(s) URLs to start from (none: continue the frontier in the database); "
        "`nimbus crawl status` shows the crawler nodes and the frontier; `pause`, `resume` and `stop` "
        "ask every running crawler, on any machine; `seed URL...` adds URLs without crawling; "
        "`block HOST...` takes hosts (and their subdomains) out of every crawl within a heartbeat, "
        "`unblock HOST...` lets them back; "
        "`worker` and `committer` run one role of a crawl cluster (machines sharing one database "
        "and one bucket: many workers, one elected committer and its standbys)",
    )
    crawl.add_argument("--max-pages", type=_count, help="page requests this run (NIMBUS_MAX_PAGES)")
    crawl.add_argument("--max-depth", type=_count, help="links followed from a seed (NIMBUS_MAX_DEPTH)")
    crawl.add_argument("--delay", type=_seconds, help="seconds between requests to one host")
    crawl.add_argument("--concurrency", type=_positive, help="requests in flight, all processes together")
    crawl.add_argument(
        "--processes",
        type=_positive,
        help="worker processes sharing the host partitions (one per core); 2 or more run as a crawl "
        "cluster on this machine: that many workers and one committer process",
    )
    crawl.add_argument(
        "--id", dest="identity", help="`crawl worker`: this worker's name (default: host and partitions)"
    )
    crawl.add_argument("--quiet", action="store_true", help="no live progress line")
    crawl.add_argument("--reason", default="", help="`crawl block`: why, shown on the dashboard")
    crawl.add_argument(
        "--recrawl", action="store_true", help="`crawl seed`: fetch URLs already known again, first"
    )

    index = sub.add_parser("index", help="build the index and PageRank with MapReduce and publish")
    index.add_argument("--runner", choices=["inline", "local", "emr"], help="mrjob runner (NIMBUS_MR_RUNNER)")
    index.add_argument("--quiet", action="store_true", help="no progress on stderr")

    serve = sub.add_parser("serve", help="serve the search UI and JSON API")
    serve.add_argument("--host", help="address to listen on (NIMBUS_HOST)")
    serve.add_argument("--port", type=_count, help="port to listen on (NIMBUS_PORT)")
    serve.add_argument(
        "--workers", type=_positive, help="uvicorn worker processes (NIMBUS_SERVE_WORKERS, default 1)"
    )

    demo = sub.add_parser("demo", help="sample web -> crawl -> index -> serve, offline")
    _data_option(demo)
    demo.add_argument("--port", type=_count, help="port for the UI (NIMBUS_PORT)")

    ev = sub.add_parser("eval", help="measure ranking quality on a judged collection (MAP, nDCG@10, ...)")
    ev.add_argument(
        "collection",
        type=Path,
        metavar="DIR",
        help="docs.jsonl, queries.jsonl and qrels.tsv (as data/ir/cranfield)",
    )
    ev.add_argument("--run", type=Path, help="TREC run file to write (default: STATE/run.trec)")
    ev.add_argument("--depth", type=_positive, default=1000, help="results per query in the run")
    ev.add_argument(
        "--state", type=Path, help="database, blobs and caches of the eval (default: var/eval/<DIR name>)"
    )
    ev.add_argument("--quiet", action="store_true", help="no progress on stderr")

    cmp = sub.add_parser("compare", help="two TREC runs on one judged collection, query by query")
    cmp.add_argument("run_a", type=Path, metavar="RUN_A", help="the baseline run file")
    cmp.add_argument("run_b", type=Path, metavar="RUN_B", help="the run to compare with it")
    cmp.add_argument("--collection", type=Path, required=True, help="the collection's directory (qrels.tsv)")
    cmp.add_argument(
        "--measure",
        action="append",
        choices=["MAP", "nDCG@10", "P@10", "Recall@100", "MRR"],
        help="repeatable",
    )

    web = sub.add_parser("sampleweb", help="serve the loopback sample web (for trying the crawler)")
    _data_option(web)

    migrate = sub.add_parser(
        "migrate", help="bring the database schema to this release's (Alembic, under a lock)"
    )
    migrate.add_argument("--database-url", help="the database (default: NIMBUS_DATABASE_URL)")

    for name, text in (
        ("deploy", "create or update the AWS stack (infra/nimbus.yaml) and print the site URL"),
        ("destroy", "delete the AWS stack; data bucket and final DB snapshot kept by default"),
    ):
        cmd = sub.add_parser(name, help=text)
        cmd.add_argument("--stack-name", default="nimbus", help="CloudFormation stack name (default: nimbus)")
        cmd.add_argument("--region", help="AWS region (default: AWS_REGION or the profile's)")
        cmd.add_argument("--profile", help="AWS profile (default: AWS_PROFILE or the default chain)")
        cmd.add_argument("--endpoint-url", help="AWS API endpoint (an emulator such as moto)")
        if name == "deploy":
            cmd.add_argument(
                "--param",
                action="append",
                default=[],
                metavar="KEY=VALUE",
                help="template parameter, e.g. CrawlerCount=3 (repeatable; unnamed ones keep their values)",
            )
            cmd.add_argument("--dist", type=Path, default=Path("build/dist"), help="where the wheel is built")
        else:
            cmd.add_argument(
                "--delete-data",
                action="store_true",
                help="also delete the data bucket and the final snapshot",
            )
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        settings = Settings.from_env()
        if args.command not in {"deploy", "destroy"}:
            settings = resolve_database_url(settings)  # on AWS: the password from RDS's secret
        return COMMANDS[args.command](args, settings)
    except NimbusError as exc:
        print(f"nimbus {args.command}: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print(f"nimbus {args.command}: interrupted", file=sys.stderr)
        return 130


def _index(args: argparse.Namespace, settings: Settings) -> int:
    from services.indexing.build import build_index

    result = build_index(settings.with_overrides(mr_runner=args.runner), progress=not args.quiet)
    print(
        f"published {result.segment}: {result.num_docs} documents "
        f"({result.near_duplicates} near-duplicates folded), {result.num_terms} terms, "
        f"PageRank in {result.pagerank_iterations} iterations, {result.seconds:.1f} s"
    )
    return 0


def _demo(args: argparse.Namespace, settings: Settings) -> int:
    from services.demo.run import run_demo

    run_demo(settings.with_overrides(port=args.port), args.data)
    return 0


def _eval(args: argparse.Namespace, settings: Settings) -> int:
    from services.eval.metrics import format_metrics
    from services.eval.run import default_state, run_eval, state_settings

    state = args.state or default_state(args.collection, settings)
    if not os.environ.get("NIMBUS_MR_RUNNER"):  # a few thousand documents: no subprocesses
        settings = settings.with_overrides(mr_runner="inline")
    settings = state_settings(settings, state)
    run_path = args.run or state / "run.trec"
    if not args.quiet:
        print(
            f"eval: state in {state}, MapReduce runner {settings.mr_runner} "
            "(set NIMBUS_MR_RUNNER to choose another)",
            file=sys.stderr,
        )
    metrics = run_eval(
        args.collection, settings, run_path=run_path, depth=args.depth, progress=not args.quiet
    )
    for line in format_metrics(metrics):
        print(line)
    print(f"run file {run_path}")
    return 0


def _compare(args: argparse.Namespace, settings: Settings) -> int:
    from services.eval.collection import load_collection
    from services.eval.compare import compare

    qrels = load_collection(args.collection).qrels
    for measure in args.measure or ["MAP", "nDCG@10"]:
        for line in compare(args.run_a, args.run_b, qrels, measure).lines():
            print(line)
    return 0


def _sampleweb(args: argparse.Namespace, settings: Settings) -> int:
    import time

    from services.demo.run import check_sample_data
    from services.demo.sampleweb import start_sample_web

    check_sample_data(args.data)
    servers = start_sample_web(args.data)
    for server in servers:
        print(f"{server.site.name}: {server.origin}/", flush=True)
    while True:
        time.sleep(3600)  # serve until Ctrl-C (main turns it into exit status 130)


def _migrate(args: argparse.Namespace, settings: Settings) -> int:
    from services.storage.engines import make_engine
    from services.storage.migrate import upgrade_to_head

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


COMMANDS: dict[str, Callable[[argparse.Namespace, Settings], int]] = {
    "migrate": _migrate,
    "deploy": deploy_commands.deploy,
    "destroy": deploy_commands.destroy,
    "crawl": crawl_commands.crawl,
    "index": _index,
    "serve": serve_command.serve,
    "demo": _demo,
    "eval": _eval,
    "sampleweb": _sampleweb,
    "compare": _compare,
}
