"""The database URL of a deployed Nimbus, assembled from RDS's managed secret at start-up.

RDS keeps the master password in a Secrets Manager secret it rotates itself;
the stack hands instances only the DB instance's name. Each process asks RDS
for the secret's ARN, reads the secret, and builds the SQLAlchemy URL in
memory: the password is never in user data, a unit, an environment file or
the process's environment.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from sqlalchemy.engine import URL

from services.config import Settings, SettingsError

DEFAULT_DATABASE_URL = Settings().database_url


def database_url_from_secret(secret: str, host: str, port: int, name: str) -> str:
    """A ``mysql+pymysql`` URL from the secret's JSON (``username``, ``password``), quoted
    so that any character RDS puts in a password survives."""
    try:
        fields = json.loads(secret)
        username, password = str(fields["username"]), str(fields["password"])
    except (ValueError, KeyError, TypeError) as exc:
        raise SettingsError(
            f"the database secret is not RDS's JSON with username and password ({exc.__class__.__name__})"
        ) from exc
    url = URL.create("mysql+pymysql", username, password, host, port, name, {"charset": "utf8mb4"})
    return url.render_as_string(hide_password=False)


def resolve_database_url(settings: Settings, client: Callable[[str], Any] | None = None) -> Settings:
    """``settings`` with ``database_url`` filled in from the instance's secret, when the
    settings name an instance and no URL; otherwise unchanged."""
    if not settings.deploy.database_instance or settings.database_url != DEFAULT_DATABASE_URL:
        return settings
    make = client or _boto3_client(settings)
    instance = settings.deploy.database_instance
    try:
        found = make("rds").describe_db_instances(DBInstanceIdentifier=instance)["DBInstances"]
    except Exception as exc:  # botocore raises many types; each means the same here
        raise SettingsError(
            f"cannot describe DB instance {instance} (NIMBUS_DATABASE_INSTANCE): {exc}; check the "
            "instance role allows rds:DescribeDBInstances and AWS_REGION is the stack's region"
        ) from exc
    secret_arn = ((found[0].get("MasterUserSecret") or {}).get("SecretArn")) if found else None
    if not secret_arn:
        raise SettingsError(f"DB instance {instance} has no RDS-managed secret (ManageMasterUserPassword)")
    try:
        secret = make("secretsmanager").get_secret_value(SecretId=secret_arn)["SecretString"]
    except Exception as exc:  # as above
        raise SettingsError(
            f"cannot read secret {secret_arn} of DB instance {instance}: {exc}; check the instance role "
            "allows secretsmanager:GetSecretValue on it"
        ) from exc
    host = settings.deploy.database_host or found[0]["Endpoint"]["Address"]
    port = settings.deploy.database_port or int(found[0]["Endpoint"]["Port"])
    url = database_url_from_secret(secret, host, port, settings.deploy.database_name)
    return replace(settings, database_url=url)


def _boto3_client(settings: Settings) -> Callable[[str], Any]:
    import boto3

    def make(service: str) -> Any:
        return boto3.client(service, region_name=settings.aws_region, endpoint_url=settings.aws_endpoint_url)

    return make
