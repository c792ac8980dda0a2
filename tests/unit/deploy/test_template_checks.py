"""The CloudFormation template passes cfn-lint and parliament, and says what the issue asks.

moto ignores some resources (the bucket policy) and checks no IAM, so these
properties are read from the template itself; the deploy test checks the rest
through the service APIs.
"""

from __future__ import annotations

import json
import re
from typing import Any

import parliament
import pytest

from services.deploy import template

ACCOUNT, REGION, PARTITION = "123456789012", "us-east-1", "aws"


@pytest.fixture(scope="module")
def tpl() -> dict[str, Any]:
    return template.load()


def _resources(tpl: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in tpl["Resources"].items() if v["Type"] == kind}


def _resolve(node: Any) -> Any:
    """Intrinsic functions replaced by plausible values, so policies read as JSON policies."""
    if isinstance(node, dict):
        if "Fn::Sub" in node:
            text = node["Fn::Sub"] if isinstance(node["Fn::Sub"], str) else node["Fn::Sub"][0]
            text = text.replace("${AWS::Partition}", PARTITION).replace("${AWS::Region}", REGION)
            text = text.replace("${AWS::AccountId}", ACCOUNT)
            text = re.sub(r"\$\{(\w+)\.Arn\}", r"arn:aws:s3:::\1", text)
            return re.sub(r"\$\{[\w:.]+\}", "nimbus-x", text)
        if "Fn::GetAtt" in node:
            name, attribute = node["Fn::GetAtt"]
            if attribute == "Arn" and name.endswith("LogGroup"):
                return f"arn:aws:logs:{REGION}:{ACCOUNT}:log-group:/nimbus/x/{name}:*"
            return f"arn:aws:s3:::{name.lower()}"
        if "Ref" in node:
            return f"nimbus-{node['Ref']}"
        return {k: _resolve(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_resolve(v) for v in node]
    return node


def test_cfn_lint_is_clean() -> None:
    assert template.lint() == []


def test_iam_policies_pass_parliament(tpl: dict[str, Any]) -> None:
    policies = []
    for name, role in _resources(tpl, "AWS::IAM::Role").items():
        for policy in role["Properties"].get("Policies", []):
            policies.append((name, _resolve(policy["PolicyDocument"])))
    assert len(policies) >= 3
    for name, document in policies:
        findings = parliament.analyze_policy_string(json.dumps(document)).findings
        assert not findings, (name, [(f.issue, f.detail) for f in findings])


def test_parliament_would_flag_a_mismatched_resource() -> None:
    """The check above can fail: parliament reads policies in this form and finds faults."""
    bad = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": ["s3:GetObject"], "Resource": "arn:aws:s3:::bucket"}],
    }
    assert [f.issue for f in parliament.analyze_policy_string(json.dumps(bad)).findings] == [
        "RESOURCE_MISMATCH"
    ]


def test_no_wildcard_actions_or_resources_in_our_policies(tpl: dict[str, Any]) -> None:
    for name, role in _resources(tpl, "AWS::IAM::Role").items():
        for policy in role["Properties"].get("Policies", []):
            for statement in policy["PolicyDocument"]["Statement"]:
                assert all("*" not in a for a in statement["Action"]), name
                assert statement["Resource"] != "*", name


def test_bucket_is_private_encrypted_versioned_and_tls_only(tpl: dict[str, Any]) -> None:
    bucket = tpl["Resources"]["DataBucket"]
    props = bucket["Properties"]
    assert bucket["DeletionPolicy"] == "Retain"
    assert all(props["PublicAccessBlockConfiguration"].values())
    assert props["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]
    assert props["VersioningConfiguration"]["Status"] == "Enabled"
    rules = props["LifecycleConfiguration"]["Rules"]
    assert any("NoncurrentVersionExpiration" in r for r in rules)
    (statement,) = tpl["Resources"]["DataBucketPolicy"]["Properties"]["PolicyDocument"]["Statement"]
    assert statement["Effect"] == "Deny" and statement["Condition"]["Bool"]["aws:SecureTransport"] == "false"


def test_database_keeps_its_password_in_secrets_manager(tpl: dict[str, Any]) -> None:
    db = tpl["Resources"]["Database"]
    props = db["Properties"]
    assert props["ManageMasterUserPassword"] is True and "MasterUserPassword" not in props
    assert props["StorageEncrypted"] is True and props["PubliclyAccessible"] is False
    assert props["Engine"] == "mysql" and db["DeletionPolicy"] == "Snapshot"
    assert tpl["Parameters"]["DbEngineVersion"]["Default"].startswith("8.")
    assert not [p for p in tpl["Parameters"] if "password" in p.lower()]
    for lt in _resources(tpl, "AWS::EC2::LaunchTemplate").values():
        assert "assword" not in json.dumps(lt["Properties"]["LaunchTemplateData"]["UserData"])


def test_nothing_admits_ssh_and_the_database_admits_only_our_instances(tpl: dict[str, Any]) -> None:
    for name, group in _resources(tpl, "AWS::EC2::SecurityGroup").items():
        for rule in group["Properties"].get("SecurityGroupIngress", []):
            assert not (rule["FromPort"] <= 22 <= rule["ToPort"]), name
            if name != "LoadBalancerSecurityGroup":
                assert "CidrIp" not in rule, (name, rule)  # only from other groups
    db_rules = tpl["Resources"]["DatabaseSecurityGroup"]["Properties"]["SecurityGroupIngress"]
    assert {r["SourceSecurityGroupId"]["Ref"] for r in db_rules} == {
        "CrawlerSecurityGroup",
        "SearchSecurityGroup",
    }
    assert "SecurityGroupIngress" not in tpl["Resources"]["CrawlerSecurityGroup"]["Properties"]


def test_instances_require_imdsv2_and_encrypted_disks(tpl: dict[str, Any]) -> None:
    for lt in _resources(tpl, "AWS::EC2::LaunchTemplate").values():
        data = lt["Properties"]["LaunchTemplateData"]
        assert data["MetadataOptions"]["HttpTokens"] == "required"
        assert all(m["Ebs"]["Encrypted"] for m in data["BlockDeviceMappings"])


def test_outputs_name_everything_nimbus_needs(tpl: dict[str, Any]) -> None:
    assert {
        "SiteUrl",
        "BucketName",
        "DatabaseEndpoint",
        "DatabasePort",
        "DatabaseInstance",
        "EmrServiceRole",
        "EmrInstanceProfile",
        "EmrSubnetId",
        "Region",
    } <= set(tpl["Outputs"])
