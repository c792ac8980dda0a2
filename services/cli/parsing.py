"""The argparse conventions every `nimbus` command shares.

Each command is a leaf parser registered with ``leaf``: its handler, and what to do with
words argparse could not place. argparse ends a ``*`` positional at the first option, so in
``nimbus crawl seed URL1 --recrawl URL2`` it returns ``URL2`` as unrecognized; operators
used to the AWS CLI and Scrapy put options anywhere, so ``place_extras`` appends such words
to the leaf's list. A group whose bare form is one of its subcommands (``nimbus crawl
URL...`` is ``nimbus crawl run URL...``) is expanded before parsing by
``with_default_subcommand``, and a word that can only be a mistyped subcommand is refused
there with the subcommands to choose from.
"""

from __future__ import annotations

import argparse
import difflib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from services.config import Settings
from services.errors import NimbusError

Handler = Callable[[argparse.Namespace, Settings], int]

# The sample data of a checkout (data/README.md); an installed wheel has none: pass --data.
DEFAULT_DATA = Path(__file__).resolve().parents[2] / "data"

# A word that cannot be a seed URL (no scheme, dot or slash): a subcommand name, or a typo of one.
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")
_HELP = ("-h", "--help")


@dataclass(frozen=True)
class Default:
    """A group's implied subcommand and what its bare form takes, for the refusal message."""

    name: str  # "run"
    takes: str  # "an absolute http(s) seed URL"


class UsageError(NimbusError):
    """The command line asks for something the command does not take (exit status 2)."""

    exit_code = 2


def count(text: str) -> int:
    """An argparse type: a whole number, zero or more."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is negative: give 0 or more")
    return value


def positive(text: str) -> int:
    """An argparse type: a whole number, one or more."""
    value = count(text)
    if value == 0:
        raise argparse.ArgumentTypeError("give 1 or more")
    return value


def seconds(text: str) -> float:
    """An argparse type: a duration in seconds, zero or more (NaN refused)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"{text} is not a duration: give 0 or more seconds")
    return value


def data_option(parser: argparse.ArgumentParser) -> None:
    """``--data``: the sample data the demo and the sample web serve."""
    parser.add_argument(
        "--data",
        type=Path,
        default=DEFAULT_DATA,
        help="the sample data directory (default: the checkout's data/)",
    )


def leaf(
    parser: argparse.ArgumentParser,
    handler: Handler,
    *,
    words: str | None = None,
    no_words: str | None = None,
) -> None:
    """Make ``parser`` a runnable command.

    ``words`` names its list positional, which takes the words argparse left after an
    option; without one, leftover words are an error: ``no_words`` (a ``UsageError``, exit
    status 2, the message saying what to do instead), or argparse's own."""
    parser.set_defaults(handler=handler, parser=parser, words=words, no_words=no_words)


def place_extras(args: argparse.Namespace, extras: Sequence[str]) -> None:
    """Put the words argparse could not place into the command's list, or refuse them."""
    if not extras:
        return
    options = any(word.startswith("-") for word in extras)
    if args.words and not options:
        getattr(args, args.words).extend(extras)
    elif args.no_words and not options:
        raise UsageError(args.no_words)
    else:
        args.parser.error(f"unrecognized arguments: {' '.join(extras)}")


def subparser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    """The parser of ``parser``'s subcommand ``name``."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and name in action.choices:
            found: argparse.ArgumentParser = action.choices[name]
            return found
    raise KeyError(name)


def subcommand_names(parser: argparse.ArgumentParser) -> list[str]:
    """The names of ``parser``'s subcommands, in the order its help lists them."""
    return [
        name
        for action in parser._actions
        if isinstance(action, argparse._SubParsersAction)
        for name in action.choices
    ]


def with_default_subcommand(
    parser: argparse.ArgumentParser, argv: Sequence[str], defaults: dict[str, Default]
) -> list[str]:
    """``argv`` with a group's default subcommand written out where the user left it implied.

    After a group named in ``defaults`` (``crawl``), a first word that is a subcommand or
    ``--help`` stays; nothing, an option or a URL-like word gets the default subcommand in
    front (``nimbus crawl http://x/ --max-pages 9``, ``nimbus crawl --quiet``, bare
    ``nimbus crawl``). A plain word that is none of the subcommands cannot be a seed URL
    either, so it is refused here (exit status 2), with the closest subcommand."""
    argv = list(argv)
    # The top level's options take no value, so the first word that is no option is the command.
    at = next((i for i, word in enumerate(argv) if not word.startswith("-")), None)
    if at is None or argv[at] not in defaults:
        return argv
    group = subparser(parser, argv[at])
    names = subcommand_names(group)
    first = argv[at + 1] if at + 1 < len(argv) else None
    if first in names or first in _HELP:
        return argv
    default = defaults[argv[at]]
    if first is not None and _WORD.fullmatch(first):
        _unknown_subcommand(group, first, names, default)
    return [*argv[: at + 1], default.name, *argv[at + 1 :]]


def _unknown_subcommand(
    group: argparse.ArgumentParser, word: str, names: list[str], default: Default
) -> NoReturn:
    close = difflib.get_close_matches(word, names, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    group.error(
        f"{word!r} is neither a subcommand{hint} nor {default.takes}; subcommands: {', '.join(names)}"
    )
