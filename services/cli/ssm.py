"""Commands that must run inside the stack's network, sent through AWS Systems Manager.

The operator's laptop reaches the AWS APIs only; the database is private. A stack's
instances are found by the tags CloudFormation and their Auto Scaling group give them
(the stack's own tags: ``nimbus:stack`` = the stack, ``nimbus:role`` = the role), the healthy
ones first. ``nimbus migrate --remote`` runs ``nimbus migrate`` on the indexer instance with
Run Command (``AWS-RunShellScript``), waits for it, prints its output and exits with its
status. ``nimbus tunnel`` (``tunnel_command``) uses the same lookup for a search instance.

The command runs under ``systemd-run`` as the services do: user ``nimbus``, the environment
of ``/etc/nimbus/nimbus.env`` read by systemd itself (the units' own parser, not a shell's).
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from services.cli.parsing import UsageError
from services.cli.remote import RemoteCommand, RemoteError
from services.config import Settings

# The tags infra/nimbus.yaml puts on every instance of its groups (a template test checks them).
STACK_TAG = "nimbus:stack"
ROLE_TAG = "nimbus:role"

DEFAULT_STACK = "nimbus"  # `nimbus deploy`'s default
NIMBUS = "/opt/nimbus/venv/bin/nimbus"
ENV_FILE = "/etc/nimbus/nimbus.env"
SERVICE_USER = "nimbus"
DOCUMENT = "AWS-RunShellScript"
EXECUTION_TIMEOUT = 3600  # seconds the command may run on the instance (the document's default)
DELIVERY_TIMEOUT = 120  # seconds SSM may take to start it (TimeoutSeconds; 30 at least)
POLL_SECONDS = 2.0
# GetCommandInvocation keeps this much of each stream (AWS: 24,000 and 8,000 characters).
STDOUT_KEPT, STDERR_KEPT = 24_000, 8_000
RUNNING = {"Pending", "InProgress", "Delayed", "Cancelling"}


@dataclass(frozen=True)
class Instance:
    id: str
    healthy: bool
    state: str  # what the operator is told: "running, HEALTHY, InService"
    launched: float


def stack_name(args: argparse.Namespace, settings: Settings) -> str:
    return args.stack or settings.deploy.stack_name or DEFAULT_STACK


def boto_session(args: argparse.Namespace, settings: Settings) -> Any:
    """A boto3 session for the operator's credentials, or one line saying what to set."""
    from services.deploy.driver import Target, aws_session

    return aws_session(Target(region=args.region or settings.aws_region, profile=args.profile))


def find_instances(ec2: Any, autoscaling: Any, stack: str, role: str) -> list[Instance]:
    """The running instances of ``role`` in ``stack``, healthy ones first, then the oldest.

    Healthy is the Auto Scaling group's word (the load balancer's health check, for a group
    that uses it); an instance outside any group counts as healthy while it runs."""
    pages = ec2.get_paginator("describe_instances").paginate(
        Filters=[
            {"Name": f"tag:{STACK_TAG}", "Values": [stack]},
            {"Name": f"tag:{ROLE_TAG}", "Values": [role]},
            {"Name": "instance-state-name", "Values": ["running"]},
        ]
    )
    found = {
        i["InstanceId"]: i
        for page in pages
        for reservation in page["Reservations"]
        for i in reservation["Instances"]
    }
    if not found:
        return []
    ids = sorted(found)
    groups = {
        a["InstanceId"]: a
        for at in range(0, len(ids), 50)  # the call's limit
        for a in autoscaling.describe_auto_scaling_instances(InstanceIds=ids[at : at + 50])[
            "AutoScalingInstances"
        ]
    }
    instances = []
    for instance_id, described in found.items():
        group = groups.get(instance_id)
        health = str(group["HealthStatus"]).upper() if group else "HEALTHY"
        lifecycle = str(group["LifecycleState"]) if group else "no group"
        healthy = health == "HEALTHY" and lifecycle in ("InService", "no group")
        launched = described.get("LaunchTime")
        instances.append(
            Instance(
                instance_id,
                healthy,
                f"running, {health}, {lifecycle}",
                launched.timestamp() if hasattr(launched, "timestamp") else 0.0,
            )
        )
    return sorted(instances, key=lambda i: (not i.healthy, i.launched, i.id))


def healthy_instance(ec2: Any, autoscaling: Any, stack: str, role: str) -> Instance:
    instances = find_instances(ec2, autoscaling, stack, role)
    if not instances:
        raise RemoteError(
            f"no running instance tagged nimbus:stack={stack}, nimbus:role={role}: check --stack (or "
            "NIMBUS_STACK_NAME) and --region (or AWS_REGION)"
        )
    if not instances[0].healthy:
        states = "; ".join(f"{i.id}: {i.state}" for i in instances)
        raise RemoteError(f"no healthy {role} instance in stack {stack} ({states}): try again once one is")
    return instances[0]


def script(words: list[str]) -> str:
    """The shell line Run Command executes: ``nimbus WORDS`` as the services run."""
    return shlex.join(
        [
            "systemd-run",
            "--quiet",
            "--wait",  # its exit status is the command's
            "--pipe",  # its output is SSM's
            "--collect",
            f"--uid={SERVICE_USER}",
            f"--property=EnvironmentFile={ENV_FILE}",
            NIMBUS,
            *words,
        ]
    )


@dataclass(frozen=True)
class Outcome:
    status: str
    details: str
    code: int
    stdout: str
    stderr: str


def run_command(
    ssm: Any,
    instance_id: str,
    words: list[str],
    *,
    comment: str,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> Outcome:
    """Run ``nimbus WORDS`` on the instance and wait for its end."""
    from botocore.exceptions import ClientError

    try:
        sent = ssm.send_command(
            InstanceIds=[instance_id],
            DocumentName=DOCUMENT,
            Comment=comment[:100],
            TimeoutSeconds=DELIVERY_TIMEOUT,
            Parameters={"commands": [script(words)], "executionTimeout": [str(EXECUTION_TIMEOUT)]},
        )
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code", "")
        if code == "InvalidInstanceId":
            raise RemoteError(
                f"SSM cannot reach {instance_id}: its agent is not running or not registered (the "
                "instance role needs AmazonSSMManagedInstanceCore), or it is not in a running state"
            ) from exc
        raise RemoteError(f"SSM refused the command for {instance_id}: {exc}") from exc
    command_id = sent["Command"]["CommandId"]
    deadline = clock() + DELIVERY_TIMEOUT + EXECUTION_TIMEOUT + 60
    while True:
        try:
            answer = ssm.get_command_invocation(CommandId=command_id, InstanceId=instance_id)
        except ClientError as exc:  # right after SendCommand the invocation may not exist yet
            if exc.response.get("Error", {}).get("Code") != "InvocationDoesNotExist":
                raise RemoteError(f"cannot follow command {command_id} on {instance_id}: {exc}") from exc
            answer = {"Status": "Pending"}
        if answer["Status"] not in RUNNING:
            return Outcome(
                answer["Status"],
                str(answer.get("StatusDetails", "")),
                int(answer.get("ResponseCode", -1)),
                str(answer.get("StandardOutputContent", "")),
                str(answer.get("StandardErrorContent", "")),
            )
        if clock() > deadline:
            raise RemoteError(
                f"command {command_id} on {instance_id} still {answer['Status']} after "
                f"{DELIVERY_TIMEOUT + EXECUTION_TIMEOUT + 60} s; follow it with `aws ssm "
                f"get-command-invocation --command-id {command_id} --instance-id {instance_id}`"
            )
        sleep(POLL_SECONDS)


def report(outcome: Outcome, instance_id: str) -> int:
    """Print the command's output as if it ran here; its exit status, or 1 when it never ran."""
    if outcome.stdout:
        print(outcome.stdout, end="" if outcome.stdout.endswith("\n") else "\n")
    if outcome.stderr:
        print(outcome.stderr, end="" if outcome.stderr.endswith("\n") else "\n", file=sys.stderr)
    if len(outcome.stdout) >= STDOUT_KEPT or len(outcome.stderr) >= STDERR_KEPT:
        print("(SSM keeps only the start of long output)", file=sys.stderr)
    sys.stdout.flush()
    if outcome.status == "Success":
        return 0
    if outcome.status == "Failed" and outcome.code > 0:
        return outcome.code
    raise RemoteError(
        f"the command on {instance_id} ended {outcome.status} ({outcome.details or 'no details'})"
    )


# ------------------------------------------------------------------ nimbus migrate --remote
_OWN = {"remote", "stack", "region", "profile", "help"}


def passed_on(parser: argparse.ArgumentParser, args: argparse.Namespace) -> list[str]:
    """The command's own options as given, to run the same command on the instance."""
    words: list[str] = []
    for action in parser._actions:
        if action.dest in _OWN or action.dest in ("handler", "parser") or not action.option_strings:
            continue
        value = getattr(args, action.dest, action.default)
        if value == action.default or value is None:
            continue
        if action.dest == "database_url":
            raise UsageError("--database-url and --remote: the instance migrates its own database")
        if isinstance(action, argparse._StoreTrueAction):
            words.append(action.option_strings[-1])
        elif isinstance(action, argparse._StoreAction) and action.nargs is None:
            words += [action.option_strings[-1], str(value)]
        else:
            raise UsageError(f"{action.option_strings[-1]} cannot be passed on with --remote")
    return words


def ssm_options(parser: argparse.ArgumentParser) -> None:
    remote = parser.add_argument_group("from a machine outside the stack's network")
    remote.add_argument(
        "--remote",
        action="store_true",
        help="run it on the stack's indexer instance through SSM Run Command and print its output",
    )
    remote.add_argument("--stack", help=f"the stack (default: NIMBUS_STACK_NAME, else {DEFAULT_STACK})")
    remote.add_argument("--region", help="AWS region (default: AWS_REGION or the profile's)")
    remote.add_argument("--profile", help="AWS profile (default: AWS_PROFILE or the default chain)")


def migrate(args: argparse.Namespace, settings: Settings) -> int:
    """``nimbus migrate --remote``: on the indexer, which reaches the database and holds the
    migration user's secret."""
    words = ["migrate", *passed_on(args.parser, args)]
    session = boto_session(args, settings)
    endpoint = settings.aws_endpoint_url
    stack = stack_name(args, settings)
    instance = healthy_instance(
        session.client("ec2", endpoint_url=endpoint),
        session.client("autoscaling", endpoint_url=endpoint),
        stack,
        "indexer",
    )
    print(
        f"running `nimbus {shlex.join(words)}` on {instance.id} (indexer of {stack}) through SSM",
        file=sys.stderr,
    )
    outcome = run_command(
        session.client("ssm", endpoint_url=endpoint),
        instance.id,
        words,
        comment=f"nimbus {' '.join(words)} (from {os.environ.get('USER', 'an operator')}, nimbus --remote)",
    )
    return report(outcome, instance.id)


COMMANDS = {
    "nimbus migrate": RemoteCommand(
        ssm_options,
        lambda args, _settings: bool(args.remote),
        migrate,
        "from a machine outside the stack's network, run `nimbus migrate --remote [--stack NAME]`: "
        "it runs on the stack's indexer through SSM",
    ),
}
