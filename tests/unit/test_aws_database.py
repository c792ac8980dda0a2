"""The database URL built from RDS's managed secret keeps any password intact."""

from __future__ import annotations

import json

import pytest
from sqlalchemy.engine import make_url

from services.aws_database import database_url_from_secret, resolve_database_url
from services.config import Settings, SettingsError

HOSTILE = ["p@ss:word/with?odd#chars%", "sp ace&amp;=+", "ünïcødé-🙂", "'\"\\`$(x)"]


@pytest.mark.parametrize("password", HOSTILE)
def test_every_character_of_the_password_survives_the_url(password: str) -> None:
    secret = json.dumps({"username": "nimbus", "password": password, "engine": "mysql"})
    url = make_url(database_url_from_secret(secret, "db.example.internal", 3306, "nimbus"))
    assert (url.drivername, url.username, url.password) == ("mysql+pymysql", "nimbus", password)
    assert (url.host, url.port, url.database) == ("db.example.internal", 3306, "nimbus")
    assert url.query["charset"] == "utf8mb4"


def test_a_secret_that_is_not_rds_json_is_a_clear_error() -> None:
    with pytest.raises(SettingsError, match="username and password"):
        database_url_from_secret('{"user": "x"}', "h", 3306, "n")
    with pytest.raises(SettingsError, match="username and password"):
        database_url_from_secret("not json", "h", 3306, "n")


def test_settings_without_an_instance_or_with_a_url_are_left_alone() -> None:
    def never(_service: str) -> None:
        raise AssertionError("no AWS call expected")

    plain = Settings()
    assert resolve_database_url(plain, never) is plain
    explicit = Settings.of(database_url="sqlite:///x.db", database_instance="db-1")
    assert resolve_database_url(explicit, never) is explicit
