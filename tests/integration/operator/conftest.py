"""The operator's laptop and the stack it steers, on this machine.

- ``site``: the real search app with /admin (``services.admin.app``), served by uvicorn on a
  loopback port, on a private MariaDB database: the stack's search instance.
- ``laptop``: the environment of a process with no route to that database
  (``NIMBUS_DATABASE_URL`` names a loopback port nothing listens on) and the admin token;
  ``nimbus(...)`` runs the real entry point (``python -m services.cli``) in it.
- ``stack``: a stack's instances on the moto server, tagged as CloudFormation and their
  Auto Scaling groups tag them (``nimbus:stack``, ``nimbus:role``, as infra/nimbus.yaml does).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from sqlalchemy.orm import Session, sessionmaker

from services.cli import ssm
from services.config import Settings
from tests.e2e.serving import serving

REPO = Path(__file__).resolve().parents[3]
TOKEN = "laptop-admin-token-0123456789"


@dataclass
class Site:
    url: str  # http://127.0.0.1:PORT
    sessions: sessionmaker[Session]


@pytest.fixture
def site(mysql_url: str, tmp_path: Path) -> Iterator[Site]:
    from services.admin.app import create_app
    from services.storage.sql.engines import make_engine, session_factory
    from services.storage.sql.schema import init_db

    settings = Settings.of(
        database_url=mysql_url,
        blob_url=f"file://{tmp_path / 'blobs'}",
        var_dir=tmp_path / "var",
        admin_token=TOKEN,
    )
    engine = make_engine(mysql_url)
    init_db(engine)
    with serving(create_app(settings, recheck_seconds=0)) as url:
        yield Site(url, session_factory(engine))
    engine.dispose()


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Laptop:
    env: dict[str, str]
    home: Path
    calls: list[list[str]] = field(default_factory=list)

    def nimbus(self, *argv: str, **env: str) -> subprocess.CompletedProcess[str]:
        """``nimbus ARGV`` as a separate process, the real entry point, in this environment."""
        self.calls.append(list(argv))
        return subprocess.run(
            [sys.executable, "-m", "services.cli", *argv],
            env={**self.env, **env},
            cwd=self.home,
            capture_output=True,
            text=True,
            timeout=120,
        )


@pytest.fixture
def laptop(tmp_path: Path) -> Laptop:
    kept = {k: v for k, v in os.environ.items() if not k.startswith(("NIMBUS_", "AWS_"))}
    home = tmp_path / "laptop"
    home.mkdir()
    env = {
        **kept,
        "HOME": str(home),
        "PYTHONPATH": str(REPO),
        # The stack's database as the laptop would name it, on a port where nothing answers.
        "NIMBUS_DATABASE_URL": f"mysql+pymysql://nimbus:secret@127.0.0.1:{closed_port()}/nimbus",
        "NIMBUS_ADMIN_TOKEN": TOKEN,
    }
    return Laptop(env, home)


@dataclass
class Stack:
    name: str
    endpoint: str  # the moto server
    instances: dict[str, list[str]]  # role -> instance ids, oldest first

    def aws_env(self) -> dict[str, str]:
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_REGION": "us-east-1",
            "NIMBUS_STACK_NAME": self.name,
        }


def make_stack(endpoint: str, roles: dict[str, int]) -> Stack:
    """One Auto Scaling group per role on moto, tagged as the stack's template tags them."""
    import boto3

    name = f"st{uuid.uuid4().hex[:8]}"
    ec2 = boto3.client("ec2", endpoint_url=endpoint, region_name="us-east-1")
    autoscaling = boto3.client("autoscaling", endpoint_url=endpoint, region_name="us-east-1")
    image = ec2.describe_images()["Images"][0]["ImageId"]
    instances = {}
    for role, count in roles.items():
        template = f"{name}-{role}-lt"
        ec2.create_launch_template(
            LaunchTemplateName=template, LaunchTemplateData={"ImageId": image, "InstanceType": "t3.small"}
        )
        group = f"{name}-{role}"
        autoscaling.create_auto_scaling_group(
            AutoScalingGroupName=group,
            LaunchTemplate={"LaunchTemplateName": template},
            MinSize=count,
            MaxSize=count,
            DesiredCapacity=count,
            AvailabilityZones=["us-east-1a"],
            Tags=[
                {"Key": "Name", "Value": f"{name}-{role}", "PropagateAtLaunch": True},
                {"Key": ssm.STACK_TAG, "Value": name, "PropagateAtLaunch": True},
                {"Key": ssm.ROLE_TAG, "Value": role, "PropagateAtLaunch": True},
            ],
        )
        found = autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[group])["AutoScalingGroups"]
        instances[role] = [i["InstanceId"] for i in found[0]["Instances"]]
    return Stack(name, endpoint, instances)
