"""What `nimbus ... --remote` says when the admin API cannot be used, and where the token may
go: only HTTPS or loopback, never along a redirect."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from services.cli import main
from services.cli.admin_client import api_base
from services.cli.parsing import UsageError
from tests.integration.operator.conftest import TOKEN, Site, closed_port


@pytest.mark.parametrize(
    ("given", "base"),
    [
        ("https://search.example.org", "https://search.example.org/admin/api/"),
        ("https://search.example.org/admin/", "https://search.example.org/admin/api/"),
        ("https://example.org/nimbus/", "https://example.org/nimbus/admin/api/"),
        ("http://127.0.0.1:8800/", "http://127.0.0.1:8800/admin/api/"),  # `nimbus tunnel`'s end
        ("http://localhost:8800/admin", "http://localhost:8800/admin/api/"),
        ("http://[::1]:8800", "http://[::1]:8800/admin/api/"),
    ],
)
def test_the_api_is_found_from_the_sites_url(given: str, base: str) -> None:
    assert api_base(given) == base


@pytest.mark.parametrize(
    "given", ["http://search.example.org/", "http://10.0.1.5:8000/", "ftp://example.org/", "example.org"]
)
def test_the_token_never_goes_in_clear_beyond_this_machine(given: str) -> None:
    with pytest.raises(UsageError, match="https://"):
        api_base(given)
    if given.startswith("http://"):
        assert api_base(given, insecure_http=True).startswith(given.rstrip("/"))


@pytest.fixture
def remote_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NIMBUS_DATABASE_URL", f"mysql+pymysql://x:y@127.0.0.1:{closed_port()}/nimbus")
    monkeypatch.setenv("NIMBUS_ADMIN_TOKEN", TOKEN)


def test_a_wrong_token_and_an_unreachable_site_are_one_line_each(site: Site, remote_env, monkeypatch, capsys):
    monkeypatch.setenv("NIMBUS_ADMIN_TOKEN", "not-the-token")
    assert main(["crawl", "pause", "--remote", site.url]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"nimbus crawl pause: {site.url}/admin/api/pause refused the admin token (401)")
    assert "not-the-token" not in err  # the token is never printed
    down = f"http://127.0.0.1:{closed_port()}"
    assert main(["crawl", "status", "--remote", down]) == 1
    assert f"cannot reach the admin API at {down}/admin/api/status" in capsys.readouterr().err
    monkeypatch.delenv("NIMBUS_ADMIN_TOKEN")
    assert main(["index", "status", "--remote", site.url]) == 1
    assert "no admin token for" in capsys.readouterr().err


class _Redirecting(BaseHTTPRequestHandler):
    seen: list[str] = []

    def do_POST(self) -> None:
        self.seen.append(self.path)
        self.send_response(307)
        self.send_header("Location", "/elsewhere/admin/api/pause")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def redirecting() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Redirecting)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_a_redirect_is_not_followed_with_the_token(redirecting: str, remote_env, capsys) -> None:
    assert main(["crawl", "pause", "--remote", redirecting]) == 1
    assert (
        "redirects to /elsewhere/admin/api/pause (307): the token is not sent on" in capsys.readouterr().err
    )
    assert _Redirecting.seen == ["/admin/api/pause"]  # nothing sent to /elsewhere


def test_the_local_and_the_remote_command_print_the_same(
    site: Site, mysql_url: str, monkeypatch, capsys
) -> None:
    monkeypatch.setenv("NIMBUS_ADMIN_TOKEN", TOKEN)
    monkeypatch.setenv("NIMBUS_DATABASE_URL", mysql_url)  # this machine reaches the database too
    for argv in (
        ["crawl", "block", "--reason", "link farm", "spam.test"],
        ["crawl", "block", "--purge", "spam.test"],  # no pages: the same "nothing to purge"
        ["crawl", "pause"],
        ["crawl", "status"],
        ["index", "now"],
    ):
        assert main(argv) == 0
        local = capsys.readouterr().out
        assert main([*argv, "--remote", site.url]) == 0
        remote = capsys.readouterr().out
        if argv[:2] == ["index", "now"]:  # the next build's number
            local, remote = local.replace("build 1 ", "build N "), remote.replace("build 2 ", "build N ")
        assert remote == local, argv
