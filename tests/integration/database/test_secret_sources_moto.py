"""A process on AWS finds its database credentials through RDS and Secrets Manager (moto)."""

from __future__ import annotations

import json
import uuid

import boto3
import pytest
from sqlalchemy.engine import make_url

from services.aws_database import Credentials, SecretSource, credentials_for, resolve_database_url
from services.config import Settings, SettingsError


@pytest.fixture
def instance(moto_server: str) -> str:
    rds = boto3.client("rds", endpoint_url=moto_server, region_name="us-east-1")
    name = f"db-{uuid.uuid4().hex[:8]}"
    rds.create_db_instance(
        DBInstanceIdentifier=name,
        DBInstanceClass="db.t4g.micro",
        Engine="mysql",
        MasterUsername="nimbus",
        ManageMasterUserPassword=True,
        AllocatedStorage=20,
    )
    return name


def _settings(moto_server: str, instance: str) -> Settings:
    return Settings.of(
        database_instance=instance,
        aws_region="us-east-1",
        aws_endpoint_url=moto_server,
        database_name="nimbus",
    )


def test_the_url_names_the_instances_managed_secret(moto_server: str, instance: str) -> None:
    settings = resolve_database_url(_settings(moto_server, instance))
    url = make_url(settings.database_url)
    assert url.drivername == "mysql+pymysql" and url.password is None
    assert url.host and url.host.startswith(instance) and url.database == "nimbus"
    rds = boto3.client("rds", endpoint_url=moto_server, region_name="us-east-1")
    arn = rds.describe_db_instances(DBInstanceIdentifier=instance)["DBInstances"][0]["MasterUserSecret"][
        "SecretArn"
    ]
    source = SecretSource.from_query(url.query)
    assert source == SecretSource(arn, "us-east-1", moto_server)
    secrets = boto3.client("secretsmanager", endpoint_url=moto_server, region_name="us-east-1")
    secret = json.loads(secrets.get_secret_value(SecretId=arn)["SecretString"])
    # What each new connection will use, read through boto3 as a process on AWS does.
    cache = credentials_for(source)
    assert cache.get() == Credentials(secret["username"], secret["password"])
    secrets.put_secret_value(SecretId=arn, SecretString=json.dumps({**secret, "password": "rotated"}))
    assert cache.after_refusal(cache.get()) == Credentials(secret["username"], "rotated")


def test_a_missing_secret_names_the_arn_and_the_permission(moto_server: str, instance: str) -> None:
    rds = boto3.client("rds", endpoint_url=moto_server, region_name="us-east-1")
    arn = rds.describe_db_instances(DBInstanceIdentifier=instance)["DBInstances"][0]["MasterUserSecret"][
        "SecretArn"
    ]
    secrets = boto3.client("secretsmanager", endpoint_url=moto_server, region_name="us-east-1")
    secrets.delete_secret(SecretId=arn, ForceDeleteWithoutRecovery=True)
    with pytest.raises(SettingsError, match=f"cannot read secret {arn}.*secretsmanager:GetSecretValue"):
        resolve_database_url(_settings(moto_server, instance))


def test_an_unknown_instance_names_the_variable(moto_server: str) -> None:
    with pytest.raises(SettingsError, match="cannot describe DB instance nope .NIMBUS_DATABASE_INSTANCE."):
        resolve_database_url(_settings(moto_server, "nope"))
