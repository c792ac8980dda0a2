"""Operator commands from a machine that cannot reach the database: which ones, and how.

The operator's laptop reaches the AWS APIs and the site over HTTPS, never the private
database. The commands that read or change the crawl through the database take a way
around it, given as ``--remote``:

- through the admin API with the token (``admin_client``): ``nimbus crawl status|seed|
  pause|resume|stop|block|unblock``, ``nimbus index now|status`` with ``--remote URL`` (or
  ``NIMBUS_ADMIN_URL``) and ``NIMBUS_ADMIN_TOKEN``;
- through SSM Run Command on the stack's indexer instance (``ssm``): ``nimbus migrate --remote``.

``install`` gives each of those commands its options (found by its name, so the module
that defines the command needs no change); ``main`` runs ``run`` when ``chosen`` says the
command goes remote, else the local command under ``local_hint``, which turns "cannot
reach the database" into a message that names the remote way.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

from services.config import Settings, SettingsError
from services.errors import NimbusError


class RemoteError(NimbusError):
    """A command sent elsewhere (the admin API, SSM) failed; the message names where and why."""


class DatabaseUnreachableError(NimbusError):
    """A local operator command could not connect to the database."""


@dataclass(frozen=True)
class RemoteCommand:
    """How one command goes remote."""

    options: Callable[[argparse.ArgumentParser], None]  # adds --remote and its companions
    wanted: Callable[[argparse.Namespace, Settings], bool]  # whether this run goes remote
    run: Callable[[argparse.Namespace, Settings], int]
    hint: str  # said when the local command cannot reach the database


def install(root: argparse.ArgumentParser, commands: Mapping[str, RemoteCommand]) -> None:
    """Give each command named in ``commands`` (by its prog: "nimbus crawl seed") its remote
    options. A name no parser has is an error: the command moved and the table did not."""
    found = {}
    for parser in _leaves(root):
        command = commands.get(parser.prog)
        if command is not None:
            command.options(parser)
            parser.set_defaults(remote_command=command)
            found[parser.prog] = command
    missing = sorted(set(commands) - set(found))
    if missing:
        raise KeyError(f"remote commands with no parser: {', '.join(missing)}")


def chosen(args: argparse.Namespace, settings: Settings) -> bool:
    command: RemoteCommand | None = getattr(args, "remote_command", None)
    return command is not None and command.wanted(args, settings)


def run(args: argparse.Namespace, settings: Settings) -> int:
    command: RemoteCommand = args.remote_command
    return command.run(args, settings)


@contextmanager
def local_hint(args: argparse.Namespace) -> Iterator[None]:
    """A command that could have gone remote and failed to reach the database says how to."""
    command: RemoteCommand | None = getattr(args, "remote_command", None)
    if command is None:
        yield
        return
    from sqlalchemy.exc import OperationalError

    try:
        yield
    except OperationalError as exc:
        if exc.statement is not None:  # connected, then a statement failed: not our case
            raise
        said = exc.orig.args if exc.orig is not None and exc.orig.args else (str(exc),)
        reason = str(said[-1]).splitlines()[0]  # PyMySQL's (code, message): the message
        raise DatabaseUnreachableError(f"cannot reach the database ({reason}); {command.hint}") from exc
    except SettingsError as exc:  # e.g. the RDS instance cannot be described from here
        raise SettingsError(f"{exc}; {command.hint}") from exc


def _leaves(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _leaves(sub)
