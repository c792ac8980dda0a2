"""Where a deployed process's database credentials come from: the URL names the secret (never
the password), each new connection reads it through a short-lived cache, and a refusal reads
it again at once."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import make_url

from services.aws_database import (
    CachedCredentials,
    Credentials,
    SecretSource,
    credentials_for,
    parse_secret,
    resolve_database_url,
)
from services.config import Settings, SettingsError

HOSTILE = ["p@ss:word/with?odd#chars%", "sp ace&amp;=+", "ünïcødé-🙂", "'\"\\`$(x)"]


@pytest.mark.parametrize("password", HOSTILE)
def test_every_character_of_the_password_survives(password: str) -> None:
    secret = json.dumps({"username": "nimbus", "password": password, "engine": "mysql"})
    assert parse_secret(secret) == Credentials("nimbus", password)
    assert password not in repr(parse_secret(secret))  # never in a log line or a traceback


def test_a_secret_that_is_not_rds_json_is_a_clear_error() -> None:
    with pytest.raises(SettingsError, match="username and password"):
        parse_secret('{"user": "x"}')
    with pytest.raises(SettingsError, match="username and password"):
        parse_secret("not json")


class FakeAws:
    """A boto3 client factory for RDS and Secrets Manager that counts its calls."""

    def __init__(self, secrets: dict[str, dict[str, str]], instances: dict[str, Any] | None = None) -> None:
        self.secrets, self.instances, self.calls = secrets, instances or {}, []

    def __call__(self, service: str) -> FakeAws:
        return self

    def get_secret_value(self, SecretId: str) -> dict[str, str]:  # noqa: N803 - boto3's name
        self.calls.append(("get_secret_value", SecretId))
        return {"SecretString": json.dumps(self.secrets[SecretId])}

    def describe_db_instances(self, DBInstanceIdentifier: str) -> dict[str, Any]:  # noqa: N803
        self.calls.append(("describe_db_instances", DBInstanceIdentifier))
        return {"DBInstances": [self.instances[DBInstanceIdentifier]]}


def _arn(name: str) -> str:
    return f"arn:aws:secretsmanager:eu-west-1:123456789012:secret:{name}-{uuid.uuid4().hex[:6]}"


def test_a_roles_secret_and_host_give_a_url_naming_the_secret_not_the_password() -> None:
    arn = _arn("nimbus-search")
    aws = FakeAws({arn: {"username": "nimbus_search", "password": "pw:1/@"}})
    settings = Settings.of(database_secret=arn, database_host="db.internal", database_name="nimbus")
    url = make_url(resolve_database_url(settings, aws).database_url)
    assert (url.drivername, url.host, url.port, url.database) == (
        "mysql+pymysql",
        "db.internal",
        3306,
        "nimbus",
    )
    assert url.username is None and url.password is None
    assert SecretSource.from_query(url.query) == SecretSource(arn, "eu-west-1", None)
    assert aws.calls == [("get_secret_value", arn)]  # read once now: a missing permission fails the start
    assert credentials_for(SecretSource(arn, "eu-west-1")).get() == Credentials("nimbus_search", "pw:1/@")


def test_without_a_roles_secret_the_instances_managed_secret_is_used() -> None:
    arn = _arn("rds-master")
    instance = {
        "MasterUserSecret": {"SecretArn": arn},
        "Endpoint": {"Address": "db-1.rds.internal", "Port": 3306},
    }
    aws = FakeAws({arn: {"username": "admin", "password": "x"}}, {"db-1": instance})
    url = make_url(resolve_database_url(Settings.of(database_instance="db-1"), aws).database_url)
    assert url.host == "db-1.rds.internal" and url.query["nimbus_secret"] == arn


def test_migrations_take_the_admin_secret_and_the_others_their_own() -> None:
    own, master = _arn("nimbus-indexer"), _arn("master")
    aws = FakeAws(
        {own: {"username": "nimbus_indexer", "password": "a"}, master: {"username": "admin", "password": "b"}}
    )
    settings = Settings.of(database_secret=own, database_admin_secret=master, database_host="db")
    assert make_url(resolve_database_url(settings, aws).database_url).query["nimbus_secret"] == own
    assert (
        make_url(resolve_database_url(settings, aws, admin=True).database_url).query["nimbus_secret"]
        == master
    )


def test_a_secret_without_an_address_names_the_variables() -> None:
    with pytest.raises(SettingsError, match="NIMBUS_DATABASE_HOST"):
        resolve_database_url(Settings.of(database_secret=_arn("x")), FakeAws({}))


def test_the_tls_ca_goes_into_every_mysql_url_and_must_exist(tmp_path: Path) -> None:
    ca = tmp_path / "rds-ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    arn = _arn("tls")
    aws = FakeAws({arn: {"username": "u", "password": "p"}})
    deployed = Settings.of(database_secret=arn, database_host="db", database_tls_ca=str(ca))
    assert make_url(resolve_database_url(deployed, aws).database_url).query["ssl_ca"] == str(ca)
    plain = Settings.of(database_url="mysql+pymysql://u:p@db/nimbus", database_tls_ca=str(ca))
    url = make_url(resolve_database_url(plain).database_url)
    assert (url.password, url.query["ssl_ca"]) == ("p", str(ca))
    with pytest.raises(SettingsError, match="NIMBUS_DATABASE_TLS_CA=.*no such file"):
        resolve_database_url(plain.with_overrides(database_tls_ca=str(tmp_path / "missing.pem")))


def test_settings_without_an_instance_or_with_a_url_are_left_alone() -> None:
    def never(_service: str) -> None:
        raise AssertionError("no AWS call expected")

    plain = Settings()
    assert resolve_database_url(plain, never) is plain
    explicit = Settings.of(database_url="sqlite:///x.db", database_instance="db-1", database_secret="s")
    assert resolve_database_url(explicit, never) is explicit


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _cache(values: list[Credentials | Exception], clock: Clock, ttl: float = 300.0) -> CachedCredentials:
    def fetch() -> Credentials:
        value = values[0] if len(values) == 1 else values.pop(0)
        if isinstance(value, Exception):
            raise value
        return value

    return CachedCredentials(fetch, ttl=ttl, clock=clock)


def test_credentials_are_read_once_per_ttl() -> None:
    clock, old, new = Clock(), Credentials("u", "old"), Credentials("u", "new")
    cache = _cache([old, new], clock, ttl=300)
    assert cache.get() == old and cache.get() == old and cache.fetches == 1
    clock.now = 299.9
    assert cache.get() == old
    clock.now = 300.0
    assert cache.get() == new and cache.fetches == 2


def test_a_refusal_reads_the_secret_again_at_once_and_only_once() -> None:
    clock, old, new = Clock(), Credentials("u", "old"), Credentials("u", "new")
    cache = _cache([old, new], clock)
    used = cache.get()
    assert cache.after_refusal(used) == new and cache.fetches == 2
    # Another connection refused with the old ones meanwhile: the new ones, no third read.
    assert cache.after_refusal(old) == new and cache.fetches == 2


def test_a_refusal_while_the_secret_still_holds_the_refused_password_is_not_retried() -> None:
    clock, old = Clock(), Credentials("u", "old")
    cache = _cache([old], clock)
    assert cache.after_refusal(cache.get()) is None  # the database changed first: a rotation under way
    assert cache.fetches == 2


def test_secrets_manager_out_of_reach_keeps_the_last_credentials() -> None:
    clock, old, tries = Clock(), Credentials("u", "old"), []
    cache = _cache([old, SettingsError("cannot read secret s: throttled")], clock, ttl=300)
    fetch = cache.fetch
    cache.fetch = lambda: tries.append(clock.now) or fetch()
    assert cache.get() == old
    clock.now = 400
    assert cache.get() == old  # stale, but the database may well still take them
    clock.now = 429
    assert cache.get() == old and tries == [0, 400]  # not tried again at every new connection
    clock.now = 430
    assert cache.get() == old and tries == [0, 400, 430]
    assert cache.after_refusal(old) is None  # refused and unreadable: the refusal stands
    first = _cache([SettingsError("cannot read secret s: AccessDenied")], Clock())
    with pytest.raises(SettingsError, match="AccessDenied"):
        first.get()  # nothing read before: the error says what is missing
