"""The `nimbus` command tree: every subcommand parses its own options and prints its own
``--help``; a bare ``nimbus crawl URL...`` is still a crawl. Called as main(argv), with the
commands' handlers replaced where a test only looks at what reaches them."""

from __future__ import annotations

import argparse
import re

import pytest

from services.cli import crawl_commands, main

# Each crawl subcommand's own options, and nothing else, in its --help (`nimbus crawl
# committer --help` must not print the whole crawl's).
# The operator commands also go through the admin API from a laptop (services.cli.remote).
REMOTE = {"--remote", "--insecure-http"}
CRAWL_OPTIONS = {
    "run": {"--max-pages", "--max-depth", "--delay", "--concurrency", "--quiet", "--processes"},
    "status": REMOTE,
    "seed": {"--recrawl", "--file", *REMOTE},
    "pause": REMOTE,
    "resume": REMOTE,
    "stop": REMOTE,
    "block": {"--reason", "--purge", *REMOTE},
    "unblock": REMOTE,
    "worker": {"--id", "--max-pages", "--max-depth", "--delay", "--concurrency", "--quiet"},
    "committer": {"--quiet"},
}
COMMANDS = ["crawl", "index", "migrate", "serve", "demo", "sampleweb", "eval", "compare", "deploy", "destroy"]
COMMANDS += ["tunnel", "archive", "warm-kernels"]


def _help(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exit_info:
        main([*argv, "--help"])
    assert exit_info.value.code == 0
    return capsys.readouterr().out


@pytest.fixture
def seen(tmp_path, monkeypatch) -> list[argparse.Namespace]:
    """The namespaces that reach `nimbus crawl`'s handlers, which do nothing else."""
    monkeypatch.setenv("NIMBUS_DATABASE_URL", f"sqlite:///{tmp_path}/nimbus.db")
    monkeypatch.setenv("NIMBUS_VAR_DIR", str(tmp_path / "var"))
    calls: list[argparse.Namespace] = []

    def record(args, settings):
        calls.append(args)
        return 0

    for name in ("run", "worker", "committer", "status", "seed", "signal", "block", "unblock"):
        monkeypatch.setattr(crawl_commands, name, record)
    return calls


@pytest.mark.parametrize("sub", sorted(CRAWL_OPTIONS))
def test_each_crawl_subcommand_has_its_own_help(sub, capsys):
    out = _help(["crawl", sub], capsys)
    assert out.startswith(f"usage: nimbus crawl {sub} [-h]")
    assert "SUBCOMMAND" not in out  # not the crawl group's help
    assert set(re.findall(r"--[a-z][a-z-]*", out)) - {"--help"} == CRAWL_OPTIONS[sub]
    usage = out.split("\n\n")[0]  # written out by hand for seed, block and unblock
    assert set(re.findall(r"--[a-z][a-z-]*", usage)) == CRAWL_OPTIONS[sub]


def test_crawl_help_lists_every_subcommand_and_the_bare_form(capsys):
    out = _help(["crawl"], capsys)
    assert out.startswith("usage: nimbus crawl [-h] SUBCOMMAND ...\n       nimbus crawl [SEED_URL ...]")
    for sub in CRAWL_OPTIONS:
        assert re.search(rf"^    {sub}\b", out, re.MULTILINE), sub


@pytest.mark.parametrize("command", COMMANDS)
def test_each_command_has_its_own_help(command, capsys):
    assert _help([command], capsys).startswith(f"usage: nimbus {command} [-h]")


def test_every_command_describes_itself():
    """`--help` of a leaf says what it does in a sentence, beyond the one-line listing."""
    from services.cli import _parser

    def leaves(parser):
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs:
            yield parser
        for action in subs:
            for sub in action.choices.values():
                yield from leaves(sub)

    assert [p.prog for p in leaves(_parser()) if not p.description] == []


@pytest.mark.parametrize(
    ("argv", "seeds", "max_pages"),
    [
        (["crawl", "http://x.test/", "--max-pages", "5"], ["http://x.test/"], 5),
        (["crawl"], [], None),  # continue the frontier
        (["crawl", "--max-pages", "7", "--quiet", "http://x.test/"], ["http://x.test/"], 7),
        (
            ["crawl", "http://x.test/", "--quiet", "http://y.test/"],
            ["http://x.test/", "http://y.test/"],
            None,
        ),
        (["-v", "crawl", "http://x.test/"], ["http://x.test/"], None),
        (["crawl", "run", "http://x.test/", "--max-pages", "3"], ["http://x.test/"], 3),
        (["crawl", "ftp://x.test/"], ["ftp://x.test/"], None),  # refused by the crawl itself, not the parser
    ],
)
def test_a_bare_crawl_is_crawl_run(seen, argv, seeds, max_pages):
    assert main(argv) == 0
    (args,) = seen
    assert (args.action, args.seeds, args.max_pages) == ("run", seeds, max_pages)


def test_options_may_come_between_urls(seen):
    assert main(["crawl", "seed", "http://a.test/", "--recrawl", "http://b.test/"]) == 0
    assert main(["crawl", "block", "a.test", "--reason", "spam", "b.test"]) == 0
    seed, block = seen
    assert seed.urls == ["http://a.test/", "http://b.test/"] and seed.recrawl
    assert block.hosts == ["a.test", "b.test"] and block.reason == "spam"


def test_each_subcommand_reaches_its_handler_with_its_options(seen):
    assert main(["crawl", "worker", "--id", "w1", "--max-pages", "9", "--quiet"]) == 0
    assert main(["crawl", "committer", "--quiet"]) == 0
    assert main(["crawl", "stop"]) == 0
    worker, committer, stop = seen
    assert (worker.action, worker.identity, worker.max_pages, worker.quiet) == ("worker", "w1", 9, True)
    assert committer.action == "committer" and stop.action == "stop"


@pytest.mark.parametrize(
    ("typo", "meant"), [("comitter", "committer"), ("stauts", "status"), ("unblok", "unblock")]
)
def test_a_mistyped_subcommand_is_refused_with_the_closest(typo, meant, seen, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["crawl", typo])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert f"nimbus crawl: error: {typo!r} is neither a subcommand (did you mean {meant!r}?)" in err
    assert "subcommands: run, status, seed, pause, resume, stop, block, unblock, worker, committer" in err
    assert "Traceback" not in err and seen == []


def test_an_option_of_another_subcommand_is_refused(seen, capsys):
    for argv in (["crawl", "status", "--quiet"], ["crawl", "seed", "http://a.test/", "--reason", "x"]):
        with pytest.raises(SystemExit) as exit_info:
            main(argv)
        assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "nimbus crawl status: error: unrecognized arguments: --quiet" in err
    assert "nimbus crawl seed: error: unrecognized arguments: --reason x" in err
    assert seen == []


@pytest.mark.parametrize("sub", ["status", "pause", "resume", "stop", "worker", "committer"])
def test_words_after_a_subcommand_without_urls_say_so(sub, seen, capsys):
    assert main(["crawl", sub, "http://a.test/"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"nimbus crawl {sub}: takes no URLs") and seen == []
    if sub in ("worker", "committer"):
        assert err.endswith("add seeds with `nimbus crawl seed URL...`")


def test_an_unknown_command_is_refused(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["crwal"])
    assert exit_info.value.code == 2
    assert "invalid choice: 'crwal'" in capsys.readouterr().err


def test_serve_leaves_forwarded_headers_to_the_app(monkeypatch) -> None:
    """uvicorn's proxy headers take any X-Forwarded-For string as the client (from
    FORWARDED_ALLOW_IPS, 127.0.0.1 by default): off, so the app's ForwardedHeaders decides."""
    import uvicorn

    seen: dict[str, object] = {}

    def run(server, sockets=None):  # on the socket `nimbus serve` bound before anything else
        seen.update(proxy_headers=server.config.proxy_headers, sockets=sockets)

    monkeypatch.setattr(uvicorn.Server, "run", run)
    assert main(["serve", "--port", "0"]) == 0
    assert seen["proxy_headers"] is False and len(seen["sockets"]) == 1
