"""TLS to the database: with ``NIMBUS_DATABASE_TLS_CA`` every connection is TLS and verifies
the server's certificate and host name, against a private MariaDB that requires secure
transport (as the stack's RDS parameter group does)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pymysql
import pytest
from sqlalchemy import text
from sqlalchemy.exc import OperationalError

from services.aws_database import resolve_database_url
from services.config import Settings
from services.storage.sql.engines import make_engine
from services.storage.sql.schema import init_db
from tests.integration.database.conftest import FakeSecrets
from tests.integration.database.private_mariadb import PrivateServer, private_mariadb

pytestmark = pytest.mark.mariadb

USER, PASSWORD = "nimbus_search", "tls-test-password"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrivateServer]:
    with private_mariadb(tmp_path_factory.mktemp("mariadb")) as found:
        root = found.root()
        with root.cursor() as cur:
            cur.execute("CREATE DATABASE nimbus CHARACTER SET utf8mb4")
            cur.execute(f"CREATE USER '{USER}'@'%' IDENTIFIED BY '{PASSWORD}'")
            cur.execute(f"GRANT ALL ON nimbus.* TO '{USER}'@'%'")
        root.close()
        yield found


def _url(server: PrivateServer, host: str = "127.0.0.1") -> str:
    return f"mysql+pymysql://{USER}:{PASSWORD}@{host}:{server.port}/nimbus?charset=utf8mb4"


def _cipher(engine) -> str:
    with engine.connect() as conn:
        return str(conn.execute(text("SHOW STATUS LIKE 'Ssl_cipher'")).one()[1])


def test_with_the_ca_every_connection_is_verified_tls(server: PrivateServer) -> None:
    settings = Settings.of(database_url=_url(server), database_tls_ca=str(server.certificates.ca))
    engine = make_engine(resolve_database_url(settings).database_url)
    assert _cipher(engine)  # non-empty: this session is TLS
    init_db(engine)  # the real start of every process, over TLS
    engine.dispose()


def test_the_secret_path_connects_over_tls_too(server: PrivateServer) -> None:
    arn = f"arn:aws:secretsmanager:us-east-1:1:secret:tls-{uuid.uuid4().hex[:8]}"
    secret = FakeSecrets(f'{{"username": "{USER}", "password": "{PASSWORD}"}}')
    settings = Settings.of(
        database_secret=arn,
        database_host="127.0.0.1",
        database_port=server.port,
        database_name="nimbus",
        database_tls_ca=str(server.certificates.ca),
    )
    engine = make_engine(resolve_database_url(settings, secret).database_url)
    assert _cipher(engine)
    engine.dispose()


def test_a_client_without_tls_is_refused(server: PrivateServer) -> None:
    login = {
        "host": "127.0.0.1",
        "port": server.port,
        "user": USER,
        "password": PASSWORD,
        "database": "nimbus",
    }
    with pytest.raises(pymysql.err.OperationalError) as refused:
        pymysql.connect(**login, ssl_disabled=True)
    assert refused.value.args[0] == 1045  # MariaDB says "access denied" for insecure transport
    pymysql.connect(**login, ssl={"ca": str(server.certificates.ca)}).close()  # same login, TLS: in


@pytest.mark.parametrize(
    ("ca", "host", "why"),
    [
        ("other_ca", "127.0.0.1", "certificate verify failed"),  # a CA that did not sign the server's
        ("ca", "localhost", "Hostname mismatch"),  # the right CA, a name the certificate does not hold
    ],
)
def test_an_unverifiable_server_is_refused_naming_the_setting(
    server: PrivateServer, ca: str, host: str, why: str
) -> None:
    path: Path = getattr(server.certificates, ca)
    settings = Settings.of(database_url=_url(server, host), database_tls_ca=str(path))
    engine = make_engine(resolve_database_url(settings).database_url)
    with pytest.raises(OperationalError) as refused:
        _cipher(engine)
    message = str(refused.value)
    assert f"NIMBUS_DATABASE_TLS_CA='{path}'" in message and why in message
    engine.dispose()
