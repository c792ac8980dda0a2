"""Pure stack logic: parameters in, settings out, and what CloudFormation's answers mean.

Kept apart from the boto3 calls so each rule is tested on recorded answers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from services.deploy.errors import TemplateError

# The statuses a stack rests in; anything else is still moving.
SETTLED_OK = {"CREATE_COMPLETE", "UPDATE_COMPLETE", "IMPORT_COMPLETE"}
SETTLED_FAILED = {
    "CREATE_FAILED",
    "ROLLBACK_COMPLETE",
    "ROLLBACK_FAILED",
    "UPDATE_ROLLBACK_COMPLETE",
    "UPDATE_ROLLBACK_FAILED",
    "UPDATE_FAILED",
    "DELETE_FAILED",
}
# CloudFormation says "no changes" with a FAILED change set and one of these reasons.
_NO_CHANGE_REASONS = ("didn't contain changes", "no updates are to be performed")


def parse_overrides(pairs: Iterable[str], known: set[str]) -> dict[str, str]:
    """``Key=Value`` strings into parameters, refusing names the template does not have."""
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise TemplateError(f"--param {pair!r}: give Key=Value")
        if key not in known:
            raise TemplateError(
                f"--param {key}: the template has no such parameter ({', '.join(sorted(known))})"
            )
        out[key] = value
    return out


# Parameters of earlier templates that a stack may still hold: renamed ones, and values
# that a parameter no longer accepts, with what they became.
RENAMED = {"SearchCount": "SearchMinCount"}
RENAMED_VALUES = {("NatMode", "gateway"): "single"}


def carried_over(
    previous: Mapping[str, str],
    declared: Mapping[str, Mapping[str, Any]],
    resolved: set[str],
    say: Callable[[str], None] = print,
) -> dict[str, str]:
    """The deployed stack's parameter values an update keeps: those the template still
    declares, that differ from its default and that are not resolved at each deploy (an
    SSM-typed AMI), under their current names and values."""
    kept: dict[str, str] = {}
    for key, value in previous.items():
        name = RENAMED.get(key, key)
        value = RENAMED_VALUES.get((name, value), value)
        if name not in declared or name in resolved or value == str(declared[name].get("Default", "")):
            continue
        if (name, value) != (key, previous[key]):
            say(f"deploy: parameter {key}={previous[key]} is now {name}={value}")
        kept[name] = value
    return kept


def cfn_parameters(values: Mapping[str, str]) -> list[dict[str, str]]:
    return [{"ParameterKey": k, "ParameterValue": v} for k, v in sorted(values.items())]


def is_no_change(status: str, reason: str) -> bool:
    """Whether a failed change set failed only because the stack already matches."""
    return status == "FAILED" and any(r in reason.lower() for r in _NO_CHANGE_REASONS)


@dataclass(frozen=True)
class Failure:
    resource: str
    resource_type: str
    status: str
    reason: str

    def __str__(self) -> str:
        return f"{self.resource} ({self.resource_type}) {self.status}: {self.reason}"


def failures(events: Iterable[Mapping[str, Any]], stack_name: str) -> list[Failure]:
    """The resources that failed, oldest first, with CloudFormation's reason for each.

    The stack's own ROLLBACK events and "Resource creation cancelled" echoes
    are left out: they follow from the first real failure and say nothing new.
    """
    found: list[Failure] = []
    for event in events:
        status = str(event.get("ResourceStatus", ""))
        if not status.endswith("FAILED"):
            continue
        reason = str(event.get("ResourceStatusReason") or "no reason given")
        if event.get("LogicalResourceId") == stack_name or "cancelled" in reason.lower():
            continue
        found.append(
            Failure(
                str(event.get("LogicalResourceId", "?")), str(event.get("ResourceType", "?")), status, reason
            )
        )
    return found


def outputs(stack: Mapping[str, Any]) -> dict[str, str]:
    return {o["OutputKey"]: str(o["OutputValue"]) for o in stack.get("Outputs", [])}


def settings_env(out: Mapping[str, str], *, prefix: str = "nimbus") -> dict[str, str]:
    """The ``NIMBUS_*`` settings a process needs to run against the stack from outside it
    (the indexer's own environment, written by its bootstrap, holds the same EMR settings).

    No password among them: a process reads its database user's secret when it connects.
    The EMR security groups are passed to every cluster so that EMR makes none of its own
    (they would outlive the stack and keep its VPC from being deleted).
    """
    env = {
        "NIMBUS_BLOB_URL": f"s3://{out['BucketName']}/{prefix}",
        "AWS_REGION": out["Region"],
        "NIMBUS_DATABASE_INSTANCE": out["DatabaseInstance"],
        "NIMBUS_DATABASE_HOST": out["DatabaseEndpoint"],
        "NIMBUS_DATABASE_PORT": out["DatabasePort"],
        "NIMBUS_DATABASE_NAME": "nimbus",
        "NIMBUS_EMR_SERVICE_ROLE": out["EmrServiceRole"],
        "NIMBUS_EMR_INSTANCE_PROFILE": out["EmrInstanceProfile"],
        "NIMBUS_EMR_SUBNET": out["EmrSubnetId"],
        "NIMBUS_EMR_MASTER_SG": out.get("EmrMasterSecurityGroup", ""),
        "NIMBUS_EMR_SLAVE_SG": out.get("EmrSlaveSecurityGroup", ""),
        "NIMBUS_EMR_SERVICE_SG": out.get("EmrServiceAccessSecurityGroup", ""),
        "NIMBUS_MR_RUNNER": "emr",
    }
    return env
