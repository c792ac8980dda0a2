"""The `nimbus` commands the docs quote are the CLI's: each names subcommands that exist and
options they take (checked against the real argparse parser, not a copy of it); the README's
command list is the CLI's list of commands; the sizes it quotes for data/ are the files'."""

from __future__ import annotations

import argparse
import re
import subprocess
from pathlib import Path

import pytest

from services.cli import DEFAULT_SUBCOMMANDS, _parser
from services.cli.parsing import subcommand_names, subparser

REPO = Path(__file__).resolve().parents[2]
DOCS = [REPO / "README.md", REPO / "data" / "README.md", *sorted((REPO / "docs").glob("*.md"))]
# `nimbus ...` at a code block line's start (after a prompt or environment assignments), or
# opening an inline code span; `.venv/bin/nimbus` too. Comments end a command.
BLOCK_LINE = re.compile(
    r"^\s*(?:\$\s+)?(?:[A-Z_]+=\S+\s+)*(?:\.venv/bin/)?nimbus(?:\s+([^#]*?))?\s*(?:#.*)?$"
)
INLINE = re.compile(r"`(?:[A-Z_]+=\S+\s+)*(?:\.venv/bin/)?nimbus\s+([^`]*)`")
PLACEHOLDER = re.compile(
    r"[A-Z][A-Z_]*(?:\.\.\.)?|<[\w-]+>|\[<[\w-]+>\]|\.\.\.|…"
)  # COMMAND, URL..., <command>
# A plain word where a subcommand may stand: the CLI takes it for a mistyped subcommand, never a URL.
WORD = re.compile(r"[a-z][a-z0-9_-]*")


def quoted_commands(doc: Path) -> list[tuple[int, str]]:
    """``(line number, words after nimbus)`` of every command ``doc`` quotes."""
    found, in_block = [], False
    for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
        if line.lstrip().startswith("```"):
            in_block = not in_block
            continue
        if in_block:
            match = BLOCK_LINE.match(line)
            if match:
                found.append((number, (match.group(1) or "").strip()))
        else:
            found += [(number, m.group(1).strip()) for m in INLINE.finditer(line)]
    return found


def _options(parser: argparse.ArgumentParser) -> set[str]:
    return {s for action in parser._actions for s in action.option_strings}


def _alternatives(words: str) -> list[list[str]]:
    """``crawl pause | resume | stop`` as three commands; ``migrate [--to REV] | db users`` as
    two: an alternative that names a sibling subcommand stays in the group."""
    first, *rest = [part.split() for part in words.split(" | ")]
    commands = [first]
    for alt in rest:
        if alt and not alt[0].startswith("-") and len(first) > 1:
            group = subparser(_parser(), first[0]) if first[0] in subcommand_names(_parser()) else None
            if group is not None and alt[0] in subcommand_names(group):
                alt = [first[0], *alt]
        commands.append(alt)
    return commands


def check(words: list[str]) -> str | None:
    """What is wrong with ``nimbus WORDS`` (None: its subcommands and options exist). A quoted
    message (``nimbus crawl status: cannot reach ...``) is checked up to its colon."""
    cut = next((i for i, w in enumerate(words) if w.endswith(":")), None)
    if cut is not None:
        words = [*words[:cut], words[cut][:-1]]
    parser = _parser()
    top = _options(parser)
    rest = [w for w in words if w not in top]  # -v, --help: anywhere
    path: list[str] = []
    while rest and not rest[0].startswith("-") and subcommand_names(parser):
        word = rest[0]
        if word in subcommand_names(parser):
            parser, path, rest = subparser(parser, word), [*path, word], rest[1:]
        elif len(path) == 1 and path[0] in DEFAULT_SUBCOMMANDS and not WORD.fullmatch(word):
            parser = subparser(parser, DEFAULT_SUBCOMMANDS[path[0]].name)  # `nimbus crawl URL...`
            break
        elif PLACEHOLDER.fullmatch(word):
            return None  # `nimbus COMMAND --help`, `nimbus crawl SUBCOMMAND --help`: any
        else:
            where = f"nimbus {' '.join(path)}".strip()
            return f"{where} has no subcommand {word!r} (it has {subcommand_names(parser)})"
    if not path:
        return None if not rest else "no command"  # `nimbus --help`
    if subcommand_names(parser) and path[0] in DEFAULT_SUBCOMMANDS and len(path) == 1:
        parser = subparser(parser, DEFAULT_SUBCOMMANDS[path[0]].name)  # `nimbus index --runner emr`
    options = _options(parser)
    unknown = [o for o in re.findall(r"(?<![\w-])--?[a-z][a-z-]*", " ".join(rest)) if o not in options | top]
    if unknown:
        return f"nimbus {' '.join(path)} takes no {', '.join(unknown)}"
    return None


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_quoted_nimbus_command_parses(doc: Path) -> None:
    wrong = []
    for number, words in quoted_commands(doc):
        for command in _alternatives(words):
            problem = check(command)
            if problem:
                wrong.append(f"{doc.relative_to(REPO)}:{number}: `nimbus {' '.join(command)}`: {problem}")
    assert not wrong, "docs quote commands the CLI does not have:\n" + "\n".join(wrong)


def test_the_checker_refuses_what_the_cli_refuses() -> None:
    assert check(["crawl", "seed", "URL", "--recrawl"]) is None
    assert check(["crawl", "http://x/", "--max-pages", "9"]) is None  # the bare crawl is crawl run
    assert check(["index", "--runner", "emr"]) is None
    assert check(["crawl", "sede", "URL"]) is not None
    assert check(["crawl", "seed", "URL", "--recrawll"]) is not None
    assert check(["serve", "--prot", "9"]) is not None
    assert check(["search", "foo"]) is not None


def _readme_command_list() -> str:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    return readme.split("Other commands", 1)[1].split("```sh", 1)[1].split("```", 1)[0]


def test_the_readmes_command_list_is_the_clis() -> None:
    """Every command and every group's subcommand has a line (`nimbus compare` had none)."""
    named: dict[str, set[str]] = {}
    for line in _readme_command_list().splitlines():
        match = BLOCK_LINE.match(line)
        if not match or not match.group(1):
            continue
        for command in _alternatives(match.group(1).strip()):
            if command and not PLACEHOLDER.fullmatch(command[0]):
                subs = named.setdefault(command[0], set())
                if len(command) > 1 and not command[1].startswith(("-", "[")):
                    subs.add(command[1])
    parser = _parser()
    assert set(named) == set(subcommand_names(parser)), "README's list against `nimbus --help`"
    for group in named:
        subs = set(subcommand_names(subparser(parser, group)))
        if subs:
            default = DEFAULT_SUBCOMMANDS.get(group)
            listed = {s for s in named[group] if s in subs} | ({default.name} if default else set())
            assert listed == subs, f"README's list lacks nimbus {group} {sorted(subs - listed)}"


def _tracked_bytes(paths: list[str]) -> int:
    return sum((REPO / p).stat().st_size for p in paths if (REPO / p).is_file())


def _data_files() -> list[str]:
    listed = subprocess.run(
        ["git", "ls-files", "data"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.split()
    return listed or [str(p.relative_to(REPO)) for p in (REPO / "data").rglob("*") if p.is_file()]


def test_the_sizes_quoted_for_data_are_the_files() -> None:
    """The README's total for data/ (to 0.1 MB) and data/README.md's "about N MB" total and
    each "`file` (N MB" figure are what the files weigh (MB: 10^6 bytes)."""
    total = _tracked_bytes(_data_files()) / 1e6
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    (quoted,) = re.findall(r"\(data/README\.md\) \(([\d.]+) MB", readme)
    assert quoted == f"{total:.1f}", f"README says data/ holds {quoted} MB; it holds {total:.1f} MB"
    data_readme = (REPO / "data" / "README.md").read_text(encoding="utf-8")
    (about,) = re.findall(r"Total size: about ([\d.]+) MB", data_readme)
    assert about == f"{total:.0f}", f"data/README.md says about {about} MB; it is {total:.1f} MB"
    for name, size in re.findall(r"`([\w.-]+)`\s*\(([\d.]+) MB", data_readme):
        (path,) = [p for p in _data_files() if p.endswith("/" + name)]
        digits = len(size.split(".")[1]) if "." in size else 0
        actual = round(_tracked_bytes([path]) / 1e6, digits)
        assert float(size) == actual, f"data/README.md: {name} is {actual} MB, not {size}"
