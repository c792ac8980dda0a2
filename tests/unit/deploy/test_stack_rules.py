"""What CloudFormation's answers mean, on recorded answers (no AWS, no moto)."""

from __future__ import annotations

import pytest

from services.deploy.errors import TemplateError
from services.deploy.stack import carried_over, failures, is_no_change, outputs, parse_overrides, settings_env

EVENTS = [  # oldest first, as describe_stack_events gives them reversed
    {
        "LogicalResourceId": "nimbus",
        "ResourceType": "AWS::CloudFormation::Stack",
        "ResourceStatus": "CREATE_IN_PROGRESS",
    },
    {"LogicalResourceId": "Vpc", "ResourceType": "AWS::EC2::VPC", "ResourceStatus": "CREATE_COMPLETE"},
    {
        "LogicalResourceId": "Database",
        "ResourceType": "AWS::RDS::DBInstance",
        "ResourceStatus": "CREATE_FAILED",
        "ResourceStatusReason": "Cannot find version 8.4.99 for mysql",
    },
    {
        "LogicalResourceId": "DataBucket",
        "ResourceType": "AWS::S3::Bucket",
        "ResourceStatus": "CREATE_FAILED",
        "ResourceStatusReason": "Resource creation cancelled",
    },
    {
        "LogicalResourceId": "nimbus",
        "ResourceType": "AWS::CloudFormation::Stack",
        "ResourceStatus": "ROLLBACK_IN_PROGRESS",
        "ResourceStatusReason": "The following resource(s) failed to create: [Database, DataBucket].",
    },
    {"LogicalResourceId": "Vpc", "ResourceType": "AWS::EC2::VPC", "ResourceStatus": "DELETE_FAILED"},
]


def test_failures_name_the_real_cause_not_the_echoes() -> None:
    found = failures(EVENTS, "nimbus")
    assert [f.resource for f in found] == ["Database", "Vpc"]
    assert (
        str(found[0]) == "Database (AWS::RDS::DBInstance) CREATE_FAILED: Cannot find version 8.4.99 for mysql"
    )
    assert found[1].reason == "no reason given"


def test_no_change_is_recognised_only_from_a_failed_change_set() -> None:
    reason = "The submitted information didn't contain changes. Submit different information."
    assert is_no_change("FAILED", reason)
    assert is_no_change("FAILED", "No updates are to be performed.")
    assert not is_no_change("FAILED", "Template format error: unresolved resource Foo")
    assert not is_no_change("CREATE_COMPLETE", reason)


def test_overrides_must_be_known_key_value_pairs() -> None:
    assert parse_overrides(
        ["CrawlerCount=3", "SeedUrls=http://a/ http://b/"], {"CrawlerCount", "SeedUrls"}
    ) == {
        "CrawlerCount": "3",
        "SeedUrls": "http://a/ http://b/",
    }
    with pytest.raises(TemplateError, match="give Key=Value"):
        parse_overrides(["CrawlerCount"], {"CrawlerCount"})
    with pytest.raises(TemplateError, match="no such parameter"):
        parse_overrides(["Crawlers=3"], {"CrawlerCount"})


def test_settings_from_outputs_hold_no_password() -> None:
    out = outputs(
        {
            "Outputs": [
                {"OutputKey": k, "OutputValue": v}
                for k, v in {
                    "BucketName": "b",
                    "Region": "eu-west-1",
                    "DatabaseInstance": "db-1",
                    "DatabaseEndpoint": "db.host",
                    "DatabasePort": "3306",
                    "EmrServiceRole": "svc",
                    "EmrInstanceProfile": "prof",
                    "EmrSubnetId": "subnet-1",
                    "EmrMasterSecurityGroup": "sg-1",
                    "EmrSlaveSecurityGroup": "sg-2",
                    "EmrServiceAccessSecurityGroup": "sg-3",
                }.items()
            ]
        }
    )
    env = settings_env(out)
    assert env["NIMBUS_BLOB_URL"] == "s3://b/nimbus" and env["AWS_REGION"] == "eu-west-1"
    assert env["NIMBUS_DATABASE_INSTANCE"] == "db-1"
    assert not [k for k in env if "PASSWORD" in k or k == "NIMBUS_DATABASE_URL"]
    # EMR gets the stack's groups, or it makes its own, which outlive the stack.
    assert (
        env["NIMBUS_EMR_MASTER_SG"],
        env["NIMBUS_EMR_SLAVE_SG"],
        env["NIMBUS_EMR_SERVICE_SG"],
    ) == ("sg-1", "sg-2", "sg-3")


def test_an_update_keeps_the_stacks_values_under_their_current_names() -> None:
    """Values not at their default carry over; an SSM-resolved AMI does not (it is resolved at
    each deploy); values of earlier templates arrive renamed, and the operator is told."""
    declared = {
        "CrawlerCount": {"Default": 1},
        "NatMode": {"Default": "single"},
        "SearchMinCount": {"Default": 2},
        "ImageId": {"Type": "AWS::SSM::Parameter::Value<AWS::EC2::Image::Id>"},
    }
    said: list[str] = []
    previous = {
        "CrawlerCount": "4",
        "NatMode": "gateway",  # the old name of one NAT gateway: now the default, single
        "SearchCount": "3",
        "ReleaseKey": "releases/0.1/x.whl",  # gone from the template
        "ImageId": "ami-123",
    }
    kept = carried_over(previous, declared, {"ImageId"}, say=said.append)
    assert kept == {"CrawlerCount": "4", "SearchMinCount": "3"}
    assert said == ["deploy: parameter SearchCount=3 is now SearchMinCount=3"]
