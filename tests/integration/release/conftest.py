"""The release bundle, built once per test session (it downloads every runtime dependency),
and what the tests that install it share: a loopback site to crawl, a free port, a page's
links, a process stopped at the end."""

from __future__ import annotations

import html.parser
import os
import shutil
import signal
import socket
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from services.release import Release, build_release
from tests.integration.release.rehearsal.tls import RehearsalCA

REPO = Path(__file__).resolve().parents[3]
# Three pages that link each other, with a word found nowhere else: what the tests search for.
WORD = "cumulonimbus"
PAGES = {
    f"p{n}.html": (
        f"<!doctype html><html lang='en'><head><title>Storm page {n}</title></head><body>"
        f"<h1>{WORD.capitalize()} number {n}</h1><p>Clouds of kind {n}: {WORD} towers, anvils and a "
        f"thunderstorm over the plains, with enough plain English words for the language detector "
        f"to read this page as English text.</p><a href='/p{n % 3 + 1}.html'>the next storm</a>"
        "</body></html>"
    )
    for n in (1, 2, 3)
}


# Figures the release tests measure (the boot rehearsal's boot time), printed after the run.
MEASURED: list[str] = []


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for line in MEASURED:
        terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def test_ca(tmp_path_factory: pytest.TempPathFactory) -> RehearsalCA:
    """The CA the release ships as its RDS CA bundle, and the rehearsal's database is signed by."""
    return RehearsalCA.create(tmp_path_factory.mktemp("ca"))


@pytest.fixture(scope="session")
def release(tmp_path_factory: pytest.TempPathFactory, test_ca: RehearsalCA) -> Release:
    """This checkout's release, as `make release` builds it (from PyPI, once a session), with
    the test CA as its RDS CA bundle."""
    return build_release(tmp_path_factory.mktemp("release"), rds_ca=test_ca.certificate)


def python311() -> str:
    """The system's CPython 3.11, as on an instance (``python3.11``), not this test's venv."""
    found = shutil.which("python3.11")
    if found is None:
        pytest.fail("python3.11 is not on PATH: the release targets CPython 3.11")
    return found


def offline_env(home: Path, **extra: str) -> dict[str, str]:
    """A bare environment for a process outside the checkout: no PYTHONPATH, no pip
    configuration (this machine's pip.conf names local wheel folders), no package index."""
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "PIP_NO_INDEX": "1",
        "PIP_CONFIG_FILE": os.devnull,
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        **extra,
    }


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def storm_site(root: Path, host: str = "127.0.0.1") -> Iterator[str]:
    """``PAGES`` served over HTTP on ``host``; yields the home page's URL."""
    root.mkdir(parents=True, exist_ok=True)
    for name, text in PAGES.items():
        (root / name).write_text(text)
    (root / "index.html").write_text(PAGES["p1.html"].replace("Storm page 1", "Storm front page"))
    handler = partial(_QuietHandler, directory=str(root))
    server = ThreadingHTTPServer((host, 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://{host}:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base's name
        pass


class _Links(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((tag, dict(attrs)))


def stylesheets(page: str) -> list[str]:
    """The hrefs of a page's ``<link rel="stylesheet">`` elements."""
    parser = _Links()
    parser.feed(page)
    return [a["href"] or "" for tag, a in parser.found if tag == "link" and a.get("rel") == "stylesheet"]


def assets(page: str) -> list[str]:
    """Every script src and link href of a page."""
    parser = _Links()
    parser.feed(page)
    return [
        value
        for tag, a in parser.found
        for key in ("src", "href")
        if tag in {"script", "link"} and (value := a.get(key))
    ]


def stop(process: subprocess.Popen[bytes]) -> None:
    """End a process this test started, and its children (it leads its own session)."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
