"""What CloudFormation's answers mean, on recorded answers (no AWS, no moto)."""

from __future__ import annotations

import pytest

from services.deploy.errors import TemplateError
from services.deploy.stack import failures, is_no_change, outputs, parse_overrides, settings_env

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
                }.items()
            ]
        }
    )
    env = settings_env(out)
    assert env["NIMBUS_BLOB_URL"] == "s3://b/nimbus" and env["AWS_REGION"] == "eu-west-1"
    assert env["NIMBUS_DATABASE_INSTANCE"] == "db-1"
    assert not [k for k in env if "PASSWORD" in k or k == "NIMBUS_DATABASE_URL"]
