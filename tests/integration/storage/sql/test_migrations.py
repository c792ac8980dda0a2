"""Schema migrations: revision 0001 is the models' schema, old databases keep their rows,
several processes can start on one fresh database, a newer release's schema is run on and a
foreign one refused."""

from __future__ import annotations

import multiprocessing
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect, text

from services.cli import main
from services.storage.errors import MigrationError
from services.storage.sql.engines import make_engine
from services.storage.sql.migrate import (
    MIGRATIONS,
    Migration,
    config,
    current_revision,
    head,
    upgrade_to_head,
)
from services.storage.sql.models import Base
from services.storage.sql.schema import init_db

BACKENDS = ["sqlite", pytest.param("mariadb", marks=pytest.mark.mariadb)]


@pytest.fixture(params=BACKENDS)
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'nimbus.db'}"
    return str(request.getfixturevalue("mysql_url"))


def _diffs(engine) -> list:
    """Autogenerate's differences between the database and the models.

    Alembic cannot compare an expression index ("priority DESC" in
    ix_frontier_lease): it reports it removed and added again, so that pair is
    left out here and the index is looked up by name instead.
    """
    with engine.connect() as conn:
        found = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    return [
        d for d in found if not (d[0] in {"add_index", "remove_index"} and d[1].name == "ix_frontier_lease")
    ]


def test_revision_0001_builds_exactly_the_models_schema(url: str) -> None:
    engine = make_engine(url)
    with engine.begin() as conn:  # replay history, not the fast path
        command.upgrade(config(conn), "head")
    assert _diffs(engine) == []
    names = {ix["name"] for ix in inspect(engine).get_indexes("frontier")}
    assert "ix_frontier_lease" in names
    engine.dispose()


def test_a_database_made_before_migrations_is_stamped_and_keeps_its_rows(url: str) -> None:
    engine = make_engine(url)
    # What releases before migrations made: revision 0001's schema, with no alembic_version.
    with engine.begin() as conn:
        command.upgrade(config(conn), "0001")
        conn.execute(text("DROP TABLE alembic_version"))
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO crawl_counters (name, value) VALUES ('documents', 42)"))
    done = upgrade_to_head(engine)
    assert (done.before, done.after) == (None, head())
    with engine.connect() as conn:
        assert conn.execute(text("SELECT value FROM crawl_counters")).scalar() == 42
        assert conn.execute(text("SELECT COUNT(*) FROM alembic_version")).scalar() == 1
    assert not upgrade_to_head(engine).changed  # and then nothing to do
    engine.dispose()


def test_a_new_revision_adds_a_column_and_keeps_every_row(url: str, tmp_path: Path) -> None:
    scripts = tmp_path / "migrations"
    shutil.copytree(MIGRATIONS, scripts, ignore=shutil.ignore_patterns("__pycache__"))
    (scripts / "versions" / "0099_hosts_country.py").write_text(
        '"""Hosts get a country (a test-only revision)."""\n'
        "import sqlalchemy as sa\nfrom alembic import op\n\n"
        f'revision = "0099"\ndown_revision = "{head()}"\nbranch_labels = None\ndepends_on = None\n\n\n'
        "def upgrade() -> None:\n"
        '    with op.batch_alter_table("hosts") as batch:\n'
        '        batch.add_column(sa.Column("country", sa.String(2), nullable=True))\n\n\n'
        "def downgrade() -> None:\n"
        '    with op.batch_alter_table("hosts") as batch:\n'
        '        batch.drop_column("country")\n'
    )
    engine = make_engine(url)
    upgrade_to_head(engine)  # this release's head
    with engine.begin() as conn:
        for n in range(3):
            conn.execute(
                text("INSERT INTO hosts (host, next_fetch_at, pages, errors) VALUES (:h, 0, :n, 0)"),
                {"h": f"h{n}.test", "n": n},
            )
    done = upgrade_to_head(engine, scripts)
    assert (done.before, done.after) == (head(), "0099")
    assert "country" in {c["name"] for c in inspect(engine).get_columns("hosts")}
    with engine.connect() as conn:
        assert conn.execute(text("SELECT SUM(pages), COUNT(*) FROM hosts")).one() == (3, 3)
    # That database is now a newer release's: this release runs on it (expand/contract), untouched.
    assert upgrade_to_head(engine) == Migration("0099", "0099")
    init_db(engine)
    with engine.begin() as conn:
        conn.execute(
            text("INSERT INTO hosts (host, next_fetch_at, pages, errors) VALUES ('new.test', 0, 1, 0)")
        )
    assert current_revision(engine) == "0099"
    # A revision that is no number after this release's head is not a Nimbus schema: refused.
    with engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = 'f00dcafe'"))
    with pytest.raises(MigrationError, match="revision f00dcafe, which this release does not know"):
        upgrade_to_head(engine)
    engine.dispose()


def test_foreign_tables_are_not_taken_for_a_nimbus_database(url: str) -> None:
    engine = make_engine(url)
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE documents (id INTEGER PRIMARY KEY)"))
    with pytest.raises(MigrationError, match="holds tables \\['documents'\\] but not"):
        upgrade_to_head(engine)
    assert set(inspect(engine).get_table_names()) == {"documents"}
    engine.dispose()


def _start(url: str, barrier) -> str:
    engine = make_engine(url)
    barrier.wait()
    try:
        return upgrade_to_head(engine).after
    finally:
        engine.dispose()


@pytest.mark.parametrize("url", BACKENDS, indirect=True)
def test_instances_starting_together_on_a_fresh_database(url: str) -> None:
    processes = 4
    ctx = multiprocessing.get_context("spawn")
    with ctx.Manager() as manager:
        barrier = manager.Barrier(processes)
        with ctx.Pool(processes) as pool:
            results = pool.starmap(_start, [(url, barrier)] * processes, chunksize=1)
    assert results == [head()] * processes
    engine = make_engine(url)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT version_num FROM alembic_version")).scalars().all() == [head()]
    assert _diffs(engine) == []
    engine.dispose()


def test_nimbus_migrate_says_what_it_did(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    assert main(["migrate", "--database-url", url]) == 0
    assert f"from no schema to {head()}" in capsys.readouterr().out
    assert main(["migrate", "--database-url", url]) == 0
    assert "nothing to do" in capsys.readouterr().out


def test_a_database_at_head_is_opened_without_importing_alembic(url: str) -> None:
    """Every crawler process calls init_db; on a current database it is one query."""
    engine = make_engine(url)
    init_db(engine)
    engine.dispose()
    code = (
        "import sys; from services.storage.sql.engines import make_engine; "
        "from services.storage.sql.schema import init_db; "
        "init_db(make_engine(sys.argv[1])); print(sorted(m for m in sys.modules if m.startswith('alembic')))"
    )
    out = subprocess.run([sys.executable, "-c", code, url], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_init_db_still_migrates_a_database_at_an_older_revision(url: str) -> None:
    engine = make_engine(url)
    with engine.begin() as conn:
        command.upgrade(config(conn), "0003")
    init_db(engine)
    assert current_revision(engine) == head()
    assert _diffs(engine) == []
    engine.dispose()
