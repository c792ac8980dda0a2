"""What a deployment hands its processes: the stack's outputs that are not a backend URL.

``nimbus deploy`` prints them as ``export`` lines (``services.deploy.stack.settings_env``),
and each instance's user data writes the database's into its environment: the
RDS instance whose managed secret holds the database password, and the roles
and subnet an EMR index build runs with.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DeploySettings:
    # On AWS: the RDS instance whose managed secret holds the master password. When it (or
    # database_secret) is set and database_url is not, the URL names the secret and each new
    # connection reads it (services/aws_database.py): the password never sits in a file, an
    # environment block or a URL.
    database_instance: str = ""
    database_host: str = ""
    database_port: int = 3306
    database_name: str = "nimbus"
    # This role's own database user (docs/database.md): the ARN of a secret holding JSON
    # ``username`` and ``password``; "" takes the RDS-managed master secret of
    # database_instance. Read when a connection opens (cached a few minutes) and again after the
    # server refused it: rotations need no restart.
    database_secret: str = ""
    # The master user's secret, for `nimbus migrate` and `nimbus db users` only (the indexer).
    database_admin_secret: str = ""
    # The secrets `nimbus db users` sets each role user's password from (the stack makes them).
    database_worker_secret: str = ""
    database_committer_secret: str = ""
    database_search_secret: str = ""
    database_indexer_secret: str = ""
    # The CA bundle that signed the database server's certificate ("": no TLS): with it, every
    # connection is TLS, the certificate and the host name are verified (RDS: its global bundle).
    database_tls_ca: str = ""
    # Where EMR index builds run (`nimbus index --runner emr`): the stack's roles and subnet.
    emr_service_role: str = ""
    emr_instance_profile: str = ""
    emr_subnet: str = ""
    # The stack's EMR-managed security groups (master, core/task nodes, service access in a
    # private subnet): named so EMR does not create its own, which would block deleting the VPC.
    emr_master_sg: str = ""
    emr_slave_sg: str = ""
    emr_service_sg: str = ""
    # s3://ARTIFACTS/releases/<version>-<digest12>/: this release's bundle (wheel, wheelhouse,
    # hash-pinned requirements), which EMR nodes install instead of a wheel built from a checkout.
    release_url: str = ""
    # CloudWatch custom metrics (services/cloudwatch.py): the namespace processes publish to
    # ("" publishes nothing: the embedded default), with the stack's name as their dimension,
    # which the stack's alarms and dashboard read.
    cloudwatch_namespace: str = ""
    stack_name: str = ""

    def validate(self) -> None:
        """Nothing to check: empty values mean "not deployed" (their users say what is missing)."""
