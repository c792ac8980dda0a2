"""The instance bootstrap, run in dry-run mode into a throwaway root: what it would install."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from services.deploy.template import BOOTSTRAP

COMMON = [
    "--release-dir", "/opt/nimbus/release",
    "--release-url", "s3://artifacts-bucket/releases/0.1.0-abc/",
    "--bucket", "data-bucket",
    "--db-instance", "nimbus-database-x",
    "--db-host", "db.internal", "--db-port", "3306",
    "--region", "eu-west-1", "--log-group", "/nimbus/s/ROLE", "--boot-log-group", "/nimbus/s/boot",
    "--db-secret", "arn:aws:secretsmanager:eu-west-1:123456789012:secret:ROLEDbSecret-x-AbCdEf",
    "--stack", "s", "--signal-resource", "ROLEGroup",
]  # fmt: skip
NIMBUS = "/opt/nimbus/venv/bin/nimbus"
SEEDS = "http://a.test/ http://b.test/"
ADMIN_SECRET = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:AdminTokenSecret-x-AbCdEf"
ADMIN_ENV = "/run/nimbus-admin/admin.env"
LB_CIDRS = "10.40.0.0/20,10.40.16.0/20"
# What the template passes each role besides COMMON (infra/nimbus.yaml, the launch templates).
ROLE_ARGS = {
    "worker": ["--metrics-port", "9100"],
    "committer": ["--metrics-port", "9100", "--seeds", SEEDS],
    "search": ["--workers", "4", "--admin-token-secret", ADMIN_SECRET, "--proxy-cidrs", LB_CIDRS],
    "indexer": ["--env", "NIMBUS_MR_RUNNER=emr", "--env", "NIMBUS_EMR_SUBNET=subnet-1"],
}


def _bootstrap(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(BOOTSTRAP), "--dry-run", "--root", str(root), *args],
        capture_output=True,
        text=True,
        check=False,
    )


def _role(root: Path, role: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return _bootstrap(root, "--role", role, *[a.replace("ROLE", role) for a in COMMON], *extra)


def _unit(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line and not line.startswith("#"))


def _directives(text: str, key: str) -> list[str]:
    """Every value of a unit directive that may repeat (ExecStartPre, EnvironmentFile), in order."""
    return [line.split("=", 1)[1] for line in text.splitlines() if line.startswith(f"{key}=")]


def _unit_commands(stdout: str, unit: str) -> list[str]:
    """What the dry run says the role's unit will run, in order."""
    prefix = f"would run in {unit}: "
    return [line.removeprefix(prefix) for line in stdout.splitlines() if line.startswith(prefix)]


@pytest.mark.parametrize("role", ["worker", "committer", "search", "indexer"])
def test_each_role_gets_its_unit_settings_and_log_shipping(tmp_path: Path, role: str) -> None:
    done = _role(tmp_path, role, *ROLE_ARGS[role])
    assert done.returncode == 0, done.stderr
    would = [
        line.removeprefix("would run: ") for line in done.stdout.splitlines() if line.startswith("would run")
    ]
    # The release from the bundle's wheelhouse, every hash checked, no package index asked.
    assert (
        f"{tmp_path}/opt/nimbus/venv/bin/python -m pip install --quiet --no-index --require-hashes "
        "--find-links /opt/nimbus/release/wheelhouse -r /opt/nimbus/release/requirements.txt"
    ) in would
    assert f"systemctl enable --now nimbus-logs.service nimbus-{role}.service" in would
    # Logs before anything that can fail; the signal after the health check, last.
    agent = next(i for i, w in enumerate(would) if "amazon-cloudwatch-agent-ctl" in w)
    assert agent < next(i for i, w in enumerate(would) if w.startswith("python3.11 -m venv"))
    assert would[-2].startswith(f"/opt/nimbus/bin/nimbus-health {role} --timeout 480")
    assert would[-1].startswith(
        f"cfn-signal --stack s --resource {role}Group --region eu-west-1 --exit-code 0"
    )

    env = _unit((tmp_path / "etc/nimbus/nimbus.env").read_text())
    assert env["NIMBUS_BLOB_URL"] == "s3://data-bucket/nimbus" and env["AWS_REGION"] == "eu-west-1"
    assert env["NIMBUS_RELEASE_URL"] == "s3://artifacts-bucket/releases/0.1.0-abc/"
    assert env["NIMBUS_DATABASE_INSTANCE"] == "nimbus-database-x" and "NIMBUS_DATABASE_URL" not in env
    assert env["NIMBUS_DATABASE_SECRET"].endswith(f":secret:{role}DbSecret-x-AbCdEf")  # its own user
    assert env["NIMBUS_DATABASE_TLS_CA"] == "/etc/nimbus/rds-ca.pem"
    assert (env["NIMBUS_CLOUDWATCH_NAMESPACE"], env["NIMBUS_STACK_NAME"]) == ("Nimbus", "s")
    assert ("NIMBUS_DATABASE_ADMIN_SECRET" in env) == (role == "indexer")  # the master user's

    text = (tmp_path / f"etc/systemd/system/nimbus-{role}.service").read_text()
    unit = _unit(text)
    assert unit["User"] == "nimbus" and _directives(text, "EnvironmentFile")[0] == "/etc/nimbus/nimbus.env"
    assert (f"{NIMBUS} migrate" in _directives(text, "ExecStartPre")) == (role == "indexer")
    assert unit["Restart"] in {"always", "on-failure"} and unit["NoNewPrivileges"] == "yes"
    assert unit["ProtectSystem"] == "strict" and unit["ReadWritePaths"] == "/var/lib/nimbus"
    # numba caches the compiled search kernels where the service may write (not the release).
    cache = [v for v in _directives(text, "Environment") if v.startswith("NUMBA_CACHE_DIR=")]
    assert cache == ["NUMBA_CACHE_DIR=/var/lib/nimbus/numba-cache"]
    assert unit["StandardOutput"] == unit["StandardError"] == "journal"
    if role == "worker":
        assert (
            unit["ExecStart"] == f"{NIMBUS} crawl worker --quiet --max-pages 1000000"
            and unit["Restart"] == "always"
        )
        assert (env["NIMBUS_HOST"], env["NIMBUS_METRICS_PORT"]) == ("0.0.0.0", "9100")
        assert "NIMBUS_SEEDS" not in env  # workers lease from the frontier the committers seed
    elif role == "committer":
        assert unit["ExecStart"] == f"{NIMBUS} crawl committer" and unit["Restart"] == "always"
        assert (env["NIMBUS_METRICS_PORT"], env["NIMBUS_SEEDS"]) == ("9100", SEEDS)
    elif role == "search":
        assert unit["ExecStart"] == f"{NIMBUS} serve --workers ${{NIMBUS_SERVE_WORKERS}}"
        assert (env["NIMBUS_HOST"], env["NIMBUS_SERVE_WORKERS"]) == ("0.0.0.0", "4")
        assert env["NIMBUS_ADMIN_TOKEN_SECRET"] == ADMIN_SECRET and "NIMBUS_ADMIN_TOKEN" not in env
        assert "NIMBUS_METRICS_PORT" not in env  # the service's /metrics is on its own port, 8000
        assert env["NIMBUS_PROXY_CIDRS"] == LB_CIDRS  # the client and https behind the load balancer
    else:
        assert unit["ExecStart"] == f"{NIMBUS} index daemon" and unit["Restart"] == "always"
        assert (env["NIMBUS_MR_RUNNER"], env["NIMBUS_EMR_SUBNET"]) == ("emr", "subnet-1")
    agent_config = json.loads(
        (tmp_path / "opt/aws/amazon-cloudwatch-agent/etc/amazon-cloudwatch-agent.json").read_text()
    )
    shipped = {c["file_path"]: c for c in agent_config["logs"]["logs_collected"]["files"]["collect_list"]}
    assert shipped[f"/var/log/nimbus/{role}.log"]["log_group_name"] == f"/nimbus/s/{role}"
    boot = shipped["/var/log/cloud-init-output.log"]
    assert (boot["log_group_name"], boot["log_stream_name"]) == ("/nimbus/s/boot", f"{role}/{{instance_id}}")

    for path in tmp_path.rglob("*"):  # nothing secret anywhere
        if path.is_file():
            assert "password" not in path.read_text().lower(), path


def test_logs_are_bounded_on_the_disk(tmp_path: Path) -> None:
    """The journal has a ceiling; the exported file rotates by size (hourly checks), and the
    exporter resumes from its cursor after each rotation."""
    assert _role(tmp_path, "worker", *ROLE_ARGS["worker"]).returncode == 0
    journald = _unit((tmp_path / "etc/systemd/journald.conf.d/50-nimbus.conf").read_text())
    assert journald["SystemMaxUse"] == "1G" and journald["SystemKeepFree"] == "4G"
    rotate = (tmp_path / "etc/logrotate.d/nimbus").read_text()
    assert "/var/log/nimbus/*.log {" in rotate and "size 100M" in rotate and "rotate 3" in rotate
    assert "systemctl restart nimbus-logs.service" in rotate
    assert "OnCalendar=hourly" in (tmp_path / "etc/systemd/system/logrotate.timer.d/hourly.conf").read_text()
    exporter = _unit((tmp_path / "etc/systemd/system/nimbus-logs.service").read_text())
    assert "--cursor-file=/var/lib/nimbus-logs/cursor --unit=nimbus-worker" in exporter["ExecStart"]
    assert exporter["ExecStart"].endswith(">> /var/log/nimbus/worker.log'")


def test_committer_seeds_the_frontier_then_commits(tmp_path: Path) -> None:
    """The dry run names what the committer's unit runs, in order: the seeds (only adds
    frontier rows, so both committers may run it at every start), then the committer."""
    done = _role(tmp_path / "seeded", "committer", *ROLE_ARGS["committer"])
    assert done.returncode == 0, done.stderr
    assert _unit_commands(done.stdout, "nimbus-committer.service") == [
        f"{NIMBUS} crawl seed $NIMBUS_SEEDS",
        f"{NIMBUS} crawl committer",
    ]
    text = (tmp_path / "seeded/etc/systemd/system/nimbus-committer.service").read_text()
    assert _directives(text, "ExecStartPre") == [f"{NIMBUS} crawl seed $NIMBUS_SEEDS"]

    # Without seeds there is nothing to add: `nimbus crawl seed` with no URL would fail the unit.
    done = _role(tmp_path / "plain", "committer", "--metrics-port", "9100", "--seeds", "")
    assert done.returncode == 0, done.stderr
    assert _unit_commands(done.stdout, "nimbus-committer.service") == [f"{NIMBUS} crawl committer"]


def test_the_indexer_migrates_creates_the_users_then_builds(tmp_path: Path) -> None:
    """Only the indexer changes the schema and makes the role users, as the master user, whose
    secret RDS alone can name (looked up at boot)."""
    done = _role(tmp_path, "indexer", *ROLE_ARGS["indexer"])
    assert done.returncode == 0, done.stderr
    assert _unit_commands(done.stdout, "nimbus-indexer.service") == [
        f"{NIMBUS} migrate",
        f"{NIMBUS} db users",
        f"{NIMBUS} index daemon",
    ]
    lookup = "aws rds describe-db-instances --region eu-west-1 --db-instance-identifier nimbus-database-x"
    assert f"would run: {lookup}" in done.stdout


@pytest.mark.parametrize("role", ["worker", "committer", "search", "indexer"])
def test_search_compiles_its_kernels_as_its_user_into_its_units_cache(tmp_path: Path, role: str) -> None:
    """Right after the release is installed, its own ``nimbus warm-kernels`` fills the cache the
    unit names, as the unit's user: the service's first start loads the kernels, compiles none.
    The other roles run no search kernel and skip the compile."""
    done = _role(tmp_path, role, *ROLE_ARGS[role])
    assert done.returncode == 0, done.stderr
    would = [
        line.removeprefix("would run: ")
        for line in done.stdout.splitlines()
        if line.startswith("would run: ")
    ]
    warm = [i for i, w in enumerate(would) if "warm-kernels" in w]
    if role != "search":
        assert warm == []
        return
    text = (tmp_path / f"etc/systemd/system/nimbus-{role}.service").read_text()
    (cache,) = [v for v in _directives(text, "Environment") if v.startswith("NUMBA_CACHE_DIR=")]
    user = _unit(text)["User"]
    assert [would[i] for i in warm] == [
        f"runuser -u {user} -- env {cache.replace('=', f'={tmp_path}', 1)} {tmp_path}{NIMBUS} warm-kernels"
    ]
    installed = next(i for i, w in enumerate(would) if " -m pip install " in w)
    assert installed < warm[0] < next(i for i, w in enumerate(would) if w.startswith("systemctl enable"))
    assert (
        would.index(f"useradd --system --create-home --home-dir /var/lib/{user} --shell /sbin/nologin {user}")
        < warm[0]
    )


def _stand_in(path: Path, body: str = "") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)


def test_a_failed_kernel_compile_fails_the_boot_saying_why(tmp_path: Path) -> None:
    """Not a dry run: the steps before the warm-up succeed through stand-ins on PATH, and a
    ``runuser`` that fails as the release's command would. The boot stops there and signals
    failure, naming the step and the cache."""
    bin_dir, root = tmp_path / "bin", tmp_path / "root"
    for name in ("dnf", "systemctl", "useradd", "python3.11"):
        _stand_in(bin_dir / name)
    _stand_in(
        bin_dir / "runuser", 'echo "nimbus warm-kernels: numba cached the kernels elsewhere" >&2; exit 1'
    )
    _stand_in(bin_dir / "cfn-signal", f'echo "$*" >> {tmp_path}/signals')
    _stand_in(root / "opt/aws/amazon-cloudwatch-agent/bin/amazon-cloudwatch-agent-ctl")
    _stand_in(root / "opt/nimbus/venv/bin/python")  # pip installs nothing
    done = subprocess.run(
        ["bash", str(BOOTSTRAP), "--root", str(root), "--role", "search"]
        + [a.replace("ROLE", "search") for a in COMMON],
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"},
        check=False,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "numba cached the kernels elsewhere" in done.stderr  # the command's own reason
    assert "FAILED search: nimbus warm-kernels, as user nimbus, could not compile" in done.stderr
    (signal,) = (tmp_path / "signals").read_text().splitlines()
    assert "--exit-code 1" in signal and "/var/lib/nimbus/numba-cache" in signal
    assert not (root / "etc/systemd/system/nimbus-search.service").exists()  # it stopped there


def test_search_reads_the_admin_token_into_its_environment_at_each_start(tmp_path: Path) -> None:
    """The token is fetched as root before the service starts, into a root-only file on tmpfs
    that systemd loads into the environment; the settings file names only the secret."""
    done = _role(tmp_path, "search", *ROLE_ARGS["search"])
    assert done.returncode == 0, done.stderr
    fetch = f"+/opt/nimbus/bin/nimbus-admin-token {ADMIN_ENV}"
    assert _unit_commands(done.stdout, "nimbus-search.service")[0] == fetch
    text = (tmp_path / "etc/systemd/system/nimbus-search.service").read_text()
    assert _directives(text, "ExecStartPre") == [fetch]
    # "-": the file does not exist yet when systemd starts the fetch itself.
    assert _directives(text, "EnvironmentFile") == ["/etc/nimbus/nimbus.env", f"-{ADMIN_ENV}"]

    done = _role(tmp_path / "off", "search", "--workers", "4")  # no secret: no dashboard
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "off/etc/systemd/system/nimbus-search.service").read_text()
    assert _directives(text, "ExecStartPre") == [] and "admin" not in text


def _fake_aws(bin_dir: Path, answer: str) -> None:
    """An ``aws`` on PATH that records its arguments and prints ``answer`` as the secret."""
    bin_dir.mkdir(parents=True)
    script = bin_dir / "aws"
    script.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" > "{bin_dir}/args"\nprintf "%s\\n" {answer!r}\n')
    script.chmod(0o755)


def _fetch_token(tmp_path: Path, answer: str) -> subprocess.CompletedProcess[str]:
    assert _role(tmp_path / "root", "search", *ROLE_ARGS["search"]).returncode == 0
    _fake_aws(tmp_path / "bin", answer)
    env = {
        "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}",
        "AWS_REGION": "eu-west-1",
        "NIMBUS_ADMIN_TOKEN_SECRET": ADMIN_SECRET,
    }
    return subprocess.run(
        [str(tmp_path / "root/opt/nimbus/bin/nimbus-admin-token"), str(tmp_path / "run/admin.env")],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )


def test_admin_token_script_writes_an_environment_file_only_its_owner_reads(tmp_path: Path) -> None:
    done = _fetch_token(tmp_path, "Tok3nFromSecretsManager")
    assert done.returncode == 0, done.stderr
    written = tmp_path / "run/admin.env"
    assert written.read_text() == "NIMBUS_ADMIN_TOKEN=Tok3nFromSecretsManager\n"
    assert stat.S_IMODE(written.stat().st_mode) == 0o600
    assert stat.S_IMODE(written.parent.stat().st_mode) == 0o700
    args = (tmp_path / "bin/args").read_text().split()
    assert args == [
        "secretsmanager", "get-secret-value", "--region", "eu-west-1", "--secret-id", ADMIN_SECRET,
        "--query", "SecretString", "--output", "text",
    ]  # fmt: skip


@pytest.mark.parametrize("answer", ["", 'two words"', "a$b"])
def test_admin_token_script_refuses_what_an_env_file_cannot_carry(tmp_path: Path, answer: str) -> None:
    """An empty token or one systemd would read differently fails the start, saying why,
    rather than starting the dashboard with a token the operator did not set."""
    done = _fetch_token(tmp_path, answer)
    assert done.returncode == 1 and "cannot carry" in done.stderr
    assert not (tmp_path / "run/admin.env").exists()


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
    for role, extra in ROLE_ARGS.items():
        root = tmp_path / role
        assert _role(root, role, *extra).returncode == 0
        for unit in (root / "etc/systemd/system").glob("*.service"):
            assert _complaints(analyze, unit) == [], unit.name
    broken = tmp_path / "broken.service"  # the check can fail: a typo is reported
    text = (tmp_path / "search/etc/systemd/system/nimbus-search.service").read_text()
    broken.write_text(text.replace("NoNewPrivileges=yes", "NoNewPrivilege=yes"))
    assert any("Unknown key 'NoNewPrivilege'" in line for line in _complaints(analyze, broken))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--role", "worker"], "missing --release-dir"),
        (["--role", "crawler", *COMMON], "--role must be worker, committer, search or indexer"),
        (["--role", "search", *COMMON, "--workers", "0"], "--workers must be a positive number"),
        (["--role", "worker", *COMMON, "--metrics-port", "http"], "--metrics-port must be a port number"),
        (["--role", "worker", *COMMON, "--seeds", SEEDS], "--seeds is for the committer role"),
        (["--role", "worker", *COMMON, "--admin-token-secret", ADMIN_SECRET], "are for the search role"),
        (["--role", "committer", *COMMON, "--proxy-cidrs", LB_CIDRS], "are for the search role"),
        (["--role", "search", *COMMON, "--proxy-cidrs", "10.0.0.0/8 *"], "--proxy-cidrs must be CIDRs"),
        (["--role", "indexer", *COMMON, "--env", "NIMBUS_X=$(reboot)"], "--env must be KEY=VALUE"),
        (["--role", "indexer", *COMMON, "--env", "lower=1"], "--env must be KEY=VALUE"),
        (["--role", "worker", *COMMON, "--release-url", "s3://b/other/x/"], "--release-url must be"),
        (["--role", "worker", *COMMON, "--rds-ca-sha256", "abc"], "--rds-ca-sha256 must be 64 hex"),
        (["--role", "search", *COMMON, "--bogus"], "unknown argument --bogus"),
    ],
)
def test_bad_arguments_stop_before_anything_is_written(tmp_path: Path, args: list[str], message: str) -> None:
    done = _bootstrap(tmp_path, *args)
    assert done.returncode == 2 and message in done.stderr
    assert not any(tmp_path.iterdir())
