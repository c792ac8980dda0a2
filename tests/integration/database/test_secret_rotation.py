"""A password rotation while the search service and a crawler run (issue 29): both carry on.

Both are real processes (``nimbus serve``, ``nimbus crawl``) configured as on AWS: the
database user's password is only in a Secrets Manager secret (moto), named by
``NIMBUS_DATABASE_SECRET``. The test then rotates as RDS and Secrets Manager's rotation
functions do (the user's password in the database first, the secret's value after) and ends
every connection of the user, as a failover or the pool's recycling would. Without reading the
secret again, every new connection would be refused from then on: the crawler would stop
committing, and search would keep answering ``/healthz`` while page info, ``/admin`` and new
index versions failed. The test checks the opposite of each.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import boto3
import httpx
import pytest
from sqlalchemy import func, select

from services.crawler.cluster import heartbeat
from services.storage.sql.engines import make_engine, session_factory
from services.storage.sql.models import Document
from services.storage.sql.schema import init_db
from tests.integration.crawler.loopback_http import QuietHandler
from tests.integration.crawler.loopback_http import serve as serve_http
from tests.integration.database.conftest import DbUser, server_address
from tests.polling import wait_for

pytestmark = pytest.mark.mariadb

NIMBUS = [sys.executable, "-m", "services.cli"]
REPO = Path(__file__).resolve().parents[3]


@contextmanager
def endless_site() -> Iterator[str]:
    """Pages /0, /1, ... each linking the next three: a crawl that lasts until it is stopped."""

    class Handler(QuietHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            if self.path == "/robots.txt":
                body = b"User-agent: *\nAllow: /\n"
            else:
                n = int(self.path.strip("/") or 0)
                links = " ".join(f'<a href="/{m}">next {m}</a>' for m in range(n + 1, n + 4))
                text = f"<p>Page {n} about rivers and the water of rotation number {n * 7}.</p>{links}"
                body = f"<html lang=en><title>River {n}</title><body>{text}</body></html>".encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    httpd, base = serve_http(Handler)
    try:
        yield base
    finally:
        httpd.shutdown()
        httpd.server_close()


def _env(tmp_path: Path, user: DbUser, secret_arn: str, moto: str) -> dict[str, str]:
    host, port = server_address()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NIMBUS_", "AWS_"))}
    env.update(
        # As /etc/nimbus/nimbus.env on an instance: where the database is and which secret; no password.
        NIMBUS_DATABASE_SECRET=secret_arn,
        NIMBUS_DATABASE_HOST=host,
        NIMBUS_DATABASE_PORT=str(port),
        NIMBUS_DATABASE_NAME=user.database,
        AWS_ENDPOINT_URL=moto,
        AWS_REGION="us-east-1",
        AWS_ACCESS_KEY_ID="testing",
        AWS_SECRET_ACCESS_KEY="testing",
        NIMBUS_BLOB_URL=f"file://{tmp_path / 'blobs'}",
        NIMBUS_VAR_DIR=str(tmp_path / "var"),
        NIMBUS_MR_RUNNER="inline",
        NIMBUS_ALLOWED_HOSTS="127.0.0.1",
        NIMBUS_CRAWL_DELAY="0.1",  # about ten pages a second: the crawl spans the rotation
        NIMBUS_SITEMAPS="false",
        NIMBUS_SOFT404_PROBE="false",
        NIMBUS_HEARTBEAT_SECONDS="0.5",
        NIMBUS_FLUSH_INTERVAL="0.3",
        NIMBUS_BATCH_SIZE="4",
        NIMBUS_RATE_LIMIT="off",
        NIMBUS_ADMIN_TOKEN="admin-token-for-the-test",
        PYTHONPATH=str(REPO),
    )
    return env


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_search_and_a_crawler_carry_on_through_a_password_rotation(
    db_user: DbUser, moto_server: str, tmp_path: Path
) -> None:
    secrets = boto3.client("secretsmanager", endpoint_url=moto_server, region_name="us-east-1")
    arn = secrets.create_secret(Name=f"nimbus-test-{uuid.uuid4().hex[:8]}", SecretString=db_user.secret)[
        "ARN"
    ]
    root = make_engine(db_user.root_url)
    init_db(root)  # the schema, as `nimbus migrate` on the indexer makes it
    sessions = session_factory(root)

    def documents() -> int:
        with sessions() as session:
            return int(session.scalar(select(func.count()).select_from(Document)) or 0)

    env = _env(tmp_path, db_user, arn, moto_server)
    logs = tmp_path / "logs"
    logs.mkdir()
    web = f"http://127.0.0.1:{_free_port()}"
    with endless_site() as site, httpx.Client(base_url=web, timeout=10) as http:
        crawler = subprocess.Popen(
            [*NIMBUS, "crawl", f"{site}/0", "--quiet", "--max-pages", "100000", "--max-depth", "100000"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=(logs / "crawl.err").open("w"),
        )
        search = subprocess.Popen(
            [*NIMBUS, "serve", "--port", web.rsplit(":", 1)[1]],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=(logs / "serve.err").open("w"),
        )
        try:
            wait_for(lambda: documents() >= 8, timeout=60, what="the crawler's first pages")
            subprocess.run([*NIMBUS, "index", "--quiet"], env=env, check=True, capture_output=True)

            def serving() -> int:
                try:
                    return int(http.get("/healthz").json().get("index_version") or 0)
                except httpx.HTTPError:
                    return 0

            wait_for(lambda: serving() == 1, timeout=60, what="search serving index version 1")
            assert http.get("/api/page/1").status_code == 200
            assert crawler.poll() is None and db_user.connections() >= 2  # both pools hold connections

            # The rotation: the database's password first, then the secret; then every open
            # connection ends, so what follows needs new ones.
            db_user.set_password("rotated-" + uuid.uuid4().hex)
            secrets.put_secret_value(SecretId=arn, SecretString=db_user.secret)
            at_rotation = documents()
            assert db_user.kill_connections() >= 2

            # The crawler carries on committing pages.
            wait_for(lambda: documents() >= at_rotation + 8, timeout=60, what="pages committed after it")
            assert crawler.poll() is None
            # Search serves page info of a page committed after the rotation, and the dashboard.
            with sessions() as session:
                newest = int(session.scalar(select(func.max(Document.doc_num))) or 0)
            info = http.get(f"/api/page/{newest}")
            assert info.status_code == 200, info.text
            bearer = {"Authorization": "Bearer admin-token-for-the-test"}
            assert http.get("/admin/api/status", headers=bearer).status_code == 200
            # A new index version, published with the new credentials, is picked up.
            subprocess.run([*NIMBUS, "index", "--quiet"], env=env, check=True, capture_output=True)
            wait_for(lambda: serving() == 2, timeout=60, what="search serving index version 2")
            assert http.get("/api/search", params={"q": "rivers"}).status_code == 200

            with sessions.begin() as session:  # the operator's stop, read at the next heartbeat
                heartbeat.command(session, "stop", time.time())
            assert crawler.wait(timeout=60) == 0
        finally:
            for process in (crawler, search):
                if process.poll() is None:
                    process.terminate()
                    process.wait(timeout=30)
    root.dispose()
    # Each process was refused once with the old password and read the secret again.
    for name in ("crawl.err", "serve.err"):
        said = (logs / name).read_text()
        assert "the database refused user" in said, f"{name}:\n{said[-3000:]}"
        assert "Traceback" not in said, f"{name}:\n{said[-3000:]}"
    assert json.loads(db_user.secret)["password"].startswith("rotated-")
