"""The database tests' fixtures: a private MariaDB user with a password the test changes, a
secret the test rotates, and killing a user's connections (as a failover or a pool recycle
would end them)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.engine import make_url

from tests.conftest import MYSQL_BASE_URL


@dataclass
class DbUser:
    """A MariaDB user with every privilege on one private database, and the root engine."""

    name: str
    password: str
    database: str
    root: Engine  # the server's root user, no database
    root_url: str  # the root user on the private database

    def set_password(self, password: str) -> None:
        with self.root.begin() as conn:
            conn.execute(text(f"ALTER USER '{self.name}'@'%' IDENTIFIED BY :pw"), {"pw": password})
        self.password = password

    def kill_connections(self) -> int:
        """End every connection of the user (MariaDB's KILL); how many there were."""
        with self.root.connect() as conn:
            ids = conn.execute(
                text("SELECT ID FROM information_schema.PROCESSLIST WHERE USER = :u"), {"u": self.name}
            ).scalars()
            killed = 0
            for id_ in list(ids):
                try:
                    conn.exec_driver_sql(f"KILL CONNECTION {int(id_)}")
                    killed += 1
                except Exception:  # noqa: BLE001 - it ended by itself meanwhile
                    pass
        return killed

    def connections(self) -> int:
        with self.root.connect() as conn:
            return int(
                conn.execute(
                    text("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER = :u"),
                    {"u": self.name},
                ).scalar()
                or 0
            )

    @property
    def secret(self) -> str:
        return json.dumps({"username": self.name, "password": self.password, "engine": "mysql"})


@pytest.fixture
def db_user(mysql_url: str) -> Iterator[DbUser]:
    url = make_url(mysql_url)
    root = create_engine(url.set(database=None))
    user = DbUser(f"nt_{uuid.uuid4().hex[:10]}", f"pw-{uuid.uuid4().hex}", str(url.database), root, mysql_url)
    with root.begin() as conn:
        conn.execute(text(f"CREATE USER '{user.name}'@'%' IDENTIFIED BY :pw"), {"pw": user.password})
        conn.execute(text(f"GRANT ALL ON `{user.database}`.* TO '{user.name}'@'%'"))
    try:
        yield user
    finally:
        with root.begin() as conn:
            conn.execute(text(f"DROP USER IF EXISTS '{user.name}'@'%'"))
        root.dispose()


def server_address() -> tuple[str, int]:
    base = make_url(MYSQL_BASE_URL)
    return base.host or "127.0.0.1", base.port or 3306


class FakeSecrets:
    """A Secrets Manager client holding one secret's value, counting reads (for tests that need
    no moto: the moto tests read through boto3)."""

    def __init__(self, value: str) -> None:
        self.value, self.reads = value, 0

    def __call__(self, _service: str) -> FakeSecrets:
        return self

    def get_secret_value(self, SecretId: str) -> dict[str, Any]:  # noqa: N803 - boto3's name
        self.reads += 1
        return {"SecretString": self.value}
