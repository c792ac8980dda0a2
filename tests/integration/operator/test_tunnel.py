"""`nimbus tunnel`: the admin dashboard through an SSM port-forwarding session, with a stand-in
`aws` on PATH that forwards the local port to the real app (as the Session Manager plugin
forwards it to a search instance's port 8000)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import boto3
import pytest

from tests.integration.operator.conftest import Laptop, Site, closed_port, make_stack

FAKE_AWS = """#!{python}
import json, os, signal, socket, sys, threading

log = open(os.environ["FAKE_AWS_LOG"], "a")
log.write(json.dumps(sys.argv[1:]) + "\\n")
log.flush()
parameters = dict(p.split("=") for p in sys.argv[sys.argv.index("--parameters") + 1].split(","))
host, port = os.environ["FAKE_AWS_TARGET"].rsplit(":", 1)
server = socket.create_server(("127.0.0.1", int(parameters["localPortNumber"])))


def pipe(source, sink):
    try:
        while data := source.recv(65536):
            sink.sendall(data)
        sink.shutdown(socket.SHUT_WR)
    except OSError:
        pass


def forward():
    while True:
        client, _ = server.accept()
        upstream = socket.create_connection((host, int(port)))
        threading.Thread(target=pipe, args=(client, upstream), daemon=True).start()
        threading.Thread(target=pipe, args=(upstream, client), daemon=True).start()


def stop(signum, frame):
    log.write("stopped by " + signal.Signals(signum).name + "\\n")
    log.flush()
    os._exit(0)


signal.signal(signal.SIGINT, stop)
signal.signal(signal.SIGTERM, stop)
print("Starting session with SessionId: fake-0", flush=True)
threading.Thread(target=forward, daemon=True).start()
while True:
    signal.pause()
"""


def _tools(where: Path, plugin: bool = True) -> Path:
    where.mkdir()
    aws = where / "aws"
    aws.write_text(FAKE_AWS.format(python=sys.executable))
    aws.chmod(0o755)
    if plugin:
        (where / "session-manager-plugin").write_text("#!/bin/sh\nexit 0\n")
        (where / "session-manager-plugin").chmod(0o755)
    return where


def _get(url: str) -> tuple[int, str]:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_the_tunnel_opens_to_a_healthy_search_instance_and_closes_on_ctrl_c(
    site: Site, laptop: Laptop, moto_server: str, tmp_path: Path
) -> None:
    stack = make_stack(moto_server, {"search": 2})
    sick, well = stack.instances["search"]
    boto3.client("autoscaling", endpoint_url=moto_server, region_name="us-east-1").set_instance_health(
        InstanceId=sick, HealthStatus="Unhealthy"
    )
    port, log = closed_port(), tmp_path / "aws.log"
    env = {
        **laptop.env,
        **stack.aws_env(),
        "PATH": str(_tools(tmp_path / "bin")),
        "FAKE_AWS_LOG": str(log),
        "FAKE_AWS_TARGET": site.url.removeprefix("http://"),
    }
    tunnel = subprocess.Popen(
        [sys.executable, "-m", "services.cli", "tunnel", "--local-port", str(port), "--wait", "30"],
        env=env,
        cwd=laptop.home,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # Ctrl-C below reaches nimbus alone: it must close the session itself
    )
    try:
        said = tunnel.stdout.readline()  # printed once /healthz answered through the tunnel
        assert said == f"admin dashboard: http://127.0.0.1:{port}/admin\n", tunnel.stderr.read()
        assert tunnel.stdout.readline() == f"for the CLI: export NIMBUS_ADMIN_URL=http://127.0.0.1:{port}/\n"
        status, page = _get(f"http://127.0.0.1:{port}/admin")
        assert status == 401 and 'name="token"' in page  # the real dashboard's sign-in, through the tunnel
        through = laptop.nimbus("crawl", "status", NIMBUS_ADMIN_URL=f"http://127.0.0.1:{port}/")
        assert through.returncode == 0 and "frontier: empty" in through.stdout, through.stderr
    finally:
        os.kill(tunnel.pid, signal.SIGINT)
        _, err = tunnel.communicate(timeout=60)
    assert tunnel.returncode == 0 and "tunnel closed" in err
    started, stopped = log.read_text().splitlines()
    assert json.loads(started) == [
        "ssm", "start-session", "--target", well, "--document-name", "AWS-StartPortForwardingSession",
        "--parameters", f"portNumber=8000,localPortNumber={port}", "--region", "us-east-1",
    ]  # fmt: skip
    assert stopped == "stopped by SIGINT"  # the session ended as Ctrl-C in its terminal ends it
    with socket.socket() as sock, pytest.raises(ConnectionRefusedError):
        sock.connect(("127.0.0.1", port))  # the local port is free again


def test_without_the_session_manager_plugin_it_says_how_to_install_it(laptop: Laptop, tmp_path: Path) -> None:
    missing = laptop.nimbus("tunnel", PATH=str(_tools(tmp_path / "bin", plugin=False)))
    assert missing.returncode == 1
    assert "the Session Manager plugin (`session-manager-plugin`) is not on PATH" in missing.stderr
    assert "session-manager-working-with-install-plugin.html" in missing.stderr
    no_cli = laptop.nimbus("tunnel", PATH=str(tmp_path))
    assert no_cli.returncode == 1 and "the AWS CLI (`aws`, version 2) is not on PATH" in no_cli.stderr
