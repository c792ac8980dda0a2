"""The `nimbus` command, called as main(argv) with settings from the environment."""

from __future__ import annotations

import pytest

from services.cli import main
from services.config import Settings
from services.demo.sampleweb import Resource, Site, SiteServer
from services.search.service import SearchService


@pytest.fixture
def env(tmp_path, monkeypatch):
    monkeypatch.setenv("NIMBUS_DATABASE_URL", f"sqlite:///{tmp_path}/nimbus.db")
    monkeypatch.setenv("NIMBUS_BLOB_URL", f"file://{tmp_path}/blobs")
    monkeypatch.setenv("NIMBUS_VAR_DIR", str(tmp_path / "var"))
    monkeypatch.setenv("NIMBUS_MR_RUNNER", "inline")
    monkeypatch.setenv("NIMBUS_ALLOWED_HOSTS", "127.0.0.1")
    return tmp_path


@pytest.fixture
def site():
    pages = {
        "/": "<title>Home</title><a href='/wings'>wings</a> <a href='/engines'>engines</a>",
        "/wings": "<title>Wings</title><p>Swept wings delay compressibility drag.</p><a href='/'>home</a>",
        "/engines": "<title>Engines</title><p>Jet engines and propellers.</p>",
    }
    server = SiteServer(Site("t", {p: Resource("text/html", b.encode()) for p, b in pages.items()}))
    server.start()
    yield server
    server.stop()


def test_crawl_then_index_through_the_cli(env, site, capsys):
    assert main(["crawl", site.origin + "/", "--max-pages", "10", "--delay", "0", "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "crawled 3 pages in" in err and "pages/s)" in err
    assert main(["index", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "published index/segment-" in out and "3 documents" in out


def test_crawl_status_shows_each_crawler_process_and_the_frontier(env, site, capsys):
    assert main(["crawl", site.origin + "/", "--max-pages", "10", "--delay", "0", "--quiet"]) == 0
    capsys.readouterr()
    assert main(["crawl", "status"]) == 0
    out = capsys.readouterr().out
    node = next(line for line in out.splitlines() if " crawler " in line)
    assert " stopped " in node and " 3 " in node  # its last beat: stopped cleanly, 3 pages
    assert "0 running, 0 dead; 3 pages in all" in out
    assert "frontier: 3 done" in out


def test_operator_commands_go_through_the_database(env, capsys):
    assert main(["crawl", "seed", "http://127.0.0.1:9/a", "http://127.0.0.1:9/a#x"]) == 0
    assert "1 new URLs in the frontier (1 known already)" in capsys.readouterr().out
    assert main(["crawl", "pause"]) == 0
    assert "asked every crawler to pause" in capsys.readouterr().out
    assert main(["crawl", "seed"]) == 2  # no URLs
    assert main(["crawl", "stop", "http://127.0.0.1:9/"]) == 2  # takes none
    assert "takes no URLs" in capsys.readouterr().err
    assert main(["crawl", "seed", "ftp://x/"]) == 2


@pytest.mark.parametrize(
    "second",
    [
        ["http://127.0.0.1:9/a", "http://127.0.0.1:9/b", "--recrawl"],
        # Options may come between the URLs (argparse alone would refuse the URL after it).
        ["http://127.0.0.1:9/a", "--recrawl", "http://127.0.0.1:9/b"],
    ],
    ids=["option-last", "option-between"],
)
def test_seed_recrawl_makes_known_urls_due_again(env, capsys, second):
    assert main(["crawl", "seed", "http://127.0.0.1:9/a"]) == 0
    capsys.readouterr()
    assert main(["crawl", "seed", *second]) == 0
    out = capsys.readouterr().out
    assert "1 new URLs in the frontier (1 known already)" in out
    assert "1 known URLs due again now" in out
    assert main(["crawl", "status"]) == 0
    assert "frontier: 2 new" in capsys.readouterr().out


def test_hosts_are_blocked_and_unblocked_from_the_shell(env, capsys):
    assert main(["crawl", "block", "Spam.TEST", "http://ads.test/x", "--reason", "link farm"]) == 0
    assert "blocked spam.test, ads.test (and their subdomains)" in capsys.readouterr().out
    assert main(["crawl", "status"]) == 0
    out = capsys.readouterr().out
    assert "blocked: ads.test (link farm)" in out and "blocked: spam.test (link farm)" in out
    assert main(["crawl", "unblock", "ads.test"]) == 0
    assert "unblocked ads.test" in capsys.readouterr().out
    assert main(["crawl", "status"]) == 0
    out = capsys.readouterr().out
    assert "blocked: spam.test" in out and "ads.test" not in out
    assert main(["crawl", "block"]) == 2  # no host
    assert main(["crawl", "block", "exa_mple.com"]) == 2
    assert "not a host name" in capsys.readouterr().err


def test_a_host_blocked_with_purge_leaves_the_index_at_the_next_update(env, site, capsys):
    assert main(["crawl", site.origin + "/", "--max-pages", "10", "--delay", "0", "--quiet"]) == 0
    assert main(["index", "--quiet"]) == 0
    settings = Settings.of(database_url=f"sqlite:///{env}/nimbus.db", blob_url=f"file://{env}/blobs")
    assert [h.url for h in SearchService(settings, recheck_seconds=0).search("wings").hits]
    capsys.readouterr()
    assert main(["crawl", "block", "--purge", site.origin + "/wings", "--reason", "spam"]) == 0
    out = capsys.readouterr().out
    assert "blocked 127.0.0.1 (and their subdomains)" in out
    assert "purged 127.0.0.1: 3 stored pages (its subdomains' too) leave the index at its next update" in out
    assert main(["index", "update", "--quiet"]) == 0
    assert SearchService(settings, recheck_seconds=0).search("wings").hits == []
    assert main(["crawl", "status"]) == 0
    assert "blocked: 127.0.0.1 (spam); its pages purged from the index" in capsys.readouterr().out
    capsys.readouterr()
    assert main(["crawl", "block", "--purge", "127.0.0.1"]) == 0  # again: nothing left to purge
    assert "nothing to purge for 127.0.0.1: no stored page of it or its subdomains is live" in (
        capsys.readouterr().out
    )
    assert main(["crawl", "block", "--purge", ""]) == 2
    assert "nimbus crawl block: not a host name: '' (give example.org" in capsys.readouterr().err
    assert main(["crawl", "block", "--purge", "bad host!"]) == 2
    assert "not a host name: 'bad host!'" in capsys.readouterr().err
    assert main(["crawl", "block", "--purge"]) == 2
    assert "give one or more host names" in capsys.readouterr().err
    assert main(["crawl", "unblock", "127.0.0.1"]) == 0
    assert "pages purged stay out of the index until a recrawl finds them good" in capsys.readouterr().out


def test_bad_seed_and_empty_index_say_what_to_do(env, capsys):
    assert main(["crawl", "ftp://example.org/", "--quiet"]) == 2
    assert "give absolute http(s) URLs" in capsys.readouterr().err
    assert main(["index", "--quiet"]) == 1
    assert "crawl first" in capsys.readouterr().err


def test_bad_setting_is_reported_not_raised(env, monkeypatch, capsys):
    monkeypatch.setenv("NIMBUS_MR_RUNNER", "hadoop")
    assert main(["index"]) == 2
    assert "NIMBUS_MR_RUNNER='hadoop'" in capsys.readouterr().err


def test_negative_or_malformed_numbers_are_refused_by_argparse(env, capsys):
    for argv in (
        ["crawl", "http://127.0.0.1:9/", "--max-pages", "-5"],
        ["crawl", "http://127.0.0.1:9/", "--delay", "soon"],
        ["eval", str(env), "--depth", "0"],
    ):
        with pytest.raises(SystemExit) as exit_info:
            main(argv)
        assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "-5 is negative: give 0 or more" in err
    assert "'soon' is not a number of seconds" in err
    assert "give 1 or more" in err


def test_errors_are_translated_once_with_the_command_name(env, tmp_path, capsys):
    """An error raised deep inside a command (here the eval's collection loader) reaches the
    user as one line naming the command, with the error's exit status, never a traceback."""
    (tmp_path / "broken").mkdir()
    for name in ("docs.jsonl", "queries.jsonl", "qrels.tsv"):
        (tmp_path / "broken" / name).write_text("not json\n")
    assert main(["eval", str(tmp_path / "broken"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"nimbus eval: {tmp_path / 'broken' / 'docs.jsonl'} at byte 0: not JSON "
        "(Expecting value: line 1 column 1 (char 0))"
    ]


def test_demo_without_sample_data_names_the_flag(env, tmp_path, capsys):
    assert main(["demo", "--data", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("nimbus demo: sample data not found in") and "--data DIR" in err


def test_default_data_is_the_checkouts_own(capsys):
    from services.cli import DEFAULT_DATA

    assert (DEFAULT_DATA / "SHA256SUMS").is_file() and DEFAULT_DATA.parent.joinpath(
        "pyproject.toml"
    ).is_file()


def test_a_crawl_that_fetches_nothing_says_why(env, monkeypatch, capsys):
    monkeypatch.setenv("NIMBUS_MAX_ATTEMPTS", "1")
    assert main(["crawl", "http://127.0.0.1:9/", "--quiet"]) == 1  # nothing listens on port 9
    err = capsys.readouterr().err
    assert "crawled 0 pages" in err
    assert "nimbus crawl: http://127.0.0.1:9/: failed: its host's robots.txt could not be fetched" in err
    assert main(["crawl", "http://elsewhere.test/", "--quiet"]) == 1
    assert "outside NIMBUS_ALLOWED_HOSTS" in capsys.readouterr().err


def test_sampleweb_without_data_is_one_line_not_a_traceback(tmp_path, capsys):
    assert main(["sampleweb", "--data", str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("nimbus sampleweb: sample data not found") and "Traceback" not in err


def test_every_flag_has_help_text():
    from services.cli import _parser

    def walk(parser):
        for action in parser._actions:
            if action.dest == "help":
                continue
            if getattr(action, "choices", None) and isinstance(action.choices, dict):
                for sub in action.choices.values():
                    yield from walk(sub)
            else:
                yield parser.prog, action

    missing = [f"{prog} {a.option_strings or a.dest}" for prog, a in walk(_parser()) if not a.help]
    assert missing == []
