"""`nimbus deploy` / `nimbus destroy` against moto, through the very code `make deploy` runs.

The stack is created on a moto server on loopback; then its resources are read
back through the service APIs (moto accepts properties it does not act on, so
the stack's status alone proves little). What moto skips (the bucket policy, the
bucket's public access block, versioning and lifecycle, Secrets Manager resources, rollbacks) is checked
on the template itself in tests/unit/deploy.
"""

from __future__ import annotations

import ast
import base64
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote

import boto3
import pytest

from services.cli import main
from services.deploy.driver import Deployer, DeployResult, Target
from services.deploy.errors import CredentialsError
from services.release import Release, build_wheel


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> Release:
    return build_wheel(tmp_path_factory.mktemp("dist"))


@pytest.fixture
def deployed(
    moto_server: str, release: Release, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Deployer, DeployResult, list[str]]]:
    monkeypatch.setenv("MOTO_IAM_LOAD_MANAGED_POLICIES", "true")
    said: list[str] = []
    deployer = Deployer(
        Target(f"nimbus-{uuid.uuid4().hex[:6]}", region="us-east-1", endpoint_url=moto_server),
        say=said.append,
        sleep=lambda _s: None,
    )
    yield deployer, deployer.deploy(release), said


def _client(name: str, url: str):
    return boto3.client(name, endpoint_url=url, region_name="us-east-1")


def test_a_deployed_stack_has_the_resources_the_issue_asks_for(deployed, release, moto_server):
    deployer, result, said = deployed
    out = result.outputs
    assert result.changed and out["SiteUrl"].startswith("http://")
    assert any(line.startswith("deploy: the site is at http://") for line in said)
    assert any("passes cfn-lint" in line for line in said)

    s3 = _client("s3", moto_server)
    bucket = out["BucketName"]
    rules = s3.get_bucket_encryption(Bucket=bucket)["ServerSideEncryptionConfiguration"]["Rules"]
    assert rules[0]["ApplyServerSideEncryptionByDefault"]["SSEAlgorithm"] == "AES256"
    # moto's CloudFormation sets only a bucket's encryption and tags: its public access block,
    # versioning and lifecycle are checked on the template (tests/unit/deploy).

    rds = _client("rds", moto_server)
    (db,) = rds.describe_db_instances(DBInstanceIdentifier=out["DatabaseInstance"])["DBInstances"]
    assert (db["Engine"], db["StorageEncrypted"], db["PubliclyAccessible"]) == ("mysql", True, False)
    assert db["EngineVersion"].startswith("8.") and db["BackupRetentionPeriod"] >= 1
    # moto's CloudFormation drops ManageMasterUserPassword (the template test checks it);
    # turned on through the RDS API, the secret RDS makes is what deploy reports.
    assert "MasterUserSecret" not in db
    rds.modify_db_instance(DBInstanceIdentifier=db["DBInstanceIdentifier"], ManageMasterUserPassword=True)
    secret = rds.describe_db_instances(DBInstanceIdentifier=db["DBInstanceIdentifier"])["DBInstances"][0][
        "MasterUserSecret"
    ]["SecretArn"]
    assert deployer.deploy(release).outputs["DatabaseSecretArn"] == secret

    ec2 = _client("ec2", moto_server)
    cfn = _client("cloudformation", moto_server)
    physical = {
        r["PhysicalResourceId"]: r["LogicalResourceId"]
        for r in cfn.describe_stack_resources(StackName=deployer.target.stack_name)["StackResources"]
        if r.get("ResourceType") == "AWS::EC2::SecurityGroup"
    }
    groups = {
        g["GroupId"]: g for g in ec2.describe_security_groups(GroupIds=list(physical))["SecurityGroups"]
    }
    # (moto's RDS puts a stack's DB in the default group; the template names DatabaseSecurityGroup.)
    db_group = next(g for g in groups.values() if physical[g["GroupId"]] == "DatabaseSecurityGroup")
    sources = {pair["GroupId"] for rule in db_group["IpPermissions"] for pair in rule["UserIdGroupPairs"]}
    assert {physical[s] for s in sources} == {
        "CrawlerSecurityGroup",
        "CommitterSecurityGroup",
        "SearchSecurityGroup",
    }
    assert all(not rule["IpRanges"] for rule in db_group["IpPermissions"])
    for closed in ("CrawlerSecurityGroup", "CommitterSecurityGroup"):
        group = next(g for g in groups.values() if physical[g["GroupId"]] == closed)
        assert group["IpPermissions"] == [], closed  # workers and committers accept no traffic at all
    for group in groups.values():
        for rule in group["IpPermissions"]:
            assert not (rule.get("FromPort", 0) <= 22 <= rule.get("ToPort", -1)), group["GroupName"]

    asg = _client("autoscaling", moto_server)
    groups_by_role = {
        g["AutoScalingGroupName"].split("-")[-2]: g
        for g in asg.describe_auto_scaling_groups()["AutoScalingGroups"]
        if g["AutoScalingGroupName"].startswith(deployer.target.stack_name)
    }
    assert groups_by_role["CrawlerGroup"]["DesiredCapacity"] == 1
    search = groups_by_role["SearchGroup"]
    assert search["DesiredCapacity"] == 1 and search["TargetGroupARNs"]
    lt_id = search["LaunchTemplate"]["LaunchTemplateId"]
    data = ec2.describe_launch_template_versions(LaunchTemplateId=lt_id)["LaunchTemplateVersions"][0][
        "LaunchTemplateData"
    ]
    assert data["MetadataOptions"]["HttpTokens"] == "required" and data["UserData"]

    elb = _client("elbv2", moto_server)
    (tg,) = elb.describe_target_groups(TargetGroupArns=search["TargetGroupARNs"])["TargetGroups"]
    assert (tg["HealthCheckPath"], tg["Port"]) == ("/healthz", 8000)
    (lb,) = [b for b in elb.describe_load_balancers()["LoadBalancers"] if b["DNSName"] in out["SiteUrl"]]
    listeners = elb.describe_listeners(LoadBalancerArn=lb["LoadBalancerArn"])["Listeners"]
    assert [(x["Port"], x["DefaultActions"][0]["Type"]) for x in listeners] == [(80, "forward")]

    iam = _client("iam", moto_server)
    role = out["EmrInstanceProfile"]
    profile = iam.get_instance_profile(InstanceProfileName=role)["InstanceProfile"]
    (emr_role,) = profile["Roles"]
    names = iam.list_role_policies(RoleName=emr_role["RoleName"])["PolicyNames"]
    document = iam.get_role_policy(RoleName=emr_role["RoleName"], PolicyName=names[0])["PolicyDocument"]
    if isinstance(document, str):  # moto hands back the template's policy as Python's repr
        document = ast.literal_eval(unquote(document))
    resources = [
        r
        for st in document["Statement"]
        for r in ([st["Resource"]] if isinstance(st["Resource"], str) else st["Resource"])
    ]
    assert all(bucket in r for r in resources)  # the EMR instances may touch only the data bucket

    logs = _client("logs", moto_server)
    group = logs.describe_log_groups(logGroupNamePrefix=out["CrawlerLogGroup"])["logGroups"][0]
    assert group["retentionInDays"] == 30


def _policy(iam, role_name: str) -> dict:
    (name,) = iam.list_role_policies(RoleName=role_name)["PolicyNames"]
    document = iam.get_role_policy(RoleName=role_name, PolicyName=name)["PolicyDocument"]
    if isinstance(document, str):  # moto hands back the template's policy as Python's repr
        document = ast.literal_eval(unquote(document))
    return document


def test_the_crawl_cluster_runs_workers_and_two_committers(deployed, moto_server):
    """Read back through Auto Scaling, EC2, IAM, ELBv2 and Logs: the crawler group boots the
    worker role, the committer group is exactly two instances booting the committer role, and
    the load balancer never forwards /metrics."""
    deployer, result, _said = deployed
    stack = deployer.target.stack_name
    resources = _client("cloudformation", moto_server).describe_stack_resources(StackName=stack)
    physical = {  # (moto lists the resources it skips without a physical id)
        r["LogicalResourceId"]: r["PhysicalResourceId"]
        for r in resources["StackResources"]
        if "PhysicalResourceId" in r
    }

    asg, ec2 = _client("autoscaling", moto_server), _client("ec2", moto_server)
    groups = {
        g["AutoScalingGroupName"]: g
        for g in asg.describe_auto_scaling_groups(
            AutoScalingGroupNames=[physical["CrawlerGroup"], physical["CommitterGroup"]]
        )["AutoScalingGroups"]
    }
    committers = groups[physical["CommitterGroup"]]
    assert (committers["MinSize"], committers["MaxSize"], committers["DesiredCapacity"]) == (2, 2, 2)
    assert len(committers["VPCZoneIdentifier"].split(",")) == 2  # one committer per AZ

    def boot(group: dict) -> tuple[dict, str]:
        lt_id = group["LaunchTemplate"]["LaunchTemplateId"]
        (version,) = ec2.describe_launch_template_versions(LaunchTemplateId=lt_id)["LaunchTemplateVersions"]
        data = version["LaunchTemplateData"]
        return data, base64.b64decode(data["UserData"]).decode()

    data, script = boot(committers)
    assert data["InstanceType"] == "t3.small"
    assert "CommitterInstanceProfile" in data["IamInstanceProfile"]["Arn"]
    assert "--role committer " in script and '--metrics-port "9100"' in script and "--seeds" in script
    assert f'--log-group "/nimbus/{stack}/committer"' in script
    _data, script = boot(groups[physical["CrawlerGroup"]])
    assert "--role worker " in script and "--seeds" not in script
    assert f'--log-group "/nimbus/{stack}/crawler"' in script
    (search,) = asg.describe_auto_scaling_groups(AutoScalingGroupNames=[physical["SearchGroup"]])[
        "AutoScalingGroups"
    ]
    _data, script = boot(search)
    assert '--proxy-cidrs "10.40.0.0/20,10.40.16.0/20"' in script  # the load balancer's subnets

    logs = _client("logs", moto_server)
    (group,) = logs.describe_log_groups(logGroupNamePrefix=result.outputs["CommitterLogGroup"])["logGroups"]
    assert group["retentionInDays"] == 30

    # Of the instance roles, only the search role has a secret besides RDS's own (the admin
    # token; moto makes no Secrets Manager resources, so the template test checks the ARN).
    iam = _client("iam", moto_server)
    secret_reads = {}
    for role in ("CrawlerRole", "CommitterRole", "SearchRole"):
        statements = _policy(iam, physical[role])["Statement"]
        secret_reads[role] = sorted(
            s["Sid"] for s in statements if "secretsmanager:GetSecretValue" in s["Action"]
        )
    assert secret_reads == {
        "CrawlerRole": ["DatabaseSecret"],
        "CommitterRole": ["DatabaseSecret"],
        "SearchRole": ["AdminToken", "DatabaseSecret"],
    }

    elb = _client("elbv2", moto_server)
    rules = elb.describe_rules(ListenerArn=physical["HttpListener"])["Rules"]
    hidden = [r for r in rules if not r["IsDefault"]]
    assert [(c["PathPatternConfig"]["Values"], a["Type"], a["FixedResponseConfig"]["StatusCode"])
            for r in hidden for c in r["Conditions"] for a in r["Actions"]] == [
        (["/metrics", "/metrics/*"], "fixed-response", "404")
    ]  # fmt: skip


def test_a_named_prometheus_group_may_scrape_metrics_and_nothing_else_may(deployed, release, moto_server):
    """Closed by default (the test above); naming a Prometheus server's security group through
    an update admits that group, and only it, to the metrics ports."""
    deployer, _result, _said = deployed
    stack = deployer.target.stack_name
    cfn, ec2 = _client("cloudformation", moto_server), _client("ec2", moto_server)

    def groups() -> dict[str, dict]:
        resources = cfn.describe_stack_resources(StackName=stack)["StackResources"]
        ids = {
            r["PhysicalResourceId"]: r["LogicalResourceId"]
            for r in resources
            if r.get("ResourceType") == "AWS::EC2::SecurityGroup"
        }
        found = ec2.describe_security_groups(GroupIds=list(ids))["SecurityGroups"]
        return {ids[g["GroupId"]]: g for g in found}

    vpc = groups()["CrawlerSecurityGroup"]["VpcId"]
    scraper = ec2.create_security_group(GroupName=f"prometheus-{stack}", Description="Prometheus", VpcId=vpc)
    deployer.deploy(release, {"MetricsScraperSecurityGroup": scraper["GroupId"]})
    opened = groups()
    for name, port in (
        ("CrawlerSecurityGroup", 9100),
        ("CommitterSecurityGroup", 9100),
        ("SearchSecurityGroup", 8000),
    ):
        from_scraper = [
            (rule["FromPort"], rule["ToPort"], rule["IpRanges"])
            for rule in opened[name]["IpPermissions"]
            if any(pair["GroupId"] == scraper["GroupId"] for pair in rule["UserIdGroupPairs"])
        ]
        assert from_scraper == [(port, port, [])], name
    assert len(opened["CrawlerSecurityGroup"]["IpPermissions"]) == 1  # still nothing else


def test_a_second_deploy_without_changes_says_so_and_an_update_goes_through(deployed, release, moto_server):
    deployer, _first, said = deployed
    again = deployer.deploy(release)
    assert not again.changed and said[-1].endswith("is up to date: no changes")
    bigger = deployer.deploy(release, {"CrawlerCount": "3"})
    assert bigger.changed and any("change set" in line for line in said)
    groups = _client("autoscaling", moto_server).describe_auto_scaling_groups()["AutoScalingGroups"]
    (crawlers,) = [
        g
        for g in groups
        if g["AutoScalingGroupName"].startswith(f"{deployer.target.stack_name}-CrawlerGroup")
    ]
    assert crawlers["DesiredCapacity"] == 3


def test_cli_deploy_prints_outputs_and_destroy_keeps_the_data(moto_server, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MOTO_IAM_LOAD_MANAGED_POLICIES", "true")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    stack = f"cli-{uuid.uuid4().hex[:6]}"
    argv = ["--stack-name", stack, "--endpoint-url", moto_server]
    assert main(["deploy", *argv, "--dist", str(tmp_path / "dist"), "--param", "SearchCount=2"]) == 0
    printed = capsys.readouterr().out
    out = dict(line.split("\t", 1) for line in printed.splitlines() if "\t" in line)
    assert out["SiteUrl"].startswith("http://") and out["BucketName"]
    exports = dict(line[7:].split("=", 1) for line in printed.splitlines() if line.startswith("export "))
    assert exports["NIMBUS_BLOB_URL"] == f"s3://{out['BucketName']}/nimbus"
    assert (
        exports["NIMBUS_EMR_SERVICE_ROLE"] == out["EmrServiceRole"] and exports["NIMBUS_MR_RUNNER"] == "emr"
    )
    assert not [k for k in exports if "PASSWORD" in k]
    assert main(["deploy", *argv, "--param", "NoSuchThing=1"]) == 2
    assert "no such parameter" in capsys.readouterr().err
    # moto cannot delete a stack with a VPC (moto answers DependencyViolation for the VPC): destroy must say
    # so in one message and leave the data alone; the deletion path itself is AWS's.
    assert main(["destroy", *argv]) == 1
    err = capsys.readouterr().err
    assert f"deleting stack {stack} failed" in err and "nothing was removed" in err
    assert out["BucketName"] in [b["Name"] for b in _client("s3", moto_server).list_buckets()["Buckets"]]


def test_delete_data_empties_every_version_before_deleting_the_bucket(deployed, moto_server):
    deployer, _result, said = deployed
    s3 = _client("s3", moto_server)
    name = f"doomed-{uuid.uuid4().hex[:6]}"
    s3.create_bucket(Bucket=name)
    s3.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": "Enabled"})
    for body in (b"v1", b"v2"):
        s3.put_object(Bucket=name, Key="nimbus/index/segment.nseg", Body=body)
    s3.delete_object(Bucket=name, Key="nimbus/index/segment.nseg")  # a delete marker too
    deployer._empty_and_delete(name)
    assert name not in [b["Name"] for b in s3.list_buckets()["Buckets"]]
    assert said[-1] == f"destroy: deleted bucket {name}"


def test_missing_credentials_or_region_is_one_clear_line(monkeypatch, tmp_path, capsys):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    with pytest.raises(CredentialsError, match="no AWS credentials: set AWS_PROFILE"):
        Deployer(Target("nimbus", region="us-east-1"))
    assert main(["deploy", "--region", "us-east-1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("nimbus deploy: no AWS credentials")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "x")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "y")
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    monkeypatch.delenv("AWS_REGION", raising=False)
    with pytest.raises(CredentialsError, match="no AWS region: set AWS_REGION"):
        Deployer(Target("nimbus"))


def test_wheels_of_the_same_checkout_are_identical(release: Release, tmp_path: Path) -> None:
    again = build_wheel(tmp_path)
    assert again.digest == release.digest and again.wheel_key == release.wheel_key
