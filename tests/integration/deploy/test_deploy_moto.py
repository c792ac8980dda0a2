"""`nimbus deploy` / `nimbus destroy` against moto, through the very code `make deploy` runs.

The stack is created on a moto server on loopback; then its resources are read
back through the service APIs (moto accepts properties it does not act on, so
the stack's status alone proves little). What moto skips (the bucket policy, the
bucket's public access block, versioning and lifecycle, Secrets Manager resources, alarms,
scaling policies, creation signals and rolling updates, rollbacks) is checked on the
template itself in tests/unit/deploy; destroy's order of operations with stubbed clients
there too (moto cannot delete a stack with a VPC).
"""

from __future__ import annotations

import ast
import base64
import uuid
from urllib.parse import unquote

import boto3
import pytest

from scripts.moto_server import apply_moto_fixes
from services.cli import main
from services.deploy.bundle import ReleaseBundle
from services.deploy.driver import Deployer, DeployResult, Target
from services.deploy.errors import CredentialsError
from services.deploy.teardown import Teardown
from tests.integration.deploy.fake_release import fake_release


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> ReleaseBundle:
    return fake_release(tmp_path_factory.mktemp("dist"))


@pytest.fixture(scope="module", autouse=True)
def _moto_fixed() -> None:
    """moto's CloudFormation bugs that refuse what AWS accepts, worked around in this process's
    moto server as `scripts/moto_server.py` does for `make deploy` against an emulator."""
    apply_moto_fixes()


def _deploy(moto_server: str, release: ReleaseBundle) -> tuple[Deployer, DeployResult, list[str]]:
    said: list[str] = []
    deployer = Deployer(
        Target(f"nimbus-{uuid.uuid4().hex[:6]}", region="us-east-1", endpoint_url=moto_server),
        say=said.append,
        sleep=lambda _s: None,
    )
    return deployer, deployer.deploy(release), said


@pytest.fixture(scope="module")
def deployed(moto_server: str, release: ReleaseBundle) -> tuple[Deployer, DeployResult, list[str]]:
    """One stack for the tests that only read it."""
    return _deploy(moto_server, release)


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
    assert db["EngineVersion"] == "8.4" and db["BackupRetentionPeriod"] >= 1  # the major: RDS picks the minor
    (group,) = db["DBParameterGroups"]
    params = {
        p["ParameterName"]: p["ParameterValue"]
        for p in rds.describe_db_parameters(DBParameterGroupName=group["DBParameterGroupName"])["Parameters"]
        if "ParameterValue" in p
    }
    assert params["require_secure_transport"] == "1" and params["log_output"] == "FILE"
    assert params["slow_query_log"] == "1"
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
        "IndexerSecurityGroup",
        "RotationSecurityGroup",
    }
    assert all(not rule["IpRanges"] for rule in db_group["IpPermissions"])
    for closed in (
        "CrawlerSecurityGroup",
        "CommitterSecurityGroup",
        "IndexerSecurityGroup",
        "EmrMasterSecurityGroup",
        "EmrSlaveSecurityGroup",
        "EmrServiceAccessSecurityGroup",
    ):
        group = next(g for g in groups.values() if physical[g["GroupId"]] == closed)
        assert group["IpPermissions"] == [], closed  # nothing reaches them (EMR adds its own rules)
    emr_groups = {physical[g]: g for g in groups if physical[g].startswith("Emr")}
    assert (
        out["EmrMasterSecurityGroup"],
        out["EmrSlaveSecurityGroup"],
        out["EmrServiceAccessSecurityGroup"],
    ) == (
        emr_groups["EmrMasterSecurityGroup"],
        emr_groups["EmrSlaveSecurityGroup"],
        emr_groups["EmrServiceAccessSecurityGroup"],
    )
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
    assert (search["MinSize"], search["MaxSize"]) == (2, 6) and search["TargetGroupARNs"]
    assert len(search["VPCZoneIdentifier"].split(",")) == 2  # two AZs
    indexer = groups_by_role["IndexerGroup"]
    assert (indexer["MinSize"], indexer["MaxSize"]) == (1, 1)
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
    profile = iam.get_instance_profile(InstanceProfileName=out["EmrInstanceProfile"])["InstanceProfile"]
    (emr_role,) = profile["Roles"]
    # EMR refuses a profile named otherwise than its role (moto would not mind).
    assert profile["InstanceProfileName"] == emr_role["RoleName"]
    assert iam.list_attached_role_policies(RoleName=out["EmrServiceRole"])["AttachedPolicies"] == []
    resources = [
        r
        for st in _policy(iam, emr_role["RoleName"])["Statement"]
        for r in ([st["Resource"]] if isinstance(st["Resource"], str) else st["Resource"])
    ]
    # The EMR instances may touch only the data bucket and read the release bundles.
    assert all(bucket in r or "-artifacts-" in r for r in resources), resources

    # S3 stays off the NAT: a gateway endpoint on both private route tables.
    (endpoint,) = ec2.describe_vpc_endpoints(
        Filters=[
            {"Name": "vpc-id", "Values": [db_group["VpcId"]]},
            {"Name": "vpc-endpoint-type", "Values": ["Gateway"]},
        ]
    )["VpcEndpoints"]
    assert endpoint["ServiceName"] == "com.amazonaws.us-east-1.s3" and len(endpoint["RouteTableIds"]) == 2

    # The release bundle is where ReleasePrefix says, manifest included.
    artifacts = [b["Name"] for b in s3.list_buckets()["Buckets"] if "-artifacts-" in b["Name"]]
    keys = {
        o["Key"]
        for name in artifacts
        for o in s3.list_objects_v2(Bucket=name, Prefix=release.prefix).get("Contents", [])
    }
    assert {f"{release.prefix}/{name}" for name in release.files()} <= keys

    logs = _client("logs", moto_server)
    group = logs.describe_log_groups(logGroupNamePrefix=out["CrawlerLogGroup"])["logGroups"][0]
    assert group["retentionInDays"] == 30


def _policy(iam, role_name: str) -> dict:
    (name,) = iam.list_role_policies(RoleName=role_name)["PolicyNames"]
    document = iam.get_role_policy(RoleName=role_name, PolicyName=name)["PolicyDocument"]
    if isinstance(document, str):  # moto hands back the template's policy as Python's repr
        document = ast.literal_eval(unquote(document))
    return document


def test_each_group_boots_its_role_and_reads_only_its_own_secret(deployed, moto_server):
    """Read back through Auto Scaling, EC2, IAM, ELBv2 and Logs: each group boots its role
    from the release bundle with its own database secret and signals its own group; the
    committers run two (a third only during a rollout); the load balancer never forwards
    /metrics, nor /admin without a certificate."""
    deployer, result, _said = deployed
    stack = deployer.target.stack_name
    resources = _client("cloudformation", moto_server).describe_stack_resources(StackName=stack)
    physical = {  # (moto lists the resources it skips without a physical id)
        r["LogicalResourceId"]: r["PhysicalResourceId"]
        for r in resources["StackResources"]
        if "PhysicalResourceId" in r
    }

    asg, ec2 = _client("autoscaling", moto_server), _client("ec2", moto_server)
    names = [physical[g] for g in ("CrawlerGroup", "CommitterGroup", "SearchGroup", "IndexerGroup")]
    groups = {
        g["AutoScalingGroupName"]: g
        for g in asg.describe_auto_scaling_groups(AutoScalingGroupNames=names)["AutoScalingGroups"]
    }
    committers = groups[physical["CommitterGroup"]]
    assert (committers["MinSize"], committers["MaxSize"], committers["DesiredCapacity"]) == (2, 3, 2)
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
    for group, role, log in (
        ("CrawlerGroup", "worker", "crawler"),
        ("CommitterGroup", "committer", "committer"),
        ("SearchGroup", "search", "search"),
        ("IndexerGroup", "indexer", "indexer"),
    ):
        _data, script = boot(groups[physical[group]])
        assert f"--role {role} " in script and f'--log-group "/nimbus/{stack}/{log}"' in script, role
        assert f'--stack "{stack}" --signal-resource {group} ' in script, role
        assert f'--boot-log-group "/nimbus/{stack}/boot"' in script, role
        assert '--release-url "s3://' in script and "/releases/" in script, role
        assert ("--seeds" in script) == (role == "committer"), role
    _data, script = boot(groups[physical["SearchGroup"]])
    assert '--proxy-cidrs "10.40.0.0/20,10.40.16.0/20"' in script  # the load balancer's subnets
    _data, script = boot(groups[physical["IndexerGroup"]])
    for setting, output in (
        ("NIMBUS_EMR_SERVICE_ROLE", "EmrServiceRole"),
        ("NIMBUS_EMR_INSTANCE_PROFILE", "EmrInstanceProfile"),
        ("NIMBUS_EMR_SUBNET", "EmrSubnetId"),
        ("NIMBUS_EMR_MASTER_SG", "EmrMasterSecurityGroup"),
    ):
        assert f'--env "{setting}={result.outputs[output]}"' in script, setting

    logs = _client("logs", moto_server)
    (group,) = logs.describe_log_groups(logGroupNamePrefix=result.outputs["CommitterLogGroup"])["logGroups"]
    assert group["retentionInDays"] == 30

    # Each role reads its own database user's secret; the search role the admin token too; the
    # indexer also the master user's and the role users' (moto makes no Secrets Manager
    # resources, so the template tests check the ARNs).
    iam = _client("iam", moto_server)
    secret_reads = {}
    for role in ("CrawlerRole", "CommitterRole", "SearchRole", "IndexerRole"):
        statements = _policy(iam, physical[role])["Statement"]
        secret_reads[role] = sorted(
            s["Sid"] for s in statements if "secretsmanager:GetSecretValue" in s["Action"]
        )
    assert secret_reads == {
        "CrawlerRole": ["DatabaseSecret"],
        "CommitterRole": ["DatabaseSecret"],
        "SearchRole": ["AdminToken", "DatabaseSecret"],
        "IndexerRole": ["DatabaseAdmin", "DatabaseUsers"],
    }
    # What every instance role attaches instead of AWS's AmazonSSMManagedInstanceCore (moto
    # makes the policy but ignores ManagedPolicyArns: the template tests check the attachment).
    assert iam.get_policy(PolicyArn=physical["InstanceBasePolicy"])["Policy"]["AttachmentCount"] >= 0

    elb = _client("elbv2", moto_server)
    rules = elb.describe_rules(ListenerArn=physical["HttpListener"])["Rules"]
    hidden = [r for r in rules if not r["IsDefault"]]
    assert sorted((c["PathPatternConfig"]["Values"], a["Type"], a["FixedResponseConfig"]["StatusCode"])
                  for r in hidden for c in r["Conditions"] for a in r["Actions"]) == [
        (["/admin", "/admin/*"], "fixed-response", "404"),  # no certificate: /admin is not for HTTP
        (["/metrics", "/metrics/*"], "fixed-response", "404"),
    ]  # fmt: skip

    # The operator's page and topic (moto makes no alarms: the template tests read them).
    dashboard = _client("cloudwatch", moto_server).get_dashboard(DashboardName=stack)
    assert f"{stack}-crawl-stalled" in dashboard["DashboardBody"]
    topics = [t["TopicArn"] for t in _client("sns", moto_server).list_topics()["Topics"]]
    assert result.outputs["AlarmTopicArn"] in topics


def test_updates_go_through_change_sets_and_keep_what_is_not_named(release, moto_server):
    """A second deploy with nothing changed says so; a changed parameter goes through a change
    set; naming a Prometheus server's security group admits that group, and only it, to the
    metrics ports (closed by default: the test above); values not named again are kept."""
    deployer, _first, said = _deploy(moto_server, release)
    stack = deployer.target.stack_name
    again = deployer.deploy(release)
    assert not again.changed and said[-1].endswith("is up to date: no changes")
    assert f"deploy: release {release.name} is already in" in said[-2]  # the same bundle: no upload
    bigger = deployer.deploy(release, {"CrawlerCount": "3"})
    assert bigger.changed and any("change set" in line for line in said)
    asg = _client("autoscaling", moto_server)

    def crawlers() -> dict:
        (group,) = [
            g
            for g in asg.describe_auto_scaling_groups()["AutoScalingGroups"]
            if g["AutoScalingGroupName"].startswith(f"{stack}-CrawlerGroup")
        ]
        return group

    assert crawlers()["DesiredCapacity"] == 3

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
    assert crawlers()["DesiredCapacity"] == 3  # kept: not named again, not reset to the default


def test_cli_deploy_prints_outputs_and_destroy_keeps_the_data(
    moto_server, release, tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    stack = f"cli-{uuid.uuid4().hex[:6]}"
    argv = ["--stack-name", stack, "--endpoint-url", moto_server]
    assert main(["deploy", *argv, "--release", str(release.directory), "--param", "SearchMinCount=3"]) == 0
    printed = capsys.readouterr().out
    # The same checkout built again is the same release (its name is its content).
    assert f"deploy: uploaded release {release.name} (" in printed
    out = dict(line.split("\t", 1) for line in printed.splitlines() if "\t" in line)
    assert out["SiteUrl"].startswith("http://") and out["BucketName"]
    exports = dict(line[7:].split("=", 1) for line in printed.splitlines() if line.startswith("export "))
    assert exports["NIMBUS_BLOB_URL"] == f"s3://{out['BucketName']}/nimbus"
    assert (
        exports["NIMBUS_EMR_SERVICE_ROLE"] == out["EmrServiceRole"] and exports["NIMBUS_MR_RUNNER"] == "emr"
    )
    assert exports["NIMBUS_EMR_SLAVE_SG"] == out["EmrSlaveSecurityGroup"]
    assert not [k for k in exports if "PASSWORD" in k]
    assert main(["deploy", *argv, "--param", "NoSuchThing=1"]) == 2
    assert "no such parameter" in capsys.readouterr().err
    # moto cannot delete a stack with a VPC (moto answers DependencyViolation for the VPC): destroy must say
    # so in one message and leave the data alone; the deletion path itself is AWS's.
    assert main(["destroy", *argv]) == 1
    err = capsys.readouterr().err
    assert f"deleting stack {stack} failed" in err and "nothing was removed" in err
    assert out["BucketName"] in [b["Name"] for b in _client("s3", moto_server).list_buckets()["Buckets"]]


def test_delete_data_empties_every_version_before_deleting_the_bucket(moto_server):
    s3 = _client("s3", moto_server)
    name = f"doomed-{uuid.uuid4().hex[:6]}"
    s3.create_bucket(Bucket=name)
    s3.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": "Enabled"})
    for body in (b"v1", b"v2"):
        s3.put_object(Bucket=name, Key="nimbus/index/segment.nseg", Body=body)
    s3.delete_object(Bucket=name, Key="nimbus/index/segment.nseg")  # a delete marker too
    said: list[str] = []
    clients = {"rds": None, "emr": None, "ec2": None, "s3": s3}
    Teardown(
        clients, say=said.append, sleep=lambda _s: None, clock=float, poll_seconds=1, timeout_seconds=1
    ).empty_and_delete(name)
    assert name not in [b["Name"] for b in s3.list_buckets()["Buckets"]]
    assert said == [f"destroy: deleted bucket {name}"]


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
