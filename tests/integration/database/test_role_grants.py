"""Each role connects as its own MariaDB user with only the grants docs/database.md lists
(``services.storage.sql.grants``), made by ``nimbus db users`` from the roles' secrets (moto):
each role's real code path works as its user, and what it must not do is refused."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import boto3
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, func, select, text, update
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError

from services.admin import operations
from services.admin.app import create_app
from services.cli import main
from services.config import Settings
from services.crawler.cluster import heartbeat
from services.demo.sampleweb import Resource, Site, SiteServer
from services.indexing.build import build_index
from services.indexing.delta_build import publish_delta
from services.indexing.incremental import update_index
from services.storage.errors import MigrationError
from services.storage.sql import grants
from services.storage.sql.engines import make_engine, session_factory
from services.storage.sql.grants import ROLES, sync_grants
from services.storage.sql.models import BlockedHost, CrawlControl, Document, IndexBuild, IndexVersion
from services.storage.sql.schema import init_db
from tests.integration.admin.pages import store_pages
from tests.polling import wait_for

pytestmark = pytest.mark.mariadb

REPO = Path(__file__).resolve().parents[3]
PAGES = 6
TOKEN = "grants-admin-token"


@dataclass
class Roles:
    prefix: str  # the users are PREFIX + role (unique: the MariaDB server is shared)
    root_url: str
    urls: dict[str, str]  # role -> a URL connecting as its user


@pytest.fixture
def roles(mysql_url: str, moto_server: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Roles]:
    prefix = f"nt{uuid.uuid4().hex[:6]}_"
    init_db(make_engine(mysql_url))  # the schema, as the master's `nimbus migrate` makes it
    secrets = boto3.client("secretsmanager", endpoint_url=moto_server, region_name="us-east-1")
    passwords = {role: f"{role}-{uuid.uuid4().hex}" for role in ROLES}
    args = ["db", "users", "--database-url", mysql_url, "--user-prefix", prefix]
    for role, password in passwords.items():
        arn = secrets.create_secret(
            Name=f"{prefix}{role}", SecretString=f'{{"username": "{prefix}{role}", "password": "{password}"}}'
        )["ARN"]
        args += [f"--{role}-secret", arn]
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_server)
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    base = make_url(mysql_url)
    root = create_engine(base.set(database=None))
    try:
        assert main(args) == 0
        urls = {
            role: base.set(username=f"{prefix}{role}", password=passwords[role]).render_as_string(
                hide_password=False
            )
            for role in ROLES
        }
        yield Roles(prefix, mysql_url, urls)
    finally:
        with root.begin() as conn:
            for role in ROLES:
                conn.execute(text(f"DROP USER IF EXISTS '{prefix}{role}'@'%'"))
        root.dispose()


def _site() -> SiteServer:
    links = "".join(f"<a href='/p{i}'>page {i}</a> " for i in range(1, PAGES))
    pages = {"/": Resource("text/html", f"<title>Rivers</title><p>rivers home</p>{links}".encode())}
    for i in range(1, PAGES):
        pages[f"/p{i}"] = Resource(
            "text/html", f"<title>River {i}</title><p>river {i} and its water</p>".encode()
        )
    return SiteServer(Site("rivers", pages)).start()


def _env(url: str, tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NIMBUS_")}
    env.update(
        NIMBUS_DATABASE_URL=url,
        NIMBUS_BLOB_URL=f"file://{tmp_path / 'blobs'}",
        NIMBUS_VAR_DIR=str(tmp_path / "var"),
        NIMBUS_ALLOWED_HOSTS="127.0.0.1",
        NIMBUS_CRAWL_DELAY="0",
        NIMBUS_SITEMAPS="false",
        NIMBUS_SOFT404_PROBE="false",
        NIMBUS_HEARTBEAT_SECONDS="0.5",
        NIMBUS_FLUSH_INTERVAL="0.3",
        NIMBUS_BATCH_SIZE="2",
        PYTHONPATH=str(REPO),
    )
    return env


def _nimbus(*args: str) -> list[str]:
    return [sys.executable, "-m", "services.cli", *args]


def test_each_role_does_its_work_as_its_own_user(roles: Roles, settings: Settings, tmp_path: Path) -> None:
    root = session_factory(make_engine(roles.root_url))
    site = _site()
    try:
        # The crawl cluster: the committer seeds and commits, the worker leases, fetches, acknowledges.
        committer_env, worker_env = (
            _env(roles.urls["committer"], tmp_path),
            _env(roles.urls["worker"], tmp_path),
        )
        subprocess.run(
            _nimbus("crawl", "seed", site.origin + "/"), env=committer_env, check=True, capture_output=True
        )
        committer = subprocess.Popen(
            _nimbus("crawl", "committer"), env=committer_env, stderr=subprocess.PIPE, text=True
        )
        worker = subprocess.Popen(
            _nimbus("crawl", "worker", "--quiet", "--max-pages", str(PAGES)),
            env=worker_env,
            stderr=subprocess.PIPE,
            text=True,
        )

        def committed() -> int:
            with root() as session:
                return int(session.scalar(select(func.count()).select_from(Document)) or 0)

        try:
            wait_for(
                lambda: committed() == PAGES or committer.poll() is not None, timeout=60, what="the pages"
            )
            with root.begin() as session:
                heartbeat.command(session, "stop", time.time())
            _, worker_err = worker.communicate(timeout=60)
            _, committer_err = committer.communicate(timeout=60)
        finally:
            for process in (worker, committer):
                if process.poll() is None:
                    process.kill()
        assert (worker.returncode, committer.returncode) == (0, 0), worker_err + committer_err
        assert "denied" not in worker_err + committer_err
        assert committed() == PAGES
    finally:
        site.stop()

    # The indexer builds and publishes (twice: the second replaces PageRank, retires version 1).
    as_indexer = settings.with_overrides(
        database_url=roles.urls["indexer"], blob_url=f"file://{tmp_path / 'blobs'}"
    )
    build_index(as_indexer, progress=False)
    assert build_index(as_indexer, progress=False).num_docs == PAGES
    # ... and updates it with what was committed since (as if the last page were recrawled).
    with root.begin() as session:
        session.execute(update(Document).where(Document.doc_num == PAGES - 1).values(commit_seq=10**6))
    delta = publish_delta(as_indexer, progress=False)  # a delta segment, then the merge of it
    assert delta.version_id is not None and delta.new_documents == 1
    updated = update_index(as_indexer, progress=False, deltas_only=True)
    assert updated.version_id is not None and updated.new_documents == 1
    with session_factory(make_engine(roles.urls["indexer"])).begin() as session:
        session.add(IndexBuild(state="succeeded", requested_at=time.time(), finished_at=time.time()))

    # Search serves results and page info; its dashboard reads the crawl and writes the operator's word.
    as_search = as_indexer.with_overrides(database_url=roles.urls["search"], admin_token=TOKEN)
    with TestClient(create_app(as_search, recheck_seconds=0)) as client:
        assert client.get("/healthz").json()["index_version"] == 4
        assert client.get("/api/search", params={"q": "river"}).json()["total"] >= 1
        assert client.get("/api/page/1").status_code == 200
        assert (
            client.get("/admin/api/status", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
        )
        assert client.post("/admin/login", data={"token": TOKEN}, follow_redirects=False).status_code == 303
        csrf = re.search(r'name="csrf" value="([0-9a-f]+)"', client.get("/admin").text)
        assert csrf
        for path, form in [
            ("/admin/command", {"action": "pause"}),
            ("/admin/seed", {"urls": f"{site.origin}/p1", "recrawl": "1"}),
            ("/admin/block", {"hosts": "spam.test"}),
            ("/admin/block", {"hosts": "spam.test", "action": "unblock"}),
            # A purge: the crawled pages marked removed under a ledger seq of their own.
            ("/admin/block", {"hosts": site.origin, "purge": "1"}),
            ("/admin/block", {"hosts": site.origin, "action": "unblock"}),
        ]:
            done = client.post(path, data={**form, "csrf": csrf.group(1)}, follow_redirects=False)
            assert done.status_code == 303, (path, done.text)
    with session_factory(make_engine(roles.urls["search"])).begin() as session:  # "index now"
        session.add(IndexBuild(state="requested", requested_at=time.time(), requested_by="admin"))
    with root() as session:
        assert session.get(CrawlControl, "paused") is not None
        assert session.scalar(select(func.count()).select_from(BlockedHost)) == 0
        assert session.scalar(select(func.count()).select_from(IndexVersion)) == 2
        removed = select(func.count()).select_from(Document).where(Document.removed_at.is_not(None))
        assert session.scalar(removed) == PAGES


FORBIDDEN = [
    ("search", "DELETE FROM documents"),
    ("search", "UPDATE index_versions SET active = 1"),
    # A purge sets removed_at and commit_seq (column grants): no other column of a document,
    # nor the ledger's order or what a committer commits from, nor a counter's name.
    ("search", "UPDATE documents SET url = 'http://evil.test/'"),
    ("search", "UPDATE documents SET record_block = 'records/evil.rec.gz', record_offset = 0"),
    ("search", "INSERT INTO documents (url_id) VALUES ('x')"),
    ("search", "INSERT INTO fetch_batches (seq, state) VALUES (1000000, 'committed')"),
    ("search", "INSERT INTO fetch_batches (state, manifest) VALUES ('leased', 'acks/evil.json')"),
    ("search", "UPDATE fetch_batches SET state = 'committed'"),
    ("search", "UPDATE crawl_counters SET name = 'x'"),
    ("worker", "CREATE TABLE stolen (x INT)"),
    ("worker", "SELECT url FROM documents"),
    ("committer", "DROP TABLE index_versions"),
    ("committer", "DELETE FROM pagerank"),
    ("indexer", "INSERT INTO frontier (url_id) VALUES ('x')"),
    ("indexer", "ALTER TABLE documents ADD COLUMN x INT"),
]


def test_what_a_role_must_not_do_is_refused(roles: Roles) -> None:
    for role, statement in FORBIDDEN:
        engine = create_engine(roles.urls[role])
        with pytest.raises(DBAPIError) as refused, engine.begin() as conn:
            conn.execute(text(statement))
        # 1143: refused for a column (the role has a column grant on the table)
        assert refused.value.orig.args[0] in {1142, 1143, 1044}, (role, statement, refused.value)
        engine.dispose()


def test_only_the_master_changes_the_schema_and_the_grants_follow_it(
    roles: Roles, capsys: pytest.CaptureFixture[str]
) -> None:
    as_master = ["--database-url", roles.root_url, "--user-prefix", roles.prefix]
    assert main(["migrate", "--to", "0005", *as_master]) == 0  # back before index_builds (a rollback)
    # index_builds (S I U), 0007's tables (S each) and the purge's UPDATE of 0009's and 0010's
    # columns of documents leave the search role's grants.
    assert (
        f"{roles.prefix}search: 0 privileges granted, 8 revoked; not in this schema: "
        "archive_batches, archive_bundles, documents.commit_seq, documents.removed_at, index_builds, "
        "url_aliases"
    ) in capsys.readouterr().out
    worker = make_engine(roles.urls["worker"])
    with pytest.raises(MigrationError, match="may not change the database's schema.*nimbus migrate"):
        init_db(worker)  # a role's start finds the schema behind: it may not migrate it
    assert main(["migrate", *as_master]) == 0  # the master migrates; the grants follow the new table
    assert f"{roles.prefix}search: 8 privileges granted, 0 revoked" in capsys.readouterr().out
    init_db(worker)
    with session_factory(make_engine(roles.urls["search"])).begin() as session:
        session.add(IndexBuild(state="requested", requested_at=time.time(), requested_by="admin"))
    # A role's own `nimbus migrate` (a unit's ExecStartPre) with nothing to do: fine, grants untouched.
    assert main(["migrate", "--database-url", roles.urls["worker"], "--user-prefix", roles.prefix]) == 0
    assert "nothing to do" in capsys.readouterr().out


def _privileges(root_url: str, user: str) -> set[tuple[str, str, str]]:
    """(table, privilege, column or "") of ``user`` as the server lists them."""
    engine = create_engine(root_url)
    with engine.connect() as conn:
        found = {
            (str(t), str(p), str(c))
            for t, p, c in conn.execute(
                text(
                    "SELECT TABLE_NAME, PRIVILEGE_TYPE, '' FROM information_schema.TABLE_PRIVILEGES "
                    "WHERE GRANTEE = :g UNION ALL SELECT TABLE_NAME, PRIVILEGE_TYPE, COLUMN_NAME "
                    "FROM information_schema.COLUMN_PRIVILEGES WHERE GRANTEE = :g"
                ),
                {"g": f"'{user}'@'%'"},
            )
        }
    engine.dispose()
    return found


# The search role's grants before they were narrowed to the columns a purge writes.
WHOLE_TABLES = {"documents": ("SELECT", "UPDATE"), "crawl_counters": ("SELECT", "INSERT", "UPDATE")}
WHOLE_TABLES["fetch_batches"] = ("SELECT", "INSERT")


def test_a_whole_table_grant_of_the_last_release_is_narrowed_to_columns(
    roles: Roles, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The release before this one granted the search role UPDATE on all of documents, INSERT
    and UPDATE on crawl_counters, INSERT on fetch_batches. ``nimbus migrate`` of this release
    revokes them and grants the columns (a table's REVOKE takes its columns' privilege with
    it: the columns come after), and a purge works with what is left."""
    user = f"{roles.prefix}search"
    narrowed = _privileges(roles.root_url, user)
    assert {(t, p, c) for t, p, c in narrowed if t == "documents"} == {
        ("documents", "SELECT", ""),
        ("documents", "UPDATE", "removed_at"),
        ("documents", "UPDATE", "commit_seq"),
    }
    database = str(make_url(roles.root_url).database)
    root = create_engine(roles.root_url)
    with monkeypatch.context() as last_release, root.begin() as conn:
        last_release.setitem(grants.ROLE_GRANTS, "search", {**grants.ROLE_GRANTS["search"], **WHOLE_TABLES})
        back = sync_grants(conn, "search", database, roles.prefix)
    assert (len(back.granted), len(back.revoked)) == (4, 14)  # 2 + 9 + 3 columns
    assert {(t, p, c) for t, p, c in _privileges(roles.root_url, user) if t in WHOLE_TABLES} == {
        (table, priv, "") for table, privs in WHOLE_TABLES.items() for priv in privs
    }

    assert main(["migrate", "--database-url", roles.root_url, "--user-prefix", roles.prefix]) == 0
    assert f"{user}: 14 privileges granted, 4 revoked" in capsys.readouterr().out
    assert _privileges(roles.root_url, user) == narrowed

    store_pages(session_factory(root), "http://spam.test/", "http://www.spam.test/a", "http://ok.test/")
    as_search = make_engine(roles.urls["search"])
    with session_factory(as_search).begin() as session:
        done = operations.block(session, ["spam.test"], "", time.time(), purge=True)
    assert done.purged == {"spam.test": 2}
    with pytest.raises(DBAPIError) as refused, as_search.begin() as conn:
        conn.execute(text("UPDATE documents SET url = 'http://evil.test/' WHERE url = 'http://ok.test/'"))
    assert refused.value.orig.args[0] == 1143  # UPDATE denied for column 'url'
    as_search.dispose()
    root.dispose()


def test_a_secret_of_another_user_is_refused(roles: Roles, moto_server: str, capsys) -> None:
    secrets = boto3.client("secretsmanager", endpoint_url=moto_server, region_name="us-east-1")
    arn = secrets.create_secret(
        Name=f"{roles.prefix}wrong", SecretString='{"username": "admin", "password": "x"}'
    )["ARN"]
    args = ["db", "users", "--database-url", roles.root_url, "--user-prefix", roles.prefix]
    assert main([*args, "--search-secret", arn]) == 2
    assert f"secret {arn} is for user 'admin', not '{roles.prefix}search'" in capsys.readouterr().err
    assert main(["db", "users", "--database-url", roles.root_url]) == 2  # no secret at all: say which to give
    assert "--worker-secret ARN" in capsys.readouterr().err
