"""The `nimbus` command, called as main(argv) with settings from the environment."""

from __future__ import annotations

import pytest

from services.cli import main
from services.demo.sampleweb import Resource, Site, SiteServer


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


def test_bad_seed_and_empty_index_say_what_to_do(env, capsys):
    assert main(["crawl", "ftp://example.org/", "--quiet"]) == 2
    assert "give absolute http(s) URLs" in capsys.readouterr().err
    assert main(["index", "--quiet"]) == 1
    assert "crawl first" in capsys.readouterr().err


def test_bad_setting_is_reported_not_raised(env, monkeypatch, capsys):
    monkeypatch.setenv("NIMBUS_MR_RUNNER", "hadoop")
    assert main(["index"]) == 2
    assert "NIMBUS_MR_RUNNER='hadoop'" in capsys.readouterr().err
