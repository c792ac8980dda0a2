"""``nimbus destroy``'s order of operations, on stubbed AWS clients (botocore's Stubber).

moto cannot show it: its stack deletion stops at the VPC, and it runs no EMR cluster that
would add rules to the EMR security groups or keep the subnets busy. Here each call is
answered as AWS answers it, and the test checks what was called, in which order, with
which arguments, and what the operator is told.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.stub import ANY, Stubber

from services.deploy.driver import Deployer, Target
from services.deploy.teardown import StackParts, clusters_in, emr_rule_revocations

STACK = "nimbus"
DB = "nimbus-database-abc"
MASTER, SLAVE, SERVICE = "sg-0000000000000aaaa", "sg-0000000000000bbbb", "sg-0000000000000cccc"
SUBNET = "subnet-00000000000000001"
RESOURCES = [
    {"LogicalResourceId": "Database", "PhysicalResourceId": DB, "ResourceType": "AWS::RDS::DBInstance"},
    {"LogicalResourceId": "PrivateSubnetA", "PhysicalResourceId": SUBNET, "ResourceType": "AWS::EC2::Subnet"},
    {
        "LogicalResourceId": "EmrMasterSecurityGroup",
        "PhysicalResourceId": MASTER,
        "ResourceType": "AWS::EC2::SecurityGroup",
    },
    {
        "LogicalResourceId": "EmrSlaveSecurityGroup",
        "PhysicalResourceId": SLAVE,
        "ResourceType": "AWS::EC2::SecurityGroup",
    },
    {
        "LogicalResourceId": "EmrServiceAccessSecurityGroup",
        "PhysicalResourceId": SERVICE,
        "ResourceType": "AWS::EC2::SecurityGroup",
    },
    {
        "LogicalResourceId": "SearchSecurityGroup",
        "PhysicalResourceId": "sg-0000000000000dddd",
        "ResourceType": "AWS::EC2::SecurityGroup",
    },
]
TIME = "2026-11-27T00:00:00Z"


def _resource(logical: str, physical: str, kind: str) -> dict[str, Any]:
    return {
        "LogicalResourceId": logical,
        "PhysicalResourceId": physical,
        "ResourceType": kind,
        "StackName": STACK,
        "Timestamp": TIME,
        "ResourceStatus": "CREATE_COMPLETE",
    }


def _cluster(
    cluster_id: str, subnet: str, state: str = "WAITING", groups: tuple[str, str] = ("sg-x", "sg-y")
) -> dict[str, Any]:
    return {
        "Id": cluster_id,
        "Name": "nimbus index build",
        "Status": {"State": state},
        "Ec2InstanceAttributes": {
            "Ec2SubnetId": subnet,
            "EmrManagedMasterSecurityGroup": groups[0],
            "EmrManagedSlaveSecurityGroup": groups[1],
        },
    }


# What EMR adds between its groups for a cluster in a private subnet (EMR's guide).
EMR_GROUPS = [
    {
        "GroupId": MASTER,
        "IpPermissions": [
            {
                "IpProtocol": "-1",
                "UserIdGroupPairs": [{"GroupId": MASTER, "UserId": "1"}, {"GroupId": SLAVE, "UserId": "1"}],
            },
            {
                "IpProtocol": "tcp",
                "FromPort": 8443,
                "ToPort": 8443,
                "UserIdGroupPairs": [{"GroupId": SERVICE, "UserId": "1", "Description": "x"}],
            },
        ],
        "IpPermissionsEgress": [{"IpProtocol": "-1", "IpRanges": [{"CidrIp": "0.0.0.0/0"}]}],
    },
    {
        "GroupId": SLAVE,
        "IpPermissions": [{"IpProtocol": "-1", "UserIdGroupPairs": [{"GroupId": MASTER}]}],
        "IpPermissionsEgress": [],
    },
    {
        "GroupId": SERVICE,
        "IpPermissions": [
            {"IpProtocol": "tcp", "FromPort": 9443, "ToPort": 9443, "UserIdGroupPairs": [{"GroupId": MASTER}]}
        ],
        "IpPermissionsEgress": [
            {
                "IpProtocol": "tcp",
                "FromPort": 8443,
                "ToPort": 8443,
                "UserIdGroupPairs": [{"GroupId": MASTER}, {"GroupId": SLAVE}],
            },
            {"IpProtocol": "-1", "IpRanges": [{"CidrIp": "0.0.0.0/0"}]},
        ],
    },
]


def test_emr_rules_between_groups_are_revoked_and_the_default_egress_stays() -> None:
    revocations = {(r.group, r.direction): r.permissions for r in emr_rule_revocations(EMR_GROUPS)}
    assert set(revocations) == {
        (MASTER, "ingress"),
        (SLAVE, "ingress"),
        (SERVICE, "ingress"),
        (SERVICE, "egress"),
    }
    assert revocations[(MASTER, "ingress")][1] == {
        "IpProtocol": "tcp",
        "FromPort": 8443,
        "ToPort": 8443,
        "UserIdGroupPairs": [{"GroupId": SERVICE}],  # descriptions are not part of a rule's identity
    }
    assert revocations[(SERVICE, "egress")] == [
        {
            "IpProtocol": "tcp",
            "FromPort": 8443,
            "ToPort": 8443,
            "UserIdGroupPairs": [{"GroupId": MASTER}, {"GroupId": SLAVE}],
        }
    ]


def test_only_clusters_in_the_stacks_network_are_terminated() -> None:
    parts = StackParts.of(RESOURCES)
    assert (
        parts.databases == [DB] and parts.subnets == {SUBNET} and parts.emr_groups == [MASTER, SLAVE, SERVICE]
    )
    clusters = [
        _cluster("j-ours", SUBNET),
        _cluster("j-public", "subnet-emr-public-of-ours", groups=(MASTER, SLAVE)),
        _cluster("j-someone-elses", "subnet-elsewhere"),
    ]
    assert clusters_in(clusters, parts) == ["j-ours", "j-public"]


@pytest.fixture
def stubbed(
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[tuple[Deployer, dict[str, Stubber], list[str], list[str]]]:
    """A Deployer whose clients answer from stubs, recording every call in order."""
    session = boto3.Session(aws_access_key_id="x", aws_secret_access_key="y", region_name="us-east-1")
    said: list[str] = []
    deployer = Deployer(Target(STACK), session=session, say=said.append, sleep=lambda _s: None)
    calls: list[str] = []
    stubs = {}
    for name in ("cfn", "rds", "emr", "ec2", "s3"):
        client = getattr(deployer, name)
        client.meta.events.register(
            "provide-client-params.*.*", lambda params, model, **_kw: calls.append(model.name)
        )
        stubs[name] = Stubber(client)
        stubs[name].activate()
    yield deployer, stubs, calls, said
    for stub in stubs.values():
        stub.assert_no_pending_responses()


def _stack(status: str = "CREATE_COMPLETE") -> dict[str, Any]:
    return {
        "Stacks": [
            {
                "StackName": STACK,
                "StackStatus": status,
                "CreationTime": TIME,
                "Outputs": [{"OutputKey": "BucketName", "OutputValue": "nimbus-databucket-1"}],
            }
        ]
    }


def _expect_teardown(stubs: dict[str, Stubber], *, protected: bool, clusters: list[dict[str, Any]]) -> None:
    cfn, rds, emr, ec2 = stubs["cfn"], stubs["rds"], stubs["emr"], stubs["ec2"]
    cfn.add_response("describe_stacks", _stack(), {"StackName": STACK})
    cfn.add_response(
        "describe_stack_resources",
        {
            "StackResources": [
                _resource(r["LogicalResourceId"], r["PhysicalResourceId"], r["ResourceType"])
                for r in RESOURCES
            ]
        },
        {"StackName": STACK},
    )
    rds.add_response(
        "describe_db_instances",
        {"DBInstances": [{"DBInstanceIdentifier": DB, "DeletionProtection": protected}]},
        {"DBInstanceIdentifier": DB},
    )
    if protected:
        rds.add_response(
            "modify_db_instance",
            {"DBInstance": {"DBInstanceIdentifier": DB}},
            {"DBInstanceIdentifier": DB, "DeletionProtection": False, "ApplyImmediately": True},
        )
    emr.add_response(
        "list_clusters",
        {"Clusters": [{"Id": c["Id"], "Status": c["Status"]} for c in clusters]},
        {"ClusterStates": ["STARTING", "BOOTSTRAPPING", "RUNNING", "WAITING", "TERMINATING"]},
    )
    for c in clusters:
        emr.add_response("describe_cluster", {"Cluster": c}, {"ClusterId": c["Id"]})
    ours = [c for c in clusters if c["Ec2InstanceAttributes"]["Ec2SubnetId"] == SUBNET]
    if ours:
        emr.add_response("terminate_job_flows", {}, {"JobFlowIds": [c["Id"] for c in ours]})
        for state in ("TERMINATING", "TERMINATED"):  # polled until gone
            for c in ours:
                emr.add_response(
                    "describe_cluster", {"Cluster": {**c, "Status": {"State": state}}}, {"ClusterId": c["Id"]}
                )
    ec2.add_response(
        "describe_security_groups", {"SecurityGroups": EMR_GROUPS}, {"GroupIds": [MASTER, SLAVE, SERVICE]}
    )
    for r in emr_rule_revocations(EMR_GROUPS):
        operation = f"revoke_security_group_{r.direction}"
        ec2.add_response(operation, {"Return": True}, {"GroupId": r.group, "IpPermissions": r.permissions})


def _expect_deletion(stubs: dict[str, Stubber], snapshot: str) -> None:
    cfn, rds = stubs["cfn"], stubs["rds"]
    cfn.add_response("describe_stack_events", {"StackEvents": []}, {"StackName": STACK})
    cfn.add_response("delete_stack", {}, {"StackName": STACK})
    cfn.add_response("describe_stack_events", {"StackEvents": []}, {"StackName": STACK})
    cfn.add_response("describe_stacks", _stack("DELETE_IN_PROGRESS"), {"StackName": STACK})
    cfn.add_client_error("describe_stack_events", "ValidationError", f"Stack with id {STACK} does not exist")
    cfn.add_client_error("describe_stacks", "ValidationError", f"Stack with id {STACK} does not exist")
    rds.add_response(
        "describe_db_snapshots",
        {"DBSnapshots": [{"DBSnapshotIdentifier": snapshot}]},
        {"DBInstanceIdentifier": DB, "SnapshotType": "manual"},
    )


def test_destroy_clears_what_blocks_deletion_then_deletes_and_keeps_the_data(stubbed) -> None:
    deployer, stubs, calls, said = stubbed
    clusters = [_cluster("j-ours", SUBNET), _cluster("j-theirs", "subnet-elsewhere")]
    _expect_teardown(stubs, protected=True, clusters=clusters)
    _expect_deletion(stubs, "nimbus-database-final")
    deployer.destroy()

    def first(operation: str) -> int:
        return calls.index(operation)

    # Protection off, EMR gone, EMR's rules revoked: all before DeleteStack.
    assert first("ModifyDBInstance") < first("DeleteStack")
    assert first("TerminateJobFlows") < first("RevokeSecurityGroupIngress") < first("DeleteStack")
    assert calls.count("RevokeSecurityGroupIngress") == 3 and calls.count("RevokeSecurityGroupEgress") == 1
    assert "DeleteBucket" not in calls and "DeleteDBSnapshot" not in calls
    assert any("turning off deletion protection of DB instance nimbus-database-abc" in line for line in said)
    assert any(
        "terminating EMR clusters" in line and "j-ours" in line and "j-theirs" not in line for line in said
    )
    assert said[-1].endswith(
        "kept the data bucket nimbus-databucket-1 and the database's final snapshot (nimbus-database-final); "
        "`nimbus destroy --delete-data` removes them"
    )


def test_delete_data_removes_bucket_and_snapshot_only_after_the_stack(stubbed) -> None:
    deployer, stubs, calls, said = stubbed
    _expect_teardown(stubs, protected=False, clusters=[])
    _expect_deletion(stubs, "nimbus-database-final")
    stubs["s3"].add_response(
        "list_object_versions",
        {"Versions": [{"Key": "nimbus/a", "VersionId": "1"}]},
        {"Bucket": "nimbus-databucket-1"},
    )
    stubs["s3"].add_response("delete_objects", {}, {"Bucket": "nimbus-databucket-1", "Delete": ANY})
    stubs["s3"].add_response("delete_bucket", {}, {"Bucket": "nimbus-databucket-1"})
    stubs["rds"].add_response("delete_db_snapshot", {}, {"DBSnapshotIdentifier": "nimbus-database-final"})
    deployer.destroy(delete_data=True)
    assert "ModifyDBInstance" not in calls  # already off: nothing to say or do
    assert not [line for line in said if "deletion protection" in line]
    assert calls.index("DeleteStack") < calls.index("DeleteBucket") < calls.index("DeleteDBSnapshot")
    assert said[-2:] == [
        "destroy: deleted bucket nimbus-databucket-1",
        "destroy: deleted snapshot nimbus-database-final",
    ]
