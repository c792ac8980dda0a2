"""`nimbus demo` and `nimbus serve` on a busy port: one line naming how to pick another, exit
status 1, before any work (the demo's crawl and index build take about 20 s)."""

from __future__ import annotations

import socket

import pytest

from services.cli import main


@pytest.fixture
def busy_port(tmp_path, monkeypatch):
    monkeypatch.setenv("NIMBUS_DATABASE_URL", f"sqlite:///{tmp_path}/nimbus.db")
    monkeypatch.setenv("NIMBUS_VAR_DIR", str(tmp_path / "var"))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        yield taken.getsockname()[1]


def _no_work(*args, **kwargs):
    raise AssertionError("the port is checked before any work")


@pytest.mark.parametrize("how", ["flag", "env"])
def test_demo_on_a_busy_port_says_which_to_pick_before_crawling(busy_port, how, monkeypatch, capsys):
    import services.demo.run

    monkeypatch.setattr(services.demo.run, "prepare", _no_work)
    monkeypatch.setattr(services.demo.sampleweb, "start_sample_web", _no_work)
    argv = ["demo", "--port", str(busy_port)] if how == "flag" else ["demo"]
    if how == "env":
        monkeypatch.setenv("NIMBUS_PORT", str(busy_port))
    assert main(argv) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.splitlines()
    assert line.startswith(f"nimbus demo: port {busy_port} on 127.0.0.1 is already in use")
    assert "--port N or NIMBUS_PORT=N" in line


def test_serve_on_a_busy_port_is_one_line_and_exit_1(busy_port, capsys):
    assert main(["serve", "--port", str(busy_port)]) == 1
    captured = capsys.readouterr()
    assert "serving on" not in captured.out
    (line,) = captured.err.splitlines()
    assert line.startswith(f"nimbus serve: port {busy_port} on 127.0.0.1 is already in use")
