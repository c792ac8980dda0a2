"""``nimbus deploy`` and ``nimbus destroy``: the stack through change sets, with progress.

The same code runs against AWS and, with ``endpoint_url``, against moto in the
tests. Waiting is done by polling with an injected ``sleep`` and ``clock``, so
tests never wait on the wall clock. What destroy does around DeleteStack is in
``teardown``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from services.deploy import stack as rules
from services.deploy import template
from services.deploy.bundle import MANIFEST, ReleaseBundle
from services.deploy.errors import CredentialsError, DeployError, StackFailedError, TemplateError
from services.deploy.teardown import StackParts, Teardown

# AUTO_EXPAND: the template's Secrets Manager transform (hosted rotation) is a macro.
CAPABILITIES = ["CAPABILITY_IAM", "CAPABILITY_NAMED_IAM", "CAPABILITY_AUTO_EXPAND"]


@dataclass(frozen=True)
class Target:
    stack_name: str = "nimbus"
    region: str | None = None
    profile: str | None = None
    endpoint_url: str | None = None  # moto in tests; unset for AWS


@dataclass
class DeployResult:
    changed: bool
    outputs: dict[str, str] = field(default_factory=dict)


def aws_session(target: Target) -> Any:
    """A boto3 session, or one clear line saying what to set."""
    import boto3
    from botocore.exceptions import ProfileNotFound

    try:
        session = boto3.Session(profile_name=target.profile, region_name=target.region)
    except ProfileNotFound as exc:
        raise CredentialsError(f"{exc}: set AWS_PROFILE to a profile in ~/.aws/config") from exc
    if session.get_credentials() is None:
        raise CredentialsError(
            "no AWS credentials: set AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, "
            "or run where an instance role provides them"
        )
    if not session.region_name:
        raise CredentialsError("no AWS region: set AWS_REGION (or AWS_DEFAULT_REGION), or pass --region")
    return session


class Deployer:
    def __init__(
        self,
        target: Target,
        *,
        say: Callable[[str], None] = print,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        poll_seconds: float = 5.0,
        timeout_seconds: float = 3 * 3600,
        session: Any = None,  # a boto3 session (tests); default: the standard chain
    ) -> None:
        self.target = target
        self.say, self.sleep, self.clock = say, sleep, clock
        self.poll_seconds, self.timeout_seconds = poll_seconds, timeout_seconds
        session = session or aws_session(target)
        self.region: str = session.region_name
        self.cfn = session.client("cloudformation", endpoint_url=target.endpoint_url)
        self.s3 = session.client("s3", endpoint_url=target.endpoint_url)
        self.sts = session.client("sts", endpoint_url=target.endpoint_url)
        self.rds = session.client("rds", endpoint_url=target.endpoint_url)
        self.ec2 = session.client("ec2", endpoint_url=target.endpoint_url)
        self.emr = session.client("emr", endpoint_url=target.endpoint_url)

    # ------------------------------------------------------------ deploy
    def deploy(
        self,
        release: ReleaseBundle,
        overrides: Mapping[str, str] | None = None,
        template_path: Path | None = None,
    ) -> DeployResult:
        path = template_path or template.TEMPLATE
        findings = template.lint(path)
        if findings:
            raise TemplateError(f"{path.name} fails cfn-lint:\n  " + "\n  ".join(findings))
        self.say(f"deploy: {path.name} passes cfn-lint")
        body = template.body(path)
        declared = template.load(path).get("Parameters", {})
        known = set(declared)
        # An SSM-typed parameter (the AMI) is named by its path and resolved at each deploy;
        # the stack reports the resolved value, which must not be sent back as a path.
        resolved = {k for k, v in declared.items() if str(v.get("Type", "")).startswith("AWS::SSM::")}
        bucket = self.artifacts_bucket()
        self._upload(bucket, release)
        values = {"ArtifactsBucket": bucket, "ReleasePrefix": release.prefix, **dict(overrides or {})}
        unknown = set(values) - known
        if unknown:
            raise TemplateError(f"the template has no parameters {sorted(unknown)}")
        current = self._describe()
        if current is not None and self._unchanged(current, body, values):
            self.say(f"deploy: stack {self.target.stack_name} is up to date: no changes")
            return DeployResult(False, self._with_secret(rules.outputs(current)))
        change_type = (
            "CREATE" if current is None or current["StackStatus"] == "REVIEW_IN_PROGRESS" else "UPDATE"
        )
        if current is not None and current["StackStatus"] in rules.SETTLED_FAILED - {
            "UPDATE_ROLLBACK_COMPLETE"
        }:
            raise DeployError(
                f"stack {self.target.stack_name} is {current['StackStatus']}: run `nimbus destroy` "
                "(data is kept) and deploy again"
            )
        if current is not None:  # parameters not named again keep the values they have
            previous = {p["ParameterKey"]: p["ParameterValue"] for p in current.get("Parameters", [])}
            values = {**rules.carried_over(previous, declared, resolved, say=self.say), **values}
        parameters = rules.cfn_parameters(values)
        seen = {e["EventId"] for e in self._events()}
        if change_type == "CREATE":
            # A new stack is made with CreateStack: nothing exists to review yet, and a stack
            # made from a CREATE change set is left half-built by emulators (moto 5.2).
            self.say(f"deploy: create of stack {self.target.stack_name} ({release.prefix})")
            self.cfn.create_stack(
                StackName=self.target.stack_name,
                TemplateBody=body,
                Parameters=parameters,
                Capabilities=CAPABILITIES,
                Tags=[{"Key": "nimbus:release", "Value": release.prefix}],
                OnFailure="ROLLBACK",
            )
            return self._finish(seen)
        name = f"nimbus-{int(time.time())}"
        self.cfn.create_change_set(
            StackName=self.target.stack_name,
            ChangeSetName=name,
            ChangeSetType=change_type,
            TemplateBody=body,
            Parameters=parameters,
            Capabilities=CAPABILITIES,
            Tags=[{"Key": "nimbus:release", "Value": release.prefix}],
        )
        if not self._change_set_ready(name):
            self.say(f"deploy: stack {self.target.stack_name} is up to date: no changes")
            return DeployResult(False, rules.outputs(self._describe() or {}))
        self.say(f"deploy: update of stack {self.target.stack_name} ({release.prefix}), change set {name}")
        self.cfn.execute_change_set(StackName=self.target.stack_name, ChangeSetName=name)
        return self._finish(seen)

    def _finish(self, seen: set[str]) -> DeployResult:
        final = self._wait(seen, lambda status: status.endswith("_COMPLETE") and "ROLLBACK" not in status)
        out = self._with_secret(rules.outputs(final))
        self.say(f"deploy: {self.target.stack_name} is {final['StackStatus']}")
        if "SiteUrl" in out:
            self.say(f"deploy: the site is at {out['SiteUrl']}")
        return DeployResult(True, out)

    def artifacts_bucket(self) -> str:
        """The account's bucket for releases, made once: encrypted, private, versioned."""
        account = self.sts.get_caller_identity()["Account"]
        name = f"{self.target.stack_name}-artifacts-{account}-{self.region}".lower()[:63]
        try:
            self.s3.head_bucket(Bucket=name)
            return name
        except self.s3.exceptions.ClientError as exc:
            if exc.response.get("Error", {}).get("Code") not in {"404", "NoSuchBucket", "NotFound"}:
                raise DeployError(f"artifacts bucket {name}: {exc}") from exc
        kwargs: dict[str, Any] = {"Bucket": name}
        if self.region != "us-east-1":
            kwargs["CreateBucketConfiguration"] = {"LocationConstraint": self.region}
        self.s3.create_bucket(**kwargs)
        self.s3.put_public_access_block(
            Bucket=name,
            PublicAccessBlockConfiguration={
                "BlockPublicAcls": True,
                "IgnorePublicAcls": True,
                "BlockPublicPolicy": True,
                "RestrictPublicBuckets": True,
            },
        )
        self.s3.put_bucket_encryption(
            Bucket=name,
            ServerSideEncryptionConfiguration={
                "Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]
            },
        )
        self.s3.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": "Enabled"})
        self.say(f"deploy: made artifacts bucket {name}")
        return name

    def _upload(self, bucket: str, release: ReleaseBundle) -> None:
        """Every file of the bundle under its prefix, the manifest last; a prefix whose
        manifest is there already holds this very release (its name is its content)."""
        where = f"s3://{bucket}/{release.prefix}/"
        try:
            self.s3.head_object(Bucket=bucket, Key=f"{release.prefix}/{MANIFEST}")
        except self.s3.exceptions.ClientError:
            pass
        else:
            self.say(f"deploy: release {release.name} is already in {where}")
            return
        files = release.files()
        for name in files:
            self.s3.upload_file(str(release.directory / name), bucket, f"{release.prefix}/{name}")
        self.say(f"deploy: uploaded release {release.name} ({len(files)} files) to {where}")

    def _with_secret(self, out: dict[str, str]) -> dict[str, str]:
        """The outputs plus ``DatabaseSecretArn``, the RDS-managed secret (read from RDS: the
        template cannot name it portably)."""
        instance = out.get("DatabaseInstance")
        if not instance:
            return out
        found = self.rds.describe_db_instances(DBInstanceIdentifier=instance)["DBInstances"]
        secret = (found[0].get("MasterUserSecret") or {}).get("SecretArn") if found else None
        return {**out, "DatabaseSecretArn": secret} if secret else out

    def _unchanged(self, current: Mapping[str, Any], body: str, values: Mapping[str, str]) -> bool:
        if current["StackStatus"] not in rules.SETTLED_OK:
            return False
        deployed = self.cfn.get_template(StackName=self.target.stack_name)["TemplateBody"]
        if isinstance(deployed, str):
            try:
                deployed = json.loads(deployed)
            except ValueError:
                return False
        params = {p["ParameterKey"]: p.get("ParameterValue") for p in current.get("Parameters", [])}
        return deployed == json.loads(body) and all(params.get(k) == v for k, v in values.items())

    def _change_set_ready(self, name: str) -> bool:
        """True once the change set can run; False when it holds no changes."""
        deadline = self.clock() + self.timeout_seconds
        while True:
            cs = self.cfn.describe_change_set(StackName=self.target.stack_name, ChangeSetName=name)
            status, reason = cs.get("Status", ""), cs.get("StatusReason", "") or ""
            if status == "CREATE_COMPLETE":
                return True
            if status == "FAILED":
                self.cfn.delete_change_set(StackName=self.target.stack_name, ChangeSetName=name)
                if rules.is_no_change(status, reason):
                    return False
                raise TemplateError(f"change set {name} failed: {reason}")
            if self.clock() > deadline:
                raise DeployError(f"change set {name} still {status} after {self.timeout_seconds:.0f} s")
            self.sleep(self.poll_seconds)

    # ------------------------------------------------------------ destroy
    def destroy(self, *, delete_data: bool = False) -> None:
        """Delete the stack (teardown.py says what comes before), keeping the data bucket and
        the database's final snapshot unless ``delete_data``."""
        current = self._describe()
        if current is None:
            self.say(f"destroy: there is no stack {self.target.stack_name}")
            return
        out = rules.outputs(current)
        resources = self.cfn.describe_stack_resources(StackName=self.target.stack_name)["StackResources"]
        parts = StackParts.of(resources)
        teardown = Teardown(
            {"rds": self.rds, "emr": self.emr, "ec2": self.ec2, "s3": self.s3},
            say=self.say,
            sleep=self.sleep,
            clock=self.clock,
            poll_seconds=self.poll_seconds,
            timeout_seconds=self.timeout_seconds,
        )
        teardown.before_delete(parts)
        seen = {e["EventId"] for e in self._events()}
        self.say(f"destroy: deleting stack {self.target.stack_name}")
        try:
            self.cfn.delete_stack(StackName=self.target.stack_name)
        except self.cfn.exceptions.ClientError as exc:
            raise DeployError(
                f"deleting stack {self.target.stack_name} failed: {exc}; nothing was removed from the "
                "data bucket; fix the cause and run destroy again"
            ) from exc
        try:
            self._wait(seen, lambda status: status == "DELETE_COMPLETE", gone_ok=True)
        except StackFailedError as exc:
            raise StackFailedError(
                f"{exc}\nthe data bucket and snapshots are untouched: fix the cause above and run "
                "destroy again"
            ) from exc
        bucket = out.get("BucketName", "?")
        snapshots = teardown.kept_snapshots(parts.databases)
        if not delete_data:
            self.say(
                f"destroy: stack {self.target.stack_name} deleted; kept the data bucket {bucket} and the "
                f"database's final snapshot ({', '.join(snapshots) or 'none found'}); "
                "`nimbus destroy --delete-data` removes them"
            )
            return
        if "BucketName" in out:
            teardown.empty_and_delete(out["BucketName"])
        teardown.delete_snapshots(snapshots)

    # ------------------------------------------------------------ shared
    def _describe(self) -> dict[str, Any] | None:
        try:
            stacks = self.cfn.describe_stacks(StackName=self.target.stack_name)["Stacks"]
        except self.cfn.exceptions.ClientError as exc:
            if "does not exist" in str(exc):
                return None
            raise DeployError(f"cannot read stack {self.target.stack_name}: {exc}") from exc
        return dict(stacks[0]) if stacks else None

    def _events(self) -> list[dict[str, Any]]:
        try:
            pages = self.cfn.get_paginator("describe_stack_events").paginate(StackName=self.target.stack_name)
            events = [e for page in pages for e in page["StackEvents"]]
        except self.cfn.exceptions.ClientError:
            return []
        return list(reversed(events))  # oldest first

    def _wait(self, seen: set[str], done: Callable[[str], bool], *, gone_ok: bool = False) -> dict[str, Any]:
        """Poll until the stack settles, printing each new event with the time since the start."""
        start = self.clock()
        while True:
            for event in self._events():
                if event["EventId"] in seen:
                    continue
                seen.add(event["EventId"])
                reason = f": {event['ResourceStatusReason']}" if event.get("ResourceStatusReason") else ""
                self.say(
                    f"  {self.clock() - start:6.0f} s  {event['ResourceStatus']:<20} "
                    f"{event['LogicalResourceId']} ({event['ResourceType']}){reason}"
                )
            current = self._describe()
            if current is None:
                if gone_ok:
                    return {}
                raise DeployError(f"stack {self.target.stack_name} disappeared while deploying")
            status = current["StackStatus"]
            if done(status):
                return current
            if status in rules.SETTLED_FAILED or (status.endswith("_COMPLETE") and "ROLLBACK" in status):
                failed = rules.failures(self._events(), self.target.stack_name)
                lines = "\n  ".join(str(f) for f in failed) or "no resource reported a reason"
                raise StackFailedError(
                    f"stack {self.target.stack_name} is {status}; failed resources:\n  {lines}"
                )
            if self.clock() - start > self.timeout_seconds:
                raise DeployError(
                    f"stack {self.target.stack_name} still {status} after {self.timeout_seconds:.0f} s"
                )
            self.sleep(self.poll_seconds)
