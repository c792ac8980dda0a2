"""Release N−1 runs on release N's schema: for every migration, the models of the code just
before it was added (read from git: the previous release's ORM) still find every table and
column they map, and insert, read and update a row of each, on the schema the migration leaves.

This is what makes a rollout (old instances beside new ones) and a rollback of the code safe
without a schema downgrade (docs/database.md). Where the checkout has no git history (a source
tarball), there is nothing to compare with and the test says so.
"""

from __future__ import annotations

import subprocess
import sys
import types
import uuid
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import Boolean, Double, Integer, inspect, select
from sqlalchemy.orm import DeclarativeBase, Session

from services.storage.sql.engines import make_engine
from services.storage.sql.migrate import MIGRATIONS, config

REPO = Path(__file__).resolve().parents[4]
BACKENDS = ["sqlite", pytest.param("mariadb", marks=pytest.mark.mariadb)]
MODELS_PATHS = ("services/storage/sql/models.py", "services/storage/models.py")  # before and after a move
VERSIONS = sorted((MIGRATIONS / "versions").glob("[0-9]*.py"))[1:]  # 0001 had no release before it


def _git(*args: str) -> str:
    done = subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True)
    return done.stdout if done.returncode == 0 else ""


def previous_models(migration: Path) -> types.ModuleType | None:
    """The models module of the commit before ``migration`` was added (HEAD's, while it is
    not committed yet); None without git history."""
    relative = migration.relative_to(REPO).as_posix()
    added = _git("log", "--follow", "--diff-filter=A", "--format=%H", "--", relative).split()
    commit = f"{added[-1]}^" if added else "HEAD"
    for path in MODELS_PATHS:
        source = _git("show", f"{commit}:{path}")
        if source:
            name = f"nimbus_models_before_{migration.stem}_{uuid.uuid4().hex[:6]}"
            module = types.ModuleType(name)
            sys.modules[name] = module  # SQLAlchemy resolves the Mapped[...] annotations through it
            exec(compile(source, f"{commit}:{path}", "exec"), module.__dict__)
            return module
    return None


@pytest.fixture(params=BACKENDS)
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'nimbus.db'}"
    return str(request.getfixturevalue("mysql_url"))


def _value(column, n: int) -> object:
    kind = column.type
    if isinstance(kind, Boolean):
        return True
    if isinstance(kind, Integer):
        return n
    if isinstance(kind, Double):
        return n + 0.5
    return f"v{n}"


@pytest.mark.parametrize("migration", VERSIONS, ids=[p.stem for p in VERSIONS])
def test_the_previous_releases_models_work_on_the_schema_a_migration_leaves(
    url: str, migration: Path
) -> None:
    old = previous_models(migration)
    if old is None:
        pytest.skip("no git history here (a source tarball?): no previous release to compare with")
    base: type[DeclarativeBase] = old.Base
    engine = make_engine(url)
    with engine.begin() as conn:
        command.upgrade(config(conn), migration.name[:4])
    schema = inspect(engine)
    for table in base.metadata.sorted_tables:
        present = (
            {c["name"] for c in schema.get_columns(table.name)} if schema.has_table(table.name) else set()
        )
        missing = sorted(set(table.c.keys()) - present)
        assert not missing, (
            f"migration {migration.name} removed {table.name} {missing}, which the release before it uses"
        )
    with Session(engine) as session:
        for n, mapper in enumerate(base.registry.mappers, start=1):
            row = mapper.class_(**{attr.key: _value(attr.columns[0], n) for attr in mapper.column_attrs})
            session.add(row)
            session.flush()  # an INSERT naming every column the old release knows: none missing, none refused
            found = session.scalars(select(mapper.class_)).one()
            key = next(a for a in mapper.column_attrs if not a.columns[0].primary_key).key
            setattr(found, key, getattr(found, key))  # and an UPDATE of one of them
        session.commit()
    engine.dispose()
