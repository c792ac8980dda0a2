"""The `nimbus` command: crawl, archive, index, serve, warm-kernels, demo, eval, compare, sampleweb,
migrate, deploy, tunnel.

Every command is a real subcommand with its own options and ``--help`` (``nimbus crawl
committer --help``), defined in the module of its group (``crawl_commands``, ...);
``services.cli.parsing`` holds what they share. Settings come from the environment
(services.config.Settings.from_env); flags override them for one run. Errors are translated
here, once: every error Nimbus raises on purpose is a ``NimbusError`` whose message says
what to do; it is printed as ``nimbus <command>: <message>`` and its ``exit_code`` (1 for a
failure, 2 for bad input) is the command's exit status. argparse's own refusals exit 2.
"""

from __future__ import annotations

import argparse
import logging
import sys

from services.aws_database import resolve_database_url
from services.cli import (
    admin_client,
    archive_commands,
    crawl_commands,
    db_commands,
    demo_commands,
    deploy_commands,
    eval_commands,
    index_commands,
    kernels_command,
    remote,
    serve_command,
    ssm,
    tunnel_command,
)
from services.cli.parsing import DEFAULT_DATA, place_extras, with_default_subcommand
from services.config import Settings
from services.errors import NimbusError

__all__ = ["DEFAULT_DATA", "main"]

# Groups whose bare form is one of their subcommands: `nimbus crawl URL...` is `nimbus crawl run URL...`,
# `nimbus index --runner emr` is `nimbus index build --runner emr`.
DEFAULT_SUBCOMMANDS = {"crawl": crawl_commands.DEFAULT, "index": index_commands.DEFAULT}

# The AWS stack's commands need AWS credentials, not the database's password; warm-kernels
# runs before the instance has its settings.
_NO_DATABASE = {"deploy", "destroy", "tunnel", "warm-kernels"}
# Schema changes and users: the master user's (NIMBUS_DATABASE_ADMIN_SECRET), not the role's.
_AS_MASTER = {"migrate", "db"}


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="nimbus",
        description="Nimbus Search. `nimbus COMMAND --help` (and `nimbus crawl SUBCOMMAND --help`) "
        "describes each command.",
    )
    p.add_argument("-v", "--verbose", action="store_true", help="log debug details")
    commands = p.add_subparsers(dest="command", metavar="COMMAND", title="commands", required=True)
    crawl_commands.add_parser(commands)
    archive_commands.add_parsers(commands)
    index_commands.add_parsers(commands)
    db_commands.add_parsers(commands)
    serve_command.add_parser(commands)
    kernels_command.add_parser(commands)
    demo_commands.add_parsers(commands)
    eval_commands.add_parsers(commands)
    deploy_commands.add_parsers(commands)
    tunnel_command.add_parser(commands)
    # --remote for the operator commands (through the admin API, or SSM on the indexer).
    remote.install(p, {**admin_client.COMMANDS, **ssm.COMMANDS})
    return p


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    argv = sys.argv[1:] if argv is None else argv
    args, extras = parser.parse_known_args(with_default_subcommand(parser, argv, DEFAULT_SUBCOMMANDS))
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    name = args.parser.prog  # "nimbus index", "nimbus crawl seed"
    try:
        place_extras(args, extras)
        settings = Settings.from_env()
        if remote.chosen(args, settings):  # from a laptop: no database here
            return remote.run(args, settings)
        with remote.local_hint(args):
            if args.command not in _NO_DATABASE:
                # On AWS: the URL names the secret each connection reads (the master's to migrate).
                settings = resolve_database_url(settings, admin=args.command in _AS_MASTER)
            code: int = args.handler(args, settings)
        return code
    except NimbusError as exc:
        print(f"{name}: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print(f"{name}: interrupted", file=sys.stderr)
        return 130
