"""When an instance says it is healthy, and what it tells CloudFormation when it is not.

``nimbus-health`` (written by the bootstrap) runs against a stand-in ``systemctl`` and
``curl`` that answer from a file; the bootstrap's failure path runs in dry-run mode, where
``cfn-signal`` is printed instead of sent.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest

from tests.integration.deploy.test_bootstrap_dry_run import COMMON, ROLE_ARGS, _bootstrap

RUNNING = {
    "ActiveState": "active",
    "SubState": "running",
    "Result": "success",
    "NRestarts": "0",
    "ExecMainPID": "4242",
    "ExecMainStatus": "0",
    "ExecMainStartTimestampMonotonic": "5000000",
    "ExecMainExitTimestampMonotonic": "0",
}
# Restart=always after the main process exited 0: waiting for its next start.
ENDED_CLEANLY = {
    **RUNNING,
    "ActiveState": "activating",
    "SubState": "auto-restart",
    "NRestarts": "1",
    "ExecMainPID": "0",
    "ExecMainExitTimestampMonotonic": "9000000",
}
# The third start failed (a migration that cannot reach the database, say).
FAILING = {**ENDED_CLEANLY, "Result": "exit-code", "ExecMainStatus": "1", "NRestarts": "2"}


@pytest.fixture(scope="module")
def health(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("root")
    assert (
        _bootstrap(root, "--role", "worker", *[a.replace("ROLE", "worker") for a in COMMON]).returncode == 0
    )
    return root / "opt/nimbus/bin/nimbus-health"


def _check(tmp_path: Path, health: Path, role: str, unit: dict[str, str], code: str = "000", *extra: str):
    """Run nimbus-health once (no waiting: timeout 0, settle 0) against stand-ins."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (tmp_path / "unit").write_text("".join(f"{k}={v}\n" for k, v in unit.items()))
    (bin_dir / "systemctl").write_text(f'#!/bin/sh\ncat "{tmp_path / "unit"}"\n')
    # curl -w '%{http_code}' prints the code; -f fails unless it is 200.
    (bin_dir / "curl").write_text(
        f'#!/bin/sh\necho "$*" >> "{tmp_path / "curl.log"}"\n'
        f'case "$*" in *-w*) printf %s {code};; esac\n'
        f'[ "{code}" = 200 ] || case "$*" in *-sf*) exit 22;; esac\nexit 0\n'
    )
    for stand_in in bin_dir.iterdir():
        stand_in.chmod(0o755)
    return subprocess.run(
        [str(health), role, "--timeout", "0", "--settle", "0", "--interval", "0", *extra],
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"},
        check=False,
    )


@pytest.mark.parametrize(
    ("role", "unit", "code", "extra", "healthy", "says"),
    [
        ("search", RUNNING, "200", [], True, "answers /healthz with 200"),
        ("search", RUNNING, "503", [], False, "not healthy after 0s (state active/running"),
        ("committer", RUNNING, "200", ["--metrics-port", "9100"], True, "answers /metrics"),
        ("committer", RUNNING, "000", ["--metrics-port", "9100"], False, "not healthy"),
        ("indexer", RUNNING, "000", [], True, "has run for 0s (pid 4242)"),
        ("worker", ENDED_CLEANLY, "000", [], True, "ran and ended cleanly"),
        ("committer", ENDED_CLEANLY, "000", [], False, "not healthy"),  # a committer must keep running
        ("indexer", FAILING, "000", [], False, "failed to start 3 times (exit-code, exit status 1)"),
    ],
)
def test_health_per_role(tmp_path, health, role, unit, code, extra, healthy, says) -> None:
    done = _check(tmp_path, health, role, unit, code, *extra)
    assert (done.returncode == 0) == healthy, done.stdout + done.stderr
    assert says in done.stdout
    if not healthy:
        assert f"journalctl -u nimbus-{role}.service" in done.stdout  # where to look next
    if role == "search" and unit is RUNNING:
        assert "http://127.0.0.1:8000/healthz" in (tmp_path / "curl.log").read_text()


def _signals(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if line.startswith("would run: cfn-signal")]


def _release_with_ca(tmp_path: Path, pem: str) -> list[str]:
    release = tmp_path / "release"
    release.mkdir(parents=True)
    (release / "rds-ca.pem").write_text(pem)
    args = [a.replace("ROLE", "worker") for a in COMMON]
    args[args.index("--release-dir") + 1] = str(release)
    return ["--role", "worker", *args, *ROLE_ARGS["worker"]]


PEM = "-----BEGIN CERTIFICATE-----\nMIIBdummy\n-----END CERTIFICATE-----\n"


def test_a_failed_boot_signals_failure_with_its_reason(tmp_path: Path) -> None:
    """The stack does not wait out its timeout: the instance says what went wrong."""
    done = _bootstrap(tmp_path / "root", *_release_with_ca(tmp_path, "<html>not a bundle</html>\n"))
    assert done.returncode == 1
    (signal,) = _signals(done.stdout)
    assert "--resource workerGroup" in signal and "--exit-code 1" in signal
    assert "worker boot failed: the RDS CA bundle holds no certificate" in signal
    assert "log group /nimbus/s/boot" in signal
    assert not (tmp_path / "root/etc/systemd/system/nimbus-worker.service").exists()  # stopped there


def test_an_unexpected_error_is_signalled_with_the_step_and_command(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.write_text("a file where the root directory should be: every write fails")
    done = _bootstrap(root, "--role", "worker", *[a.replace("ROLE", "worker") for a in COMMON])
    assert done.returncode == 1
    (signal,) = _signals(done.stdout)
    assert "--exit-code 1" in signal and "worker boot failed: step 0 (logs):" in signal


def test_the_ca_bundle_must_match_a_pinned_sha256(tmp_path: Path) -> None:
    right = hashlib.sha256(PEM.encode()).hexdigest()
    done = _bootstrap(tmp_path / "ok", *_release_with_ca(tmp_path / "a", PEM), "--rds-ca-sha256", right)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "ok/etc/nimbus/rds-ca.pem").read_text() == PEM
    assert "curl" not in done.stdout  # shipped in the release: nothing downloaded

    done = _bootstrap(tmp_path / "bad", *_release_with_ca(tmp_path / "b", PEM), "--rds-ca-sha256", "0" * 64)
    assert done.returncode == 1
    assert f"sha256 is {right}, not the {'0' * 64} the stack pins" in _signals(done.stdout)[0]
