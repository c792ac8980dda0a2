"""Where a deployed Nimbus's database credentials come from: a Secrets Manager secret, read
when a connection opens, not once at start-up.

RDS rotates its managed master secret every 7 days, and a role's own secret may
rotate too. A process that read the password when it started keeps working on its
pooled connections and fails on the first new one after a rotation (search's
``/healthz`` still 200, page info and new index versions failing). So the URL a
process gets from ``resolve_database_url`` names the secret, not the password::

    mysql+pymysql://db.internal:3306/nimbus?charset=utf8mb4&nimbus_secret=arn:aws:secretsmanager:...

and ``make_engine`` fills in user and password for each new connection from
``credentials_for`` (cached for ``SECRET_TTL``, read again at once after the server
refused them: MySQL error 1045). Transactions on open connections never touch
Secrets Manager. The password is never in user data, a unit, an environment file,
the process's environment or the URL a child process is handed.

Which secret: ``NIMBUS_DATABASE_SECRET`` (the role's own user: docs/database.md),
else the RDS-managed master secret of ``NIMBUS_DATABASE_INSTANCE``; ``nimbus
migrate`` and ``nimbus db users`` take ``NIMBUS_DATABASE_ADMIN_SECRET`` (the master)
when it is set. ``NIMBUS_DATABASE_TLS_CA`` adds ``ssl_ca`` (TLS, the server's
certificate and host name verified). A URL in ``NIMBUS_DATABASE_URL`` is used as it
is, apart from ``ssl_ca``: the embedded default and the tests never read a secret.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from sqlalchemy.engine import URL, make_url

from services.config import Settings, SettingsError

log = logging.getLogger(__name__)

DEFAULT_DATABASE_URL = Settings().database_url
# How long a secret read is trusted without the server refusing it: short enough that a
# changed user name is seen within minutes, long enough that a process opening connections in
# a burst reads the secret once (a refusal reads it again at once, whatever the age).
SECRET_TTL = 300.0
RETRY_AFTER_FAILURE = 30.0  # seconds before a failed read is tried again (the old ones meanwhile)
# Secrets Manager calls at connect time: short timeouts, few retries (botocore's defaults, 60 s
# and legacy retries, would hold a new connection for minutes when the endpoint is unreachable).
CLIENT_CONFIG = {"connect_timeout": 5, "read_timeout": 10, "retries": {"max_attempts": 3, "mode": "standard"}}
# The URL's query keys naming the secret (make_engine takes them out before PyMySQL sees them).
SECRET_KEY, REGION_KEY, ENDPOINT_KEY = "nimbus_secret", "nimbus_secret_region", "nimbus_secret_endpoint"
SECRET_QUERY_KEYS = (SECRET_KEY, REGION_KEY, ENDPOINT_KEY)

Client = Callable[[str], Any]  # service name -> boto3 client


@dataclass(frozen=True)
class Credentials:
    username: str
    password: str = field(repr=False)


def parse_secret(text: str, secret_id: str = "the database secret") -> Credentials:
    """The user and password of a secret's JSON (``username``, ``password``: the shape RDS
    and Secrets Manager's MySQL rotation functions write)."""
    try:
        fields = json.loads(text)
        return Credentials(str(fields["username"]), str(fields["password"]))
    except (ValueError, KeyError, TypeError) as exc:
        raise SettingsError(
            f"{secret_id} is not JSON with username and password ({exc.__class__.__name__}): "
            'store it as RDS does, {"username": ..., "password": ...}'
        ) from exc


@dataclass(frozen=True)
class SecretSource:
    """A secret and how to reach Secrets Manager for it (the endpoint only for moto)."""

    secret_id: str
    region: str | None = None
    endpoint: str | None = None

    def query(self) -> dict[str, str]:
        found = {SECRET_KEY: self.secret_id, REGION_KEY: self.region, ENDPOINT_KEY: self.endpoint}
        return {k: v for k, v in found.items() if v}

    @classmethod
    def from_query(cls, query: Mapping[str, str | tuple[str, ...]]) -> SecretSource | None:
        """The source a URL's query names; None for a URL that carries its own password."""

        def one(key: str) -> str | None:
            value = query.get(key)
            return value[-1] if isinstance(value, tuple) else value

        secret = one(SECRET_KEY)
        return cls(secret, one(REGION_KEY), one(ENDPOINT_KEY)) if secret else None


class CachedCredentials:
    """One secret's credentials, read through ``fetch`` at most once per ``ttl`` seconds, and
    again at once when the server refused what was read (``after_refusal``). Shared by every
    engine and thread of a process. When Secrets Manager cannot be reached, the last
    credentials read are used rather than failing the connection."""

    def __init__(
        self,
        fetch: Callable[[], Credentials],
        *,
        ttl: float = SECRET_TTL,
        clock: Callable[[], float] = time.monotonic,
        name: str = "the database secret",
    ) -> None:
        self.fetch, self.ttl, self.clock, self.name = fetch, ttl, clock, name
        self.fetches = 0
        self._lock = threading.Lock()
        self._value: Credentials | None = None
        self._read_at = 0.0

    def get(self) -> Credentials:
        with self._lock:
            if self._value is None or self.clock() - self._read_at >= self.ttl:
                return self._read()
            return self._value

    def after_refusal(self, refused: Credentials) -> Credentials | None:
        """Credentials to try after the server refused ``refused``: the secret read again
        (unless another thread already did); None when it still holds the refused ones (the
        database changed first, the secret not yet: a rotation under way)."""
        with self._lock:
            if self._value == refused:
                try:
                    self._read(fall_back=False)
                except SettingsError:
                    log.warning("cannot read %s again", self.name, exc_info=True)
                    return None
            if self._value == refused:
                return None
            log.warning(
                "the database refused user %s; %s now holds user %s",
                refused.username,
                self.name,
                self._value.username if self._value else "?",
            )
            return self._value

    def _read(self, *, fall_back: bool = True) -> Credentials:
        try:
            value = self.fetch()
        except SettingsError:
            if self._value is None or not fall_back:
                raise
            log.warning("cannot read %s; using the credentials read before", self.name, exc_info=True)
            # Not again at every new connection while Secrets Manager is out of reach.
            self._read_at = self.clock() - self.ttl + min(self.ttl, RETRY_AFTER_FAILURE)
            return self._value
        self.fetches += 1
        self._value, self._read_at = value, self.clock()
        return value


_CACHES: dict[SecretSource, CachedCredentials] = {}
_CACHES_LOCK = threading.Lock()


def credentials_for(source: SecretSource, client: Client | None = None) -> CachedCredentials:
    """The process's one cache of ``source``'s credentials (its reads go through ``client``,
    by default boto3's, the first time the source is asked for)."""
    with _CACHES_LOCK:
        cache = _CACHES.get(source)
        if cache is None:
            make = client or _boto3_client(source.region, source.endpoint)
            made: list[Any] = []  # the client, made on the first read (boto3's import is slow)

            def fetch() -> Credentials:
                if not made:
                    made.append(make("secretsmanager"))
                return read_secret(made[0], source.secret_id)

            cache = _CACHES[source] = CachedCredentials(fetch, name=f"secret {source.secret_id}")
        return cache


def read_secret(secrets: Any, secret_id: str) -> Credentials:
    """``secret_id``'s credentials through the Secrets Manager client ``secrets``."""
    try:
        text = secrets.get_secret_value(SecretId=secret_id)["SecretString"]
    except Exception as exc:  # botocore raises many types; each means the same here
        raise SettingsError(
            f"cannot read secret {secret_id}: {exc}; check the instance role allows "
            "secretsmanager:GetSecretValue on it (and kms:Decrypt on its key)"
        ) from exc
    return parse_secret(text, f"secret {secret_id}")


def read_secret_of(settings: Settings, secret_id: str) -> Credentials:
    """``secret_id``'s credentials, read now (``nimbus db users``: the role users' secrets)."""
    region = settings.aws_region or _arn_region(secret_id)
    return read_secret(_boto3_client(region, settings.aws_endpoint_url)("secretsmanager"), secret_id)


def resolve_database_url(
    settings: Settings, client: Client | None = None, *, admin: bool = False
) -> Settings:
    """``settings`` with ``database_url`` naming where the credentials come from (the module's
    docstring); ``admin``: the master's secret (``NIMBUS_DATABASE_ADMIN_SECRET``) when set.

    The secret is read once here, so a missing permission fails the start, not the first
    query; that read fills the process's cache. Settings with a URL of their own, or not
    deployed, come back unchanged (but for ``ssl_ca`` with ``NIMBUS_DATABASE_TLS_CA``)."""
    deploy = settings.deploy
    tls = _tls_query(deploy.database_tls_ca)
    if settings.database_url != DEFAULT_DATABASE_URL:
        if not tls or not settings.database_url.startswith("mysql"):
            return settings
        url = make_url(settings.database_url).update_query_dict(tls)
        return replace(settings, database_url=url.render_as_string(hide_password=False))
    secret = (admin and deploy.database_admin_secret) or deploy.database_secret
    if not secret and not deploy.database_instance:
        return settings  # the embedded default
    make = client or _boto3_client(settings.aws_region, settings.aws_endpoint_url)
    host, port = deploy.database_host, deploy.database_port
    if not secret or not host:
        found = _describe_instance(make, deploy.database_instance, needed_for=secret)
        secret = secret or _master_secret_arn(found, deploy.database_instance)
        host = host or found["Endpoint"]["Address"]
        port = port or int(found["Endpoint"]["Port"])
    source = SecretSource(secret, settings.aws_region or _arn_region(secret), settings.aws_endpoint_url)
    credentials_for(source, make).get()  # fail now on a missing permission; fills the cache
    query = {"charset": "utf8mb4", **source.query(), **tls}
    url = URL.create("mysql+pymysql", None, None, host, port, deploy.database_name, query)
    return replace(settings, database_url=url.render_as_string(hide_password=False))


def _tls_query(ca: str) -> dict[str, str]:
    if not ca:
        return {}
    if not Path(ca).is_file():
        raise SettingsError(
            f"NIMBUS_DATABASE_TLS_CA={ca!r}: no such file; give the CA bundle that signed the "
            "database's certificate (RDS: https://truststore.pki.rds.amazonaws.com/global/global-bundle.pem)"
        )
    return {"ssl_ca": ca}  # SQLAlchemy passes ssl={"ca": ca}: PyMySQL verifies certificate and host


def _describe_instance(make: Client, instance: str, *, needed_for: str) -> dict[str, Any]:
    if not instance:
        raise SettingsError(
            f"NIMBUS_DATABASE_SECRET={needed_for!r} needs the database's address: set "
            "NIMBUS_DATABASE_HOST (or NIMBUS_DATABASE_INSTANCE to look it up in RDS)"
        )
    try:
        found: list[dict[str, Any]] = make("rds").describe_db_instances(DBInstanceIdentifier=instance)[
            "DBInstances"
        ]
    except Exception as exc:  # botocore raises many types; each means the same here
        raise SettingsError(
            f"cannot describe DB instance {instance} (NIMBUS_DATABASE_INSTANCE): {exc}; check the "
            "instance role allows rds:DescribeDBInstances and AWS_REGION is the stack's region"
        ) from exc
    if not found:
        raise SettingsError(f"DB instance {instance} (NIMBUS_DATABASE_INSTANCE) not found")
    return found[0]


def _master_secret_arn(found: Mapping[str, Any], instance: str) -> str:
    arn = (found.get("MasterUserSecret") or {}).get("SecretArn")
    if not arn:
        raise SettingsError(
            f"DB instance {instance} has no RDS-managed secret (ManageMasterUserPassword): "
            "set NIMBUS_DATABASE_SECRET to a secret of the role's own user"
        )
    return str(arn)


def _arn_region(secret: str) -> str | None:
    """The region of an ARN (``arn:aws:secretsmanager:REGION:...``); None for a plain name."""
    parts = secret.split(":")
    return parts[3] if len(parts) > 3 and parts[0] == "arn" and parts[3] else None


def _boto3_client(region: str | None, endpoint: str | None) -> Client:
    def make(service: str) -> Any:
        import boto3
        from botocore.config import Config

        return boto3.client(
            service, region_name=region, endpoint_url=endpoint, config=Config(**CLIENT_CONFIG)
        )

    return make
