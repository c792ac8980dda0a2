"""The database's schema brought to this release's, once, under a lock: never by deleting it.

``init_db`` calls ``upgrade_to_head`` on every start, so a fresh database, an
old one and a current one all come out at head:

* current (``alembic_version`` holds head): one query, nothing else;
* empty: ``create_all`` and stamp head (what Alembic's docs advise for new
  databases: one step, not a replay of history);
* made before migrations existed (the tables of revision 0001, no
  ``alembic_version``): stamped 0001, then upgraded;
* at an older revision: upgraded;
* at a revision this release does not know (a newer release ran on it), or
  holding only some of our tables: a ``MigrationError`` that says what to do,
  with nothing touched.

Several processes starting together against one database are serialized by
a lock: ``GET_LOCK`` on MySQL/MariaDB (held by the connection, released if
the process dies), an exclusive ``flock`` on a file beside a SQLite database.
"""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine, inspect, text

from services.storage.errors import MigrationError
from services.storage.sql.models import Base

MIGRATIONS = Path(__file__).resolve().parent / "migrations"
BASELINE = "0001"  # the schema create_all made before migrations began
BASELINE_TABLES = frozenset(
    {
        "crawl_counters",
        "documents",
        "duplicate_urls",
        "fetch_batches",
        "frontier",
        "hosts",
        "index_versions",
        "pagerank",
    }
)
LOCK_NAME = "nimbus-migrate"
LOCK_SECONDS = 600


@dataclass(frozen=True)
class Migration:
    before: str | None  # the revision found (None: no alembic_version)
    after: str

    @property
    def changed(self) -> bool:
        return self.before != self.after


def config(connection: Connection | None = None, scripts: Path = MIGRATIONS) -> Config:
    """Alembic's configuration in code (no alembic.ini: the migrations ship in the wheel)."""
    cfg = Config()
    cfg.set_main_option("script_location", str(scripts))
    cfg.attributes["connection"] = connection
    return cfg


@cache
def _scripts(scripts: Path = MIGRATIONS) -> ScriptDirectory:
    return ScriptDirectory.from_config(config(scripts=scripts))


def head(scripts: Path = MIGRATIONS) -> str:
    revision = _scripts(scripts).get_current_head()
    if revision is None:
        raise MigrationError(f"no migrations found in {scripts}")
    return revision


def known_revisions(scripts: Path = MIGRATIONS) -> set[str]:
    return {script.revision for script in _scripts(scripts).walk_revisions()}


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def upgrade_to_head(engine: Engine, scripts: Path = MIGRATIONS) -> Migration:
    """Bring ``engine``'s database to this release's schema (see the module's docstring);
    ``scripts`` is another revision directory only in tests."""
    target = head(scripts)
    found = current_revision(engine)
    if found == target:
        return Migration(found, target)
    with _lock(engine), engine.begin() as conn:
        found = MigrationContext.configure(conn).get_current_revision()  # again, under the lock
        if found == target:
            return Migration(found, target)
        if found is not None and found not in known_revisions(scripts):
            raise MigrationError(
                f"database schema is at revision {found}, newer than this release knows (head {target}): "
                "upgrade Nimbus; nothing was changed"
            )
        tables = set(inspect(conn).get_table_names()) - {"alembic_version"}
        cfg = config(conn, scripts)
        if found is None and not tables:
            Base.metadata.create_all(conn)
            command.stamp(cfg, target)
            return Migration(None, target)
        if found is None:
            missing = BASELINE_TABLES - tables
            if missing:
                raise MigrationError(
                    f"the database holds tables {sorted(tables)} but not {sorted(missing)}: not a Nimbus "
                    "database, or a damaged one; point NIMBUS_DATABASE_URL at the right one (nothing was "
                    "changed)"
                )
            command.stamp(cfg, BASELINE)
        command.upgrade(cfg, target)
        return Migration(found, target)


@contextlib.contextmanager
def _lock(engine: Engine) -> Iterator[None]:
    if engine.dialect.name in {"mysql", "mariadb"}:
        with engine.connect() as conn:
            got = conn.execute(
                text("SELECT GET_LOCK(:name, :seconds)"), {"name": LOCK_NAME, "seconds": LOCK_SECONDS}
            )
            if got.scalar() != 1:
                raise MigrationError(
                    f"another process held the migration lock for {LOCK_SECONDS} s; is a migration stuck?"
                )
            try:
                yield
            finally:
                conn.execute(text("SELECT RELEASE_LOCK(:name)"), {"name": LOCK_NAME})
        return
    database = engine.url.database
    if engine.dialect.name != "sqlite" or not database or database == ":memory:":
        yield
        return
    path = Path(f"{database}.migrate.lock")
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
