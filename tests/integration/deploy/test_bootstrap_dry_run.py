"""The instance bootstrap, run in dry-run mode into a throwaway root: what it would install."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from services.deploy.template import BOOTSTRAP

COMMON = [
    "--bucket", "data-bucket",
    "--artifacts", "artifacts-bucket",
    "--release-key", "releases/0.1.0-abc/nimbus_search-0.1.0-py3-none-any.whl",
    "--db-instance", "nimbus-database-x",
    "--db-host", "db.internal", "--db-port", "3306",
    "--region", "eu-west-1", "--log-group", "/nimbus/s/ROLE",
]  # fmt: skip


def _bootstrap(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(BOOTSTRAP), "--dry-run", "--root", str(root), *args],
        capture_output=True,
        text=True,
        check=False,
    )


def _unit(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line and not line.startswith("#"))


@pytest.mark.parametrize("role", ["crawler", "search"])
def test_each_role_gets_its_unit_settings_and_log_shipping(tmp_path: Path, role: str) -> None:
    extra = ["--seeds", "http://a.test/ http://b.test/"] if role == "crawler" else ["--workers", "4"]
    done = _bootstrap(tmp_path, "--role", role, *[a.replace("ROLE", role) for a in COMMON], *extra)
    assert done.returncode == 0, done.stderr
    would = [
        line.removeprefix("would run: ") for line in done.stdout.splitlines() if line.startswith("would run")
    ]
    assert "aws s3 cp --region eu-west-1 s3://artifacts-bucket/releases/0.1.0-abc/" in " ".join(would)
    assert (
        "/opt/nimbus/venv/bin/pip install --quiet /opt/nimbus/nimbus_search-0.1.0-py3-none-any.whl" in would
    )
    assert f"systemctl enable --now nimbus-logs.service nimbus-{role}.service" in would

    env = _unit((tmp_path / "etc/nimbus/nimbus.env").read_text())
    assert env["NIMBUS_BLOB_URL"] == "s3://data-bucket/nimbus" and env["AWS_REGION"] == "eu-west-1"
    assert env["NIMBUS_DATABASE_INSTANCE"] == "nimbus-database-x" and "NIMBUS_DATABASE_URL" not in env

    unit_path = tmp_path / f"etc/systemd/system/nimbus-{role}.service"
    unit = _unit(unit_path.read_text())
    assert (unit["User"], unit["EnvironmentFile"]) == ("nimbus", "/etc/nimbus/nimbus.env")
    assert unit["ExecStartPre"] == "/opt/nimbus/venv/bin/nimbus migrate"
    assert unit["Restart"] in {"always", "on-failure"} and unit["NoNewPrivileges"] == "yes"
    assert unit["ProtectSystem"] == "strict" and unit["ReadWritePaths"] == "/var/lib/nimbus"
    if role == "crawler":
        assert unit["ExecStart"] == "/opt/nimbus/venv/bin/nimbus crawl --quiet $NIMBUS_SEEDS"
        assert env["NIMBUS_SEEDS"] == "http://a.test/ http://b.test/"
    else:
        assert unit["ExecStart"] == "/opt/nimbus/venv/bin/nimbus serve --workers ${NIMBUS_SERVE_WORKERS}"
        assert (env["NIMBUS_HOST"], env["NIMBUS_SERVE_WORKERS"]) == ("0.0.0.0", "4")
    agent = (tmp_path / "opt/aws/amazon-cloudwatch-agent/etc/amazon-cloudwatch-agent.json").read_text()
    assert f'"log_group_name": "/nimbus/s/{role}"' in agent and f"/var/log/nimbus/{role}.log" in agent

    for path in tmp_path.rglob("*"):  # nothing secret anywhere
        if path.is_file():
            assert "password" not in path.read_text().lower(), path


def _complaints(analyze: str, unit: Path) -> list[str]:
    """What ``systemd-analyze verify`` says of a unit, less what this machine causes: the
    venv is not installed here, and a container has no sysinit.target."""
    done = subprocess.run([analyze, "verify", str(unit)], capture_output=True, text=True, check=False)
    noise = ("is not executable", "sysinit.target not found")
    return [line for line in done.stderr.splitlines() if line.strip() and not any(n in line for n in noise)]


def test_units_pass_systemd_analyze_where_it_exists(tmp_path: Path) -> None:
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed on this machine")
    for role in ("crawler", "search"):
        root = tmp_path / role
        assert _bootstrap(root, "--role", role, *COMMON).returncode == 0
        for unit in (root / "etc/systemd/system").glob("*.service"):
            assert _complaints(analyze, unit) == [], unit.name
    broken = tmp_path / "broken.service"  # the check can fail: a typo is reported
    text = (tmp_path / "search/etc/systemd/system/nimbus-search.service").read_text()
    broken.write_text(text.replace("NoNewPrivileges=yes", "NoNewPrivilege=yes"))
    assert any("Unknown key 'NoNewPrivilege'" in line for line in _complaints(analyze, broken))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--role", "crawler"], "missing --bucket"),
        (["--role", "indexer", *COMMON], "--role must be crawler or search"),
        (["--role", "search", *COMMON, "--workers", "0"], "--workers must be a positive number"),
        (["--role", "search", *COMMON, "--bogus"], "unknown argument --bogus"),
    ],
)
def test_bad_arguments_stop_before_anything_is_written(tmp_path: Path, args: list[str], message: str) -> None:
    done = _bootstrap(tmp_path, *args)
    assert done.returncode == 2 and message in done.stderr
    assert not any(tmp_path.iterdir())
