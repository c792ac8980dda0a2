"""The stack's IAM: every policy passes parliament (managed ones attached too), each role
holds what its job needs and no more, and the EMR roles are what EMR accepts.

moto evaluates no IAM and checks nothing EMR checks (the instance profile's name), so this
is read from the template, with just enough of IAM's evaluation (``may``) to say which
role may do what on which resource.
"""

from __future__ import annotations

import json
from fnmatch import fnmatchcase
from typing import Any

import parliament
import pytest
from moto.iam.aws_managed_policies import aws_managed_policies_data

from tests.unit.deploy.cfn import (
    ACCOUNT,
    ADMIN_SECRET_ARN,
    DB_SECRETS,
    REGION,
    ROLE_OF,
    SECRET_ARN,
    TEMPLATE_OF,
    as_list,
    resolve,
    resources,
    statements,
    user_data,
)

INSTANCE_ROLES = set(ROLE_OF.values())
EMR_TAG = "aws:RequestTag/for-use-with-amazon-emr-managed-policies"


def _documents(tpl: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Every policy the stack's roles get: inline, the stack's managed policies, and AWS's
    managed policies they attach (their documents as moto ships them)."""
    aws_managed = json.loads(aws_managed_policies_data)
    found = []
    for name, role in resources(tpl, "AWS::IAM::Role").items():
        for policy in role["Properties"].get("Policies", []):
            found.append((name, resolve(policy["PolicyDocument"], tpl)))
        for arn in role["Properties"].get("ManagedPolicyArns", []):
            if "Ref" in arn:  # the stack's own
                document = tpl["Resources"][arn["Ref"]]["Properties"]["PolicyDocument"]
                found.append((f"{name}/{arn['Ref']}", resolve(document, tpl)))
            else:
                policy_name = arn["Fn::Sub"].rsplit("/", 1)[-1]
                found.append((f"{name}/{policy_name}", aws_managed[policy_name]["Document"]))
    return found


def _findings(document: dict[str, Any]) -> list[tuple[str, Any]]:
    """parliament's findings, less the RESOURCE_MISMATCH ones another statement of the same
    policy answers. parliament wants every resource type an action requires in each
    statement; RunInstances needs an instance, its volumes, an image, a subnet and groups,
    and the conditions differ per type (a tag on what is created, none on the subnet), so
    AWS's own EMR policies split them over statements, as ours does. What the policy as a
    whole still lacks is reported."""
    statements = [s for s in document["Statement"] if s["Effect"] == "Allow"]

    def covered(missing: dict[str, str]) -> bool:
        return any(
            any(fnmatchcase(missing["action"], a) for a in as_list(s["Action"]))
            and any(fnmatchcase(r, missing["required_format"]) for r in as_list(s["Resource"]))
            for s in statements
        )

    found = []
    for finding in parliament.analyze_policy_string(json.dumps(document)).findings:
        if finding.issue == "RESOURCE_MISMATCH":
            detail = [m for m in finding.detail if not covered(m)]
            if detail:
                found.append((finding.issue, detail))
        else:
            found.append((finding.issue, finding.detail))
    return found


def test_every_policy_passes_parliament_managed_ones_too(tpl: dict[str, Any]) -> None:
    documents = _documents(tpl)
    assert len(documents) >= 10
    for name, document in documents:
        assert _findings(document) == [], name


def test_a_resource_type_missing_from_the_whole_policy_is_still_reported() -> None:
    """The allowance above can fail: RunInstances with no image anywhere in the policy."""
    partial = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Action": "ec2:RunInstances",
                "Resource": [
                    f"arn:aws:ec2:{REGION}:{ACCOUNT}:{kind}/*"
                    for kind in ("instance", "volume", "network-interface", "subnet", "security-group")
                ],
            }
        ],
    }
    (issue,) = _findings(partial)
    assert issue == (
        "RESOURCE_MISMATCH",
        [{"action": "ec2:RunInstances", "required_format": "arn:*:ec2:*::image/*"}],
    )


def test_parliament_would_flag_what_aws_managed_policies_grant() -> None:
    """The check above can fail: AWS's own AmazonSSMManagedInstanceCore (what the instance
    roles attached before) and the deprecated EMR service policy do not pass it."""
    aws_managed = json.loads(aws_managed_policies_data)
    for name in ("AmazonSSMManagedInstanceCore", "AmazonElasticMapReduceRole"):
        assert "RESOURCE_STAR" in {issue for issue, _ in _findings(aws_managed[name]["Document"])}, name


def _resource_types(action: str) -> set[str]:
    service, name = action.split(":")
    for definition in parliament.iam_definition:
        if definition["prefix"] == service:
            for privilege in definition["privileges"]:
                if privilege["privilege"] == name:
                    return {r["resource_type"] for r in privilege["resource_types"]}
    raise AssertionError(f"unknown action {action}")


def test_wildcards_only_where_iam_allows_nothing_narrower(tpl: dict[str, Any]) -> None:
    """No wildcard action; ``"*"`` as the resource only for actions that take no resource
    (Describe*, ListClusters, RunJobFlow, PutMetricData, the SSM channels)."""
    for name, document in _documents(tpl):
        for st in document["Statement"]:
            actions = as_list(st["Action"])
            assert all("*" not in a for a in actions), name
            if st["Resource"] == "*":
                narrower = {a: _resource_types(a) - {""} for a in actions}
                assert not any(narrower.values()), (name, narrower)
    assert _resource_types("ec2:DescribeVpcAttribute") - {""}  # the check can fail


def may(statements: list[dict[str, Any]], action: str, arn: str, tags: dict[str, str] | None = None) -> bool:
    """Whether Allow statements (intrinsics resolved) grant ``action`` on ``arn``, a resource
    (or request) carrying ``tags``: enough of IAM's evaluation for this template's policies."""
    tags = tags or {}
    for st in statements:
        if st["Effect"] != "Allow" or not any(fnmatchcase(action, a) for a in as_list(st["Action"])):
            continue
        if not any(fnmatchcase(arn, r) for r in as_list(st["Resource"])):
            continue
        conditions = st.get("Condition", {}).get("StringEquals", {})
        if all(
            tags.get(key.split("/", 1)[1]) == value for key, value in conditions.items() if "Tag/" in key
        ) and all(key == "cloudwatch:namespace" for key in conditions if "Tag/" not in key):
            return True
    return False


def _all_statements(tpl: dict[str, Any], role: str) -> list[dict[str, Any]]:
    props = tpl["Resources"][role]["Properties"]
    found = [s for p in props.get("Policies", []) for s in p["PolicyDocument"]["Statement"]]
    for arn in props.get("ManagedPolicyArns", []):
        found += tpl["Resources"][arn["Ref"]]["Properties"]["PolicyDocument"]["Statement"]
    return resolve(found, tpl)


def test_each_role_reads_only_its_own_database_secret(tpl: dict[str, Any]) -> None:
    """Four database users, four secrets: a role reads its own; the indexer, which creates
    the users (and holds the master user's secret anyway), reads all four and the master's,
    found by the tag RDS puts on it; the admin token is the search role's alone."""
    master = f"arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret:rds!db-1234-AbCdEf"
    db_arn = f"arn:aws:rds:{REGION}:{ACCOUNT}:db:nimbus-Database"
    ours = {"aws:rds:primaryDBInstanceArn": db_arn}
    read = "secretsmanager:GetSecretValue"
    for role_name, role in ROLE_OF.items():
        granted = _all_statements(tpl, role)
        readable = {r for r, name in DB_SECRETS.items() if may(granted, read, SECRET_ARN.format(name))}
        assert readable == (set(DB_SECRETS) if role_name == "indexer" else {role_name}), role
        assert may(granted, read, master, ours) == (role_name == "indexer"), role
        assert not may(granted, read, master, {"aws:rds:primaryDBInstanceArn": "another"}), role
        assert may(granted, read, ADMIN_SECRET_ARN) == (role_name == "search"), role
    for name in ("EmrServiceRole", "EmrInstanceRole"):
        assert not any(
            may(_all_statements(tpl, name), read, SECRET_ARN.format(s)) for s in DB_SECRETS.values()
        )
    script, _ = user_data(tpl, TEMPLATE_OF["search"])
    assert '--admin-token-secret "${AdminTokenSecret}"' in script


def test_crawlers_cannot_touch_index_segments(tpl: dict[str, Any]) -> None:
    """Crawl workers parse hostile pages: they and the committers write only the crawl's own
    prefixes; the indexer alone writes segments; EMR's nodes write only their scratch prefix."""
    bucket = "arn:aws:s3:::databucket"
    segment, block = f"{bucket}/nimbus/index/segment-1.nseg", f"{bucket}/nimbus/records/0000000001-ab.rec.gz"
    writers: dict[str, set[str]] = {}
    for role in (*INSTANCE_ROLES, "EmrInstanceRole"):
        granted = _all_statements(tpl, role)
        writers[role] = {
            key
            for key, arn in (("segment", segment), ("block", block), ("scratch", f"{bucket}/emr/tmp/x"))
            if may(granted, "s3:PutObject", arn) or may(granted, "s3:DeleteObject", arn)
        }
        assert may(granted, "s3:GetObject", block), role  # everyone reads the crawl
    assert writers == {
        "CrawlerRole": {"block"},
        "CommitterRole": {"block"},
        "SearchRole": set(),
        "IndexerRole": {"segment", "scratch"},
        "EmrInstanceRole": {"scratch"},
    }


def test_every_instance_role_can_be_reached_by_ssm_and_ship_its_logs(tpl: dict[str, Any]) -> None:
    """Session Manager, Run Command (`nimbus migrate --remote`) and `nimbus tunnel` need the
    SSM agent's calls; every instance writes the boot log group and its role's own group."""
    base = {"Ref": "InstanceBasePolicy"}
    log_groups = {
        "CrawlerRole": "Crawler",
        "CommitterRole": "Committer",
        "SearchRole": "Search",
        "IndexerRole": "Indexer",
    }
    for role, group in log_groups.items():
        props = tpl["Resources"][role]["Properties"]
        assert props["ManagedPolicyArns"] == [base], role
        granted = _all_statements(tpl, role)
        assert may(granted, "ssm:UpdateInstanceInformation", f"arn:aws:ec2:{REGION}:{ACCOUNT}:instance/i-1")
        assert may(granted, "ssmmessages:OpenDataChannel", "*") and may(
            granted, "ec2messages:GetMessages", "*"
        )
        for log in (f"{group}LogGroup", "BootLogGroup"):
            stream = f"arn:aws:logs:{REGION}:{ACCOUNT}:log-group:/nimbus/x/{log}:*"
            assert may(granted, "logs:PutLogEvents", stream), (role, log)
        assert may(
            granted, "s3:GetObject", "arn:aws:s3:::nimbus-ArtifactsBucket/releases/0.1-x/requirements.txt"
        )
        assert not may(granted, "s3:GetObject", "arn:aws:s3:::nimbus-ArtifactsBucket/other/key")


def test_emr_instance_profile_is_named_as_its_role(tpl: dict[str, Any]) -> None:
    """EMR refuses an instance profile whose name differs from its role's ("invalid instance
    profile", EMR's "Customize IAM roles" guide); moto and EC2 accept it."""
    profile = tpl["Resources"]["EmrInstanceProfile"]["Properties"]
    assert profile["Roles"] == [{"Ref": "EmrInstanceRole"}]
    assert profile["InstanceProfileName"] == {"Ref": "EmrInstanceRole"}
    assert tpl["Outputs"]["EmrInstanceProfile"]["Value"] == {"Ref": "EmrInstanceProfile"}


def test_emr_service_role_is_ours_and_scoped_to_the_stacks_network(tpl: dict[str, Any]) -> None:
    """No AWS-managed EMR policy (v1 is deprecated; v2 trusts a tag on any subnet or group of
    the account): the role may launch only into the stack's EMR subnet and security groups,
    change only those groups' rules, touch only instances EMR tagged for itself, and pass
    only the stack's EMR instance role, to EC2."""
    text = json.dumps(tpl)
    assert "AmazonElasticMapReduce" not in text and "AmazonEMR" not in text
    for role in ("EmrServiceRole", "EmrInstanceRole"):
        assert "ManagedPolicyArns" not in tpl["Resources"][role]["Properties"], role
    granted = _all_statements(tpl, "EmrServiceRole")
    ec2 = f"arn:aws:ec2:{REGION}:{ACCOUNT}"
    ours = [f"{ec2}:subnet/nimbus-PrivateSubnetA", f"{ec2}:security-group/nimbus-EmrMasterSecurityGroup"]
    for arn in ours:
        assert may(granted, "ec2:RunInstances", arn), arn
    for arn in (f"{ec2}:subnet/subnet-other", f"{ec2}:security-group/sg-other"):
        assert not may(granted, "ec2:RunInstances", arn), arn
        assert not may(granted, "ec2:AuthorizeSecurityGroupIngress", arn), arn
    assert may(
        granted, "ec2:AuthorizeSecurityGroupIngress", f"{ec2}:security-group/nimbus-EmrSlaveSecurityGroup"
    )
    emr_tagged = {"for-use-with-amazon-emr-managed-policies": "true"}
    assert may(granted, "ec2:TerminateInstances", f"{ec2}:instance/i-1", emr_tagged)
    assert not may(granted, "ec2:TerminateInstances", f"{ec2}:instance/i-1")  # an instance of ours
    assert not may(granted, "ec2:CreateSecurityGroup", f"{ec2}:security-group/sg-new")
    (passed,) = [s for s in granted if "iam:PassRole" in as_list(s["Action"])]
    assert passed["Resource"] == resolve({"Fn::GetAtt": ["EmrInstanceRole", "Arn"]}, tpl)
    assert passed["Condition"] == {"StringLike": {"iam:PassedToService": "ec2.amazonaws.com*"}}
    trust = tpl["Resources"]["EmrServiceRole"]["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert trust[0]["Principal"] == {"Service": "elasticmapreduce.amazonaws.com"}


def test_indexer_runs_only_tagged_clusters_and_passes_only_the_emr_roles(tpl: dict[str, Any]) -> None:
    """RunJobFlow only with the index-build tag and EMR's own tag (which EMR carries to the
    instances the service role may then manage); every other cluster call only on clusters
    with the index-build tag; iam:PassRole on the two EMR roles and nothing else."""
    granted = _all_statements(tpl, "IndexerRole")
    tags = {"nimbus": "index-build", "for-use-with-amazon-emr-managed-policies": "true"}
    assert may(granted, "elasticmapreduce:RunJobFlow", "*", tags)
    assert not may(granted, "elasticmapreduce:RunJobFlow", "*", {"nimbus": "index-build"})
    cluster = f"arn:aws:elasticmapreduce:{REGION}:{ACCOUNT}:cluster/j-1"
    for action in ("TerminateJobFlows", "AddJobFlowSteps", "DescribeCluster", "ListSteps", "AddTags"):
        assert may(granted, f"elasticmapreduce:{action}", cluster, {"nimbus": "index-build"}), action
        assert not may(granted, f"elasticmapreduce:{action}", cluster, {"team": "other"}), action
    (passes,) = [s for s in granted if "iam:PassRole" in as_list(s["Action"])]
    assert sorted(passes["Resource"]) == sorted(
        resolve([{"Fn::GetAtt": [r, "Arn"]} for r in ("EmrServiceRole", "EmrInstanceRole")], tpl)
    )
    for role in INSTANCE_ROLES - {"IndexerRole"}:
        assert not [s for s in _all_statements(tpl, role) if "iam:PassRole" in as_list(s["Action"])], role
        assert not may(_all_statements(tpl, role), "elasticmapreduce:RunJobFlow", "*", tags), role
    # Its metrics only in the stack's namespace; the committers publish PagesCommitted there.
    assert statements(tpl, "IndexerRole")["Metrics"]["Condition"] == {
        "StringEquals": {"cloudwatch:namespace": "Nimbus"}
    }
    assert statements(tpl, "CommitterRole")["Metrics"] == statements(tpl, "IndexerRole")["Metrics"]


@pytest.mark.parametrize("role", ["CrawlerRole", "CommitterRole", "SearchRole", "IndexerRole"])
def test_instance_roles_are_for_ec2_only(tpl: dict[str, Any], role: str) -> None:
    (trust,) = tpl["Resources"][role]["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert trust["Principal"] == {"Service": "ec2.amazonaws.com"} and trust["Action"] == "sts:AssumeRole"
    profiles = [
        p
        for p in resources(tpl, "AWS::IAM::InstanceProfile").values()
        if p["Properties"]["Roles"] == [{"Ref": role}]
    ]
    assert len(profiles) == 1


def test_index_clusters_carry_the_tags_the_indexer_may_start_them_with(tpl: dict[str, Any]) -> None:
    """The indexer's RunJobFlow is allowed only with the request tags its policy names: the
    runner must send exactly those, or every build on a real account is refused."""
    from services.indexing.emr_options import CLUSTER_TAGS

    statements = tpl["Resources"]["IndexerRole"]["Properties"]["Policies"][0]["PolicyDocument"]["Statement"]
    (start,) = [s for s in statements if s.get("Action") == ["elasticmapreduce:RunJobFlow"]]
    wanted = {
        key.removeprefix("aws:RequestTag/"): value
        for key, value in start["Condition"]["StringEquals"].items()
    }
    assert wanted == CLUSTER_TAGS
    (drive,) = [s for s in statements if s.get("Sid") == "DriveIndexClusters"]
    for key, value in drive["Condition"]["StringEquals"].items():
        assert CLUSTER_TAGS[key.removeprefix("aws:ResourceTag/")] == value
