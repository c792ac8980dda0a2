"""Shared fixtures: settings on temporary storage, a private MariaDB database,
and a moto S3 server on a loopback port."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.orm import Session, sessionmaker

from services.config import Settings

REPO = Path(__file__).resolve().parent.parent
SAMPLE_DATA = REPO / "data"
MYSQL_BASE_URL = os.environ.get("NIMBUS_TEST_MYSQL_URL", "mysql+pymysql://root@127.0.0.1:3306/test")


@pytest.fixture
def sample_data() -> Path:
    """The repository's sample data (data/README.md says what each file is)."""
    if not SAMPLE_DATA.is_dir():
        pytest.fail(f"sample data not found at {SAMPLE_DATA}: the checkout is incomplete")
    return SAMPLE_DATA


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    """Embedded defaults on a temporary directory (SQLite + file:// blobs, inline runner)."""
    return Settings.of(
        database_url=f"sqlite:///{tmp_path / 'nimbus.db'}",
        blob_url=f"file://{tmp_path / 'blobs'}",
        mr_runner="inline",
        var_dir=tmp_path / "var",
        crawl_delay=0.0,
        allowed_hosts="127.0.0.1",  # never follow a link off this machine
        # Tests that count requests see exactly the ones they cause; the soft-404 tests and the
        # end-to-end pipeline switch the probe back on.
        soft404_probe=False,
    )


@pytest.fixture
def mysql_url() -> Iterator[str]:
    """A fresh MariaDB database for one test, dropped afterwards."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    base = make_url(MYSQL_BASE_URL)
    name = f"nimbus_t_{uuid.uuid4().hex[:12]}"
    admin = create_engine(base)
    try:
        with admin.begin() as conn:
            conn.execute(text(f"CREATE DATABASE {name} CHARACTER SET utf8mb4"))
    except Exception as exc:  # noqa: BLE001 - report any connection failure the same way
        pytest.fail(f"MariaDB at {base.render_as_string()} not reachable ({exc}); run `make services`")
    try:
        yield base.set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.begin() as conn:
            conn.execute(text(f"DROP DATABASE IF EXISTS {name}"))
        admin.dispose()


@pytest.fixture(scope="session")
def moto_server() -> Iterator[str]:
    """A moto server on a free loopback port, with fake credentials for boto3."""
    from moto.server import ThreadedMotoServer

    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


@pytest.fixture
def s3_bucket(moto_server: str) -> str:
    """A new, empty bucket on the moto server; returns its name."""
    import boto3

    name = f"nimbus-{uuid.uuid4().hex[:10]}"
    boto3.client("s3", endpoint_url=moto_server).create_bucket(Bucket=name)
    return name


@pytest.fixture
def sessions(settings: Settings) -> Iterator[sessionmaker[Session]]:
    """Sessions on ``settings``' database (SQLite in the test's directory), schema made."""
    from services.storage.sql.engines import make_engine, session_factory
    from services.storage.sql.schema import init_db

    engine = make_engine(settings.database_url)
    init_db(engine)
    yield session_factory(engine)
    engine.dispose()
