"""`nimbus demo` and `nimbus sampleweb`: the offline sample web, alone or crawled, indexed, served."""

from __future__ import annotations

import argparse

from services.cli.parsing import count, data_option, leaf
from services.config import Settings


def add_parsers(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``nimbus demo`` and ``nimbus sampleweb``."""
    demo_ = commands.add_parser(
        "demo",
        help="sample web -> crawl -> index -> serve, offline",
        description="Serve the sample web on loopback, crawl it, index it and serve the UI and "
        "the admin dashboard (/admin: sign in with NIMBUS_ADMIN_TOKEN, or the token the demo "
        "prints), offline; the state is in var/demo/ and starts afresh each run.",
    )
    data_option(demo_)
    demo_.add_argument("--port", type=count, help="port for the UI (NIMBUS_PORT)")
    leaf(demo_, demo)

    web = commands.add_parser(
        "sampleweb",
        help="serve the loopback sample web (for trying the crawler)",
        description="Serve the sample web on loopback ports and print their addresses, until Ctrl-C.",
    )
    data_option(web)
    leaf(web, sampleweb)


def demo(args: argparse.Namespace, settings: Settings) -> int:
    from services.admin.app import create_app
    from services.demo.run import run_demo

    run_demo(settings.with_overrides(port=args.port), args.data, make_app=create_app)
    return 0


def sampleweb(args: argparse.Namespace, settings: Settings) -> int:
    import time

    from services.demo.run import check_sample_data
    from services.demo.sampleweb import start_sample_web

    check_sample_data(args.data)
    servers = start_sample_web(args.data)
    for server in servers:
        print(f"{server.site.name}: {server.origin}/", flush=True)
    while True:
        time.sleep(3600)  # serve until Ctrl-C (main turns it into exit status 130)
