"""``nimbus destroy``: what must happen before CloudFormation can delete the stack, and after.

CloudFormation alone stops on three things a running stack accumulates:

1. the database's deletion protection (on by default): the operator asked to destroy,
   so it is turned off first, and said so; the final snapshot is still taken
   (``DeletionPolicy: Snapshot``);
2. EMR clusters still running in the stack's subnets: their instances and network
   interfaces keep the subnets and the EMR security groups in use, so they are
   terminated first, and waited for;
3. the rules EMR adds between its managed security groups (primary, core, service
   access): a group another group's rule names cannot be deleted, so they are revoked
   first (AWS's EMR guide, "Working with Amazon EMR-managed security groups").

After the stack is gone the data bucket (``DeletionPolicy: Retain``) and the final
snapshot remain unless ``--delete-data`` was given. The pure decisions (which
clusters, which rules) are functions here, tested on recorded answers; the order of
calls is tested with botocore's Stubber (tests/unit/deploy/test_teardown.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from services.deploy.errors import DeployError

EMR_SECURITY_GROUPS = ("EmrMasterSecurityGroup", "EmrSlaveSecurityGroup", "EmrServiceAccessSecurityGroup")
# A cluster in one of these states still holds instances or network interfaces.
LIVE_CLUSTER_STATES = ["STARTING", "BOOTSTRAPPING", "RUNNING", "WAITING", "TERMINATING"]
GONE_CLUSTER_STATES = {"TERMINATED", "TERMINATED_WITH_ERRORS"}


@dataclass(frozen=True)
class StackParts:
    """The stack's resources the teardown acts on, by physical id."""

    databases: list[str]
    subnets: set[str]
    emr_groups: list[str]

    @classmethod
    def of(cls, resources: Iterable[Mapping[str, Any]]) -> StackParts:
        databases, subnets, groups = [], set(), []
        for r in resources:
            physical = r.get("PhysicalResourceId")
            if not physical:
                continue
            kind, logical = r.get("ResourceType"), r.get("LogicalResourceId")
            if kind == "AWS::RDS::DBInstance":
                databases.append(str(physical))
            elif kind == "AWS::EC2::Subnet":
                subnets.add(str(physical))
            elif kind == "AWS::EC2::SecurityGroup" and logical in EMR_SECURITY_GROUPS:
                groups.append(str(physical))
        return cls(databases, subnets, groups)


def clusters_in(clusters: Iterable[Mapping[str, Any]], parts: StackParts) -> list[str]:
    """The ids of the clusters (``describe_cluster`` answers) that run in the stack: in one
    of its subnets, or in one of its EMR security groups."""
    found = []
    for cluster in clusters:
        attrs = cluster.get("Ec2InstanceAttributes") or {}
        groups = {attrs.get("EmrManagedMasterSecurityGroup"), attrs.get("EmrManagedSlaveSecurityGroup")}
        if attrs.get("Ec2SubnetId") in parts.subnets or groups & set(parts.emr_groups):
            found.append(str(cluster["Id"]))
    return found


def _permission(rule: Mapping[str, Any]) -> dict[str, Any]:
    """A described rule in the form RevokeSecurityGroup* accepts (descriptions and peering
    details dropped, which revoking does not match on)."""
    out: dict[str, Any] = {"IpProtocol": rule["IpProtocol"]}
    for key in ("FromPort", "ToPort"):
        if key in rule:
            out[key] = rule[key]
    if rule.get("IpRanges"):
        out["IpRanges"] = [{"CidrIp": r["CidrIp"]} for r in rule["IpRanges"]]
    if rule.get("Ipv6Ranges"):
        out["Ipv6Ranges"] = [{"CidrIpv6": r["CidrIpv6"]} for r in rule["Ipv6Ranges"]]
    if rule.get("PrefixListIds"):
        out["PrefixListIds"] = [{"PrefixListId": r["PrefixListId"]} for r in rule["PrefixListIds"]]
    if rule.get("UserIdGroupPairs"):
        out["UserIdGroupPairs"] = [{"GroupId": p["GroupId"]} for p in rule["UserIdGroupPairs"]]
    return out


@dataclass(frozen=True)
class Revocation:
    group: str
    direction: str  # ingress | egress
    permissions: list[dict[str, Any]]


def emr_rule_revocations(groups: Iterable[Mapping[str, Any]]) -> list[Revocation]:
    """What to revoke in the EMR-managed groups (``describe_security_groups`` answers) so
    that CloudFormation can delete them: every inbound rule (EMR added them all: the
    template gives these groups none), and the outbound rules that name another group.
    The default allow-all outbound rule stays: it blocks nothing."""
    out = []
    for group in groups:
        ingress = [_permission(r) for r in group.get("IpPermissions", [])]
        egress = [_permission(r) for r in group.get("IpPermissionsEgress", []) if r.get("UserIdGroupPairs")]
        if ingress:
            out.append(Revocation(group["GroupId"], "ingress", ingress))
        if egress:
            out.append(Revocation(group["GroupId"], "egress", egress))
    return out


class Teardown:
    """The steps around DeleteStack, on the clients of a ``Deployer``."""

    def __init__(
        self,
        clients: Mapping[str, Any],
        *,
        say: Callable[[str], None],
        sleep: Callable[[float], None],
        clock: Callable[[], float],
        poll_seconds: float,
        timeout_seconds: float,
    ) -> None:
        self.rds, self.emr, self.ec2, self.s3 = clients["rds"], clients["emr"], clients["ec2"], clients["s3"]
        self.say, self.sleep, self.clock = say, sleep, clock
        self.poll_seconds, self.timeout_seconds = poll_seconds, timeout_seconds

    def before_delete(self, parts: StackParts) -> None:
        self.lift_deletion_protection(parts.databases)
        self.terminate_clusters(parts)
        self.revoke_emr_rules(parts.emr_groups)

    def lift_deletion_protection(self, databases: Iterable[str]) -> None:
        for db in databases:
            found = self.rds.describe_db_instances(DBInstanceIdentifier=db)["DBInstances"]
            if not found or not found[0].get("DeletionProtection"):
                continue
            self.say(
                f"destroy: turning off deletion protection of DB instance {db}, as you asked to destroy "
                "the stack (a final snapshot is still taken)"
            )
            self.rds.modify_db_instance(
                DBInstanceIdentifier=db, DeletionProtection=False, ApplyImmediately=True
            )

    def terminate_clusters(self, parts: StackParts) -> None:
        listed = self.emr.get_paginator("list_clusters").paginate(ClusterStates=LIVE_CLUSTER_STATES)
        ids = [c["Id"] for page in listed for c in page.get("Clusters", [])]
        described = [self.emr.describe_cluster(ClusterId=i)["Cluster"] for i in ids]
        doomed = clusters_in(described, parts)
        if not doomed:
            return
        self.say(f"destroy: terminating EMR clusters still in the stack's network: {', '.join(doomed)}")
        self.emr.terminate_job_flows(JobFlowIds=doomed)
        deadline = self.clock() + self.timeout_seconds
        waiting = set(doomed)
        while waiting:
            for cluster_id in sorted(waiting):
                state = self.emr.describe_cluster(ClusterId=cluster_id)["Cluster"]["Status"]["State"]
                if state in GONE_CLUSTER_STATES:
                    waiting.discard(cluster_id)
            if not waiting:
                break
            if self.clock() > deadline:
                raise DeployError(
                    f"EMR clusters {', '.join(sorted(waiting))} still not terminated after "
                    f"{self.timeout_seconds:.0f} s; nothing was deleted: run destroy again"
                )
            self.sleep(self.poll_seconds)
        self.say(f"destroy: EMR clusters terminated: {', '.join(doomed)}")

    def revoke_emr_rules(self, groups: list[str]) -> None:
        if not groups:
            return
        described = self.ec2.describe_security_groups(GroupIds=groups)["SecurityGroups"]
        revocations = emr_rule_revocations(described)
        for r in revocations:
            if r.direction == "ingress":
                self.ec2.revoke_security_group_ingress(GroupId=r.group, IpPermissions=r.permissions)
            else:
                self.ec2.revoke_security_group_egress(GroupId=r.group, IpPermissions=r.permissions)
        if revocations:
            self.say(
                f"destroy: removed the rules EMR added to its security groups "
                f"({sum(len(r.permissions) for r in revocations)} rules)"
            )

    def kept_snapshots(self, databases: Iterable[str]) -> list[str]:
        names = []
        for db in databases:
            snaps = self.rds.describe_db_snapshots(DBInstanceIdentifier=db, SnapshotType="manual")
            names += [s["DBSnapshotIdentifier"] for s in snaps.get("DBSnapshots", [])]
        return names

    def delete_snapshots(self, names: Iterable[str]) -> None:
        for name in names:
            self.rds.delete_db_snapshot(DBSnapshotIdentifier=name)
            self.say(f"destroy: deleted snapshot {name}")

    def empty_and_delete(self, bucket: str) -> None:
        paginator = self.s3.get_paginator("list_object_versions")
        for page in paginator.paginate(Bucket=bucket):
            doomed = [
                {"Key": v["Key"], "VersionId": v["VersionId"]}
                for v in page.get("Versions", []) + page.get("DeleteMarkers", [])
            ]
            for i in range(0, len(doomed), 1000):
                self.s3.delete_objects(Bucket=bucket, Delete={"Objects": doomed[i : i + 1000], "Quiet": True})
        self.s3.delete_bucket(Bucket=bucket)
        self.say(f"destroy: deleted bucket {bucket}")
