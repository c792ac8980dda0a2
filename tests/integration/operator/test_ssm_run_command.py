"""`nimbus migrate --remote`: the Run Command request, the waiting and the outcome, on answers
AWS gives (botocore's Stubber: moto reports every command as an instant success with no
output), and the instance lookup on moto."""

from __future__ import annotations

import argparse

import boto3
import pytest
from botocore.stub import Stubber

from services.cli import ssm
from services.cli.parsing import UsageError
from services.cli.remote import RemoteError
from tests.integration.operator.conftest import make_stack

INSTANCE = "i-0123456789abcdef0"
COMMAND = "c0ffee00-1111-2222-3333-444455556666"


def _invocation(status: str, code: int = -1, out: str = "", err: str = "", details: str = "") -> dict:
    return {
        "CommandId": COMMAND,
        "InstanceId": INSTANCE,
        "Status": status,
        "StatusDetails": details or status,
        "ResponseCode": code,
        "StandardOutputContent": out,
        "StandardErrorContent": err,
    }


def test_the_command_is_sent_to_the_instance_and_followed_to_its_end(capsys) -> None:
    client = boto3.client("ssm", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    stub = Stubber(client)
    script = (
        "systemd-run --quiet --wait --pipe --collect --uid=nimbus "
        "--property=EnvironmentFile=/etc/nimbus/nimbus.env /opt/nimbus/venv/bin/nimbus migrate --to 0005"
    )
    stub.add_response(
        "send_command",
        {"Command": {"CommandId": COMMAND}},
        {
            "InstanceIds": [INSTANCE],
            "DocumentName": "AWS-RunShellScript",
            "Comment": "nimbus migrate --to 0005",
            "TimeoutSeconds": 120,
            "Parameters": {"commands": [script], "executionTimeout": ["3600"]},
        },
    )
    follow = {"CommandId": COMMAND, "InstanceId": INSTANCE}
    # Right after SendCommand the invocation may not exist yet; then it runs; then it fails.
    stub.add_client_error("get_command_invocation", "InvocationDoesNotExist", expected_params=follow)
    stub.add_response("get_command_invocation", _invocation("InProgress"), follow)
    stub.add_response(
        "get_command_invocation",
        _invocation("Failed", 3, "migrating 0006 -> 0005\n", "the lock is held by another migration\n"),
        follow,
    )
    slept: list[float] = []
    with stub:
        outcome = ssm.run_command(
            client,
            INSTANCE,
            ["migrate", "--to", "0005"],
            comment="nimbus migrate --to 0005",
            sleep=slept.append,
        )
    stub.assert_no_pending_responses()
    assert slept == [ssm.POLL_SECONDS, ssm.POLL_SECONDS]
    assert ssm.report(outcome, INSTANCE) == 3  # its exit status, its output on ours
    printed = capsys.readouterr()
    assert (
        printed.out == "migrating 0006 -> 0005\n" and printed.err == "the lock is held by another migration\n"
    )


@pytest.mark.parametrize(
    ("status", "details"), [("TimedOut", "DeliveryTimedOut"), ("Failed", "Undeliverable")]
)
def test_a_command_that_never_ran_is_an_error_naming_why(status: str, details: str) -> None:
    with pytest.raises(RemoteError, match=rf"ended {status} \({details}\)"):
        ssm.report(ssm.Outcome(status, details, -1, "", ""), INSTANCE)


def test_an_instance_ssm_cannot_reach_is_named_with_the_likely_cause() -> None:
    client = boto3.client("ssm", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    with Stubber(client) as stub:
        stub.add_client_error("send_command", "InvalidInstanceId")
        with pytest.raises(RemoteError, match="AmazonSSMManagedInstanceCore"):
            ssm.run_command(client, INSTANCE, ["migrate"], comment="x", sleep=lambda _s: None)


def test_the_healthy_instance_of_the_role_is_chosen(moto_server: str) -> None:
    stack = make_stack(moto_server, {"search": 2, "indexer": 1})
    ec2 = boto3.client("ec2", endpoint_url=moto_server, region_name="us-east-1")
    autoscaling = boto3.client("autoscaling", endpoint_url=moto_server, region_name="us-east-1")
    sick, well = stack.instances["search"]
    autoscaling.set_instance_health(InstanceId=sick, HealthStatus="Unhealthy")
    assert ssm.healthy_instance(ec2, autoscaling, stack.name, "search").id == well
    assert ssm.healthy_instance(ec2, autoscaling, stack.name, "indexer").id == stack.instances["indexer"][0]
    autoscaling.set_instance_health(InstanceId=well, HealthStatus="Unhealthy")
    with pytest.raises(RemoteError, match="no healthy search instance"):
        ssm.healthy_instance(ec2, autoscaling, stack.name, "search")
    with pytest.raises(
        RemoteError, match="no running instance tagged nimbus:stack=other, nimbus:role=indexer"
    ):
        ssm.healthy_instance(ec2, autoscaling, "other", "indexer")


def test_the_commands_own_options_are_passed_on_and_the_database_url_refused() -> None:
    parser = argparse.ArgumentParser(prog="nimbus migrate")
    parser.add_argument("--database-url")
    parser.add_argument("--to")
    parser.add_argument("--dry-run", action="store_true")
    ssm.ssm_options(parser)
    args = parser.parse_args(["--to", "0005", "--dry-run", "--remote", "--stack", "prod"])
    assert ssm.passed_on(parser, args) == ["--to", "0005", "--dry-run"]
    with pytest.raises(UsageError, match="migrates its own database"):
        ssm.passed_on(parser, parser.parse_args(["--remote", "--database-url", "mysql://x"]))
