"""The boot rehearsal: a search instance boots on this machine from the template's real user data
and the real bootstrap, installs the release from its wheelhouse with no network, starts its
unit's real command lines, serves, and signals success (tests/integration/release/rehearsal).

The stack around it is a moto server (S3 with the release and a published index, RDS's
managed secret, the admin token's secret, the instance metadata service) and a private
MariaDB, both on this machine's end of the instance's veth pair. The boot time, user data
start to ``/healthz`` answering, is printed beside the group's health-check grace period.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import boto3
import httpx
import pytest
from sqlalchemy.engine import URL

from services.aws_database import parse_secret
from services.config import Settings
from services.deploy import template
from services.release import REQUIREMENTS, Release
from tests.integration.release.conftest import MEASURED, WORD, python311, stop, storm_site, stylesheets
from tests.integration.release.rehearsal.instance import Instance, instance_network
from tests.integration.release.rehearsal.mariadb import mariadb_server
from tests.integration.release.rehearsal.shims import calls, install_shims
from tests.integration.release.rehearsal.tls import RehearsalCA
from tests.integration.release.rehearsal.userdata import launch_template_user_data, render, under_root
from tests.polling import wait_for

REGION, STACK, ROLE, GROUP = "us-east-1", "nimbus-rehearsal", "search", "SearchGroup"
ARTIFACTS, DATA = f"{STACK}-artifacts", f"{STACK}-data"
UNIT = f"nimbus-{ROLE}.service"
ADMIN_TOKEN = "Rehearsal-Admin-Token-0123456789"
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


@dataclass
class Boot:
    instance: Instance
    root: Path
    log: Path  # the stand-ins' records
    url: str  # the instance's service, as the load balancer reaches it
    seconds: float  # user data start to /healthz answering 200
    service_seconds: float  # the unit's start to /healthz answering 200
    returncode: int  # the user data's
    output: str  # the user data's (and so the bootstrap's) output


@pytest.fixture(scope="module")
def boot(release: Release, test_ca: RehearsalCA, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Boot]:
    tmp = tmp_path_factory.mktemp("rehearsal")
    root, log, bin_dir = tmp / "root", tmp / "calls", tmp / "bin"
    (root / "root").mkdir(parents=True)  # the instance's own folders the user data writes into
    with (
        instance_network() as instance,
        MotoOnTheInstanceNetwork(instance.host_ip) as moto,
        pytest.MonkeyPatch.context() as env,
    ):
        for key, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}.items():
            env.setenv(key, value)  # this test's own calls; the instance's come from the metadata service
        env.setenv("AWS_DEFAULT_REGION", REGION)
        stack = _stack(moto, release, test_ca)
        secret = json.loads(
            _client("secretsmanager", moto).get_secret_value(SecretId=stack["secret"])["SecretString"]
        )
        tls = (test_ca.certificate, *test_ca.issue(instance.host_ip))
        with mariadb_server(
            tmp / "mariadb", instance.host_ip, "nimbus", secret["username"], secret["password"], tls
        ) as port:
            login = parse_secret(json.dumps(secret))
            database = URL.create(
                "mysql+pymysql",
                login.username,
                login.password,
                instance.host_ip,
                port,
                "nimbus",
                query={"ssl_ca": str(test_ca.certificate)},
            ).render_as_string(hide_password=False)
            _publish_index(tmp, database, f"s3://{stack['DataBucket']}/nimbus", moto)
            text, own = launch_template_user_data("SearchLaunchTemplate")
            values = {**stack["values"], "DbHost": instance.host_ip, "DbPort": str(port)}
            user_data = tmp / "user-data.sh"
            user_data.write_text(render(under_root(text, root), own, values))

            # What every process of the instance has that this machine lacks: AWS's endpoints and
            # the instance metadata service (the role's credentials), both moto here.
            aws = {"AWS_ENDPOINT_URL": moto, "AWS_EC2_METADATA_SERVICE_ENDPOINT": moto + "/"}
            install_shims(
                bin_dir, root, log, {"start": [UNIT], "path": f"{bin_dir}:{SYSTEM_PATH}", "env": aws}
            )
            python = Path(python311()).resolve().parent  # the python3.11 dnf would install
            boot_env = {
                "PATH": f"{bin_dir}:{python}:{SYSTEM_PATH}",
                "HOME": str(root / "root"),
                "LANG": "C.UTF-8",
                "PIP_NO_INDEX": "1",  # and no route out of the instance's network either
                "PIP_CONFIG_FILE": "/dev/null",  # this machine's pip.conf names local wheel folders
                **aws,
            }
            output = tmp / "user-data.log"
            started = time.monotonic()
            process = subprocess.Popen(
                instance.run("bash", str(user_data)),
                cwd=root,
                env=boot_env,
                stdout=output.open("wb"),
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            url = f"http://{instance.ip}:8000"
            try:
                with httpx.Client(base_url=url, timeout=5) as http:
                    try:
                        wait_for(
                            lambda: process.poll() not in (None, 0) or _healthy(http),
                            timeout=300,
                            what=f"the instance to answer /healthz at {url}",
                        )
                    except AssertionError as exc:
                        pytest.fail(f"{exc}\n{_evidence(tmp)}")
                    seconds, healthy = time.monotonic() - started, time.time()
                    if process.poll() not in (None, 0):
                        pytest.fail(f"the user data failed\n{_evidence(tmp)}")
                    process.wait(timeout=300)  # the bootstrap may wait for health before it signals
                unit_started = (log / f"{UNIT}.pid").stat().st_mtime  # the stand-in starts it, then writes
                yield Boot(
                    instance,
                    root,
                    log,
                    url,
                    seconds,
                    healthy - unit_started,
                    process.returncode,
                    output.read_text(),
                )
            finally:
                stop(process)
                for pid_file in log.glob("*.pid"):  # the units the systemctl stand-in started
                    _stop_group(int(pid_file.read_text()))
                shutil.rmtree(root / "opt", ignore_errors=True)  # the venv and the release: 700 MB


def _evidence(tmp: Path) -> str:
    """The ends of the user data's output and of every unit's journal, for a failure message."""
    logs = [tmp / "user-data.log", *sorted((tmp / "root/var/log/journal").glob("*.log"))]
    return "\n".join(f"--- {log.name}:\n{log.read_text()[-3000:]}" for log in logs if log.is_file())


def test_the_instance_boots_offline_from_its_user_data_and_serves(boot: Boot, release: Release) -> None:
    grace = template.load()["Resources"][GROUP]["Properties"].get("HealthCheckGracePeriod")
    MEASURED.append(
        f"boot rehearsal: user data start to /healthz 200 in {boot.seconds:.1f} s, the unit's start "
        f"to /healthz 200 in {boot.service_seconds:.1f} s ({GROUP} HealthCheckGracePeriod: {grace} s)"
    )
    MEASURED.extend(f"boot rehearsal: {line}" for line in boot.output.splitlines() if "kernels ready" in line)
    assert boot.returncode == 0, boot.output[-4000:]
    assert f"nimbus-bootstrap: {ROLE} ready" in boot.output

    # The release went in from its own folder, with no index and no route out.
    copied = [c for c in calls(boot.log, "aws") if c[:2] == ["s3", "cp"]]
    assert any(f"s3://{ARTIFACTS}/{release.prefix}/" in c and "--recursive" in c for c in copied)
    routes = subprocess.run(["ip", "-n", boot.instance.namespace, "route"], capture_output=True, text=True)
    assert "default" not in routes.stdout
    venv = boot.root / "opt/nimbus/venv/bin/python"
    frozen = subprocess.run([str(venv), "-m", "pip", "freeze"], capture_output=True, text=True, check=True)
    pins = re.findall(r"^(\S+)==(\S+) --hash", (release.directory / REQUIREMENTS).read_text(), re.MULTILINE)
    assert _normalized(frozen.stdout) == {(name, version) for name, version in pins}

    # The unit's real command lines ran: the admin token fetched from its secret, then serve.
    assert any(c[:2] == ["enable", "--now"] and UNIT in c for c in calls(boot.log, "systemctl"))
    admin_env = boot.root / "run/nimbus-admin/admin.env"
    assert admin_env.read_text() == f"NIMBUS_ADMIN_TOKEN={ADMIN_TOKEN}\n"

    with httpx.Client(base_url=boot.url, timeout=10) as http:
        health = http.get("/healthz").json()
        assert health["status"] == "ok" and health["num_docs"] >= 3, health  # the published index
        page = http.get("/", params={"q": WORD})
        assert page.status_code == 200 and "Storm page" in page.text
        (css,) = stylesheets(page.text)
        style = http.get(css)
        assert style.status_code == 200 and style.headers["content-type"].startswith("text/css")


def test_the_bootstrap_compiled_the_kernels_so_the_service_compiled_none(boot: Boot) -> None:
    """After installing the release, the bootstrap ran its ``nimbus warm-kernels`` as the
    service's user with the unit's NUMBA_CACHE_DIR; the service then loaded every kernel from
    that cache: numba wrote none of its files after the unit started (it writes on a compile)."""
    cache = boot.root / "var/lib/nimbus/numba-cache"
    nimbus = boot.root / "opt/nimbus/venv/bin/nimbus"
    assert calls(boot.log, "runuser") == [
        ["-u", "nimbus", "--", "env", f"NUMBA_CACHE_DIR={cache}", str(nimbus), "warm-kernels"]
    ]
    files = {path: path.stat().st_mtime for path in cache.rglob("*.nb[ic]")}
    assert any(path.suffix == ".nbi" for path in files), sorted(cache.rglob("*"))
    unit_started = (boot.log / f"{UNIT}.pid").stat().st_mtime
    assert [path.name for path, mtime in files.items() if mtime >= unit_started] == []


def test_the_instance_signals_success_to_its_group(boot: Boot) -> None:
    """cfn-signal after the service is healthy (the stack's creation policy and rolling updates
    wait for it). It is the infra part's to add, in the user data or the bootstrap: called as
    ``cfn-signal`` or /opt/aws/bin/cfn-signal (user data) or "$ROOT/opt/aws/bin/cfn-signal"
    (bootstrap), all of which reach the stand-in here."""
    signals = calls(boot.log, "cfn-signal")
    assert signals, "no cfn-signal was sent: the instance never tells its group it is healthy"
    success = [
        s
        for s in signals
        if _option(s, "-e", "--exit-code") == "0" or _option(s, "-s", "--success") == "true"
    ]
    assert success, signals
    assert _option(success[-1], "--stack") == STACK and _option(success[-1], "-r", "--resource") == GROUP


def _option(args: list[str], *names: str) -> str | None:
    for i, arg in enumerate(args):
        for name in names:
            if arg == name and i + 1 < len(args):
                return args[i + 1]
            if arg.startswith(name + "="):
                return arg.split("=", 1)[1]
    return None


def _normalized(freeze: str) -> set[tuple[str, str]]:
    return {
        (name.lower().replace("_", "-").replace(".", "-"), version)
        for name, version in re.findall(r"^(\S+)==(\S+)$", freeze, re.MULTILINE)
    }


def _healthy(http: httpx.Client) -> bool:
    try:
        return http.get("/healthz").status_code == 200
    except httpx.TransportError:
        return False


def _stop_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGTERM)


def _client(service: str, moto: str):
    return boto3.client(service, endpoint_url=moto, region_name=REGION)


def _stack(moto: str, release: Release, test_ca: RehearsalCA) -> dict:
    """What the stack would have made before the instance boots: the buckets (the release
    uploaded as `nimbus deploy` does), the database with its managed secret, the admin
    token's secret; and the template's values for the user data."""
    s3 = _client("s3", moto)
    artifacts, data = ARTIFACTS, DATA
    for bucket in (artifacts, data):
        s3.create_bucket(Bucket=bucket)
    for path, key in release.objects():
        s3.upload_file(str(path), artifacts, key)
    rds = _client("rds", moto)
    database = f"{STACK}-database"
    rds.create_db_instance(
        DBInstanceIdentifier=database,
        DBInstanceClass="db.t4g.micro",
        Engine="mysql",
        MasterUsername="nimbus",
        ManageMasterUserPassword=True,
        AllocatedStorage=20,
        DBName="nimbus",
    )
    master = rds.describe_db_instances(DBInstanceIdentifier=database)["DBInstances"][0]["MasterUserSecret"]
    admin = _client("secretsmanager", moto).create_secret(
        Name=f"{STACK}-admin-token", SecretString=ADMIN_TOKEN
    )
    values = {
        "AWS::Region": REGION,
        "AWS::StackName": STACK,
        "ArtifactsBucket": artifacts,
        "DataBucket": data,
        "BootstrapKey": release.bootstrap_key,
        "ReleaseKey": release.wheel_key,
        "ReleasePrefix": release.prefix,
        "Database": database,
        "SearchLogGroup": f"/nimbus/{STACK}/search",
        "BootLogGroup": f"/nimbus/{STACK}/boot",
        # The search role's own secret: here the master's, whose user the rehearsal's database has.
        "SearchDbSecret": master["SecretArn"],
        "RdsCaBundleSha256": hashlib.sha256(test_ca.certificate.read_bytes()).hexdigest(),
        "SearchWorkers": "2",
        "AdminTokenSecret": admin["ARN"],
    }
    return {"secret": master["SecretArn"], "DataBucket": data, "values": values}


def _publish_index(tmp: Path, database: str, blobs: str, moto: str) -> None:
    """A small index published into the stack's database and bucket, as the indexer would."""
    from services.crawler.crawl import run_crawl
    from services.indexing.build import build_index

    settings = Settings.of(
        database_url=database,
        blob_url=blobs,
        aws_endpoint_url=moto,
        aws_region=REGION,
        mr_runner="inline",
        var_dir=tmp / "indexer",
        crawl_delay=0.0,
        allowed_hosts="127.0.0.1",
        soft404_probe=False,
    )
    with storm_site(tmp / "site") as home:
        run_crawl(settings, [home], max_pages=10, progress=False)
    build_index(settings, progress=False)


class MotoOnTheInstanceNetwork:
    """A moto server on this machine's end of the instance's veth pair."""

    def __init__(self, host: str) -> None:
        from moto.server import ThreadedMotoServer

        self.server = ThreadedMotoServer(ip_address=host, port=0, verbose=False)

    def __enter__(self) -> str:
        self.server.start()
        host, port = self.server.get_host_and_port()
        return f"http://{host}:{port}"

    def __exit__(self, *exc: object) -> None:
        self.server.stop()
