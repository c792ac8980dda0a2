"""The database's schema brought to this release's, once, under a lock: never by deleting it.

``init_db`` calls ``upgrade_to_head`` on every start, so a fresh database, an
old one and a current one all come out at head:

* current (``alembic_version`` holds head): one query, nothing else;
* empty: ``create_all`` and stamp head (what Alembic's docs advise for new
  databases: one step, not a replay of history);
* made before migrations existed (the tables of revision 0001, no
  ``alembic_version``): stamped 0001, then upgraded;
* at an older revision: upgraded;
* at a newer release's revision (a higher number than this release's head):
  nothing, with a warning. Migrations are expand/contract (docs/database.md), so
  release N−1 runs on release N's schema: a rollout's old instances, or a rollback
  of the code, keep working;
* at a revision this release does not know otherwise, or holding only some of our
  tables: a ``MigrationError`` that says what to do, with nothing touched.

Only the master user may change the schema (docs/database.md): a role's user that
finds it behind gets a ``MigrationError`` naming ``nimbus migrate``.
``migrate_to`` goes to a given revision, back (Alembic's downgrades, never below
the baseline) or forward, step by step, saying each step before it runs.

Several processes starting together against one database are serialized by
a lock: ``GET_LOCK`` on MySQL/MariaDB (held by the connection, released if
the process dies), an exclusive ``flock`` on a file beside a SQLite database.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import Script, ScriptDirectory
from alembic.script.revision import RangeNotAncestorError
from sqlalchemy import Connection, Engine, inspect, text
from sqlalchemy.exc import DBAPIError

from services.storage.errors import MigrationError
from services.storage.sql.migrations import is_newer
from services.storage.sql.models import Base

log = logging.getLogger(__name__)

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
# MySQL's refusals of a schema change to a user without the privilege: table, database, global.
DENIED = {1142, 1044, 1227}


@dataclass(frozen=True)
class Migration:
    before: str | None  # the revision found (None: no alembic_version)
    after: str

    @property
    def changed(self) -> bool:
        return self.before != self.after


@dataclass(frozen=True)
class Step:
    """One migration run up or down: ``before`` to ``after``, and what the revision is about."""

    before: str
    after: str
    revision: str  # the migration run (its upgrade or its downgrade)
    about: str  # the first line of its docstring

    @property
    def down(self) -> bool:
        return self.revision == self.before

    def __str__(self) -> str:
        verb = "undo" if self.down else "apply"
        return f"{self.before} -> {self.after}: {verb} {self.revision} ({self.about})"


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
    with _lock(engine), engine.begin() as conn, _denied_says_who(engine):
        found = MigrationContext.configure(conn).get_current_revision()  # again, under the lock
        if found == target:
            return Migration(found, target)
        if found is not None and found not in known_revisions(scripts):
            if is_newer(found, target):
                log.warning(
                    "the database's schema is at revision %s, a newer release's (this one's is %s): "
                    "running on it, as expand/contract migrations allow; nothing changed",
                    found,
                    target,
                )
                return Migration(found, found)
            raise MigrationError(
                f"database schema is at revision {found}, which this release does not know (head "
                f"{target}): point NIMBUS_DATABASE_URL at a Nimbus database; nothing was changed"
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


def plan(engine: Engine, target: str, scripts: Path = MIGRATIONS) -> list[Step]:
    """The steps from the database's revision to ``target`` (a revision, or ``head``), in
    order; refused, with nothing run, below the baseline or from a revision unknown here."""
    found = current_revision(engine)
    target = head(scripts) if target == "head" else target
    known = known_revisions(scripts)
    if target not in known:
        raise MigrationError(
            f"no revision {target!r} in this release (revisions {BASELINE} to {head(scripts)}); "
            f"the baseline {BASELINE} is as far back as `nimbus migrate --to` goes: below it every "
            "table would be dropped"
        )
    if found is None:
        raise MigrationError("the database has no schema yet: run `nimbus migrate` to create it")
    if found not in known:
        raise MigrationError(
            f"the database is at revision {found}, which this release does not know: run "
            f"`nimbus migrate --to {target}` with the release that made it (it holds that revision's "
            "downgrade)"
        )
    if found == target:
        return []
    directory = _scripts(scripts)
    try:  # back: from the database's revision down to, not including, the target
        back = list(directory.iterate_revisions(found, target))
    except RangeNotAncestorError:  # forward: the target is a descendant
        forward = reversed(list(directory.iterate_revisions(target, found)))
        return [Step(_parent(s), s.revision, s.revision, _about(s.doc)) for s in forward]
    return [Step(s.revision, _parent(s), s.revision, _about(s.doc)) for s in back]


def migrate_to(
    engine: Engine,
    target: str,
    scripts: Path = MIGRATIONS,
    *,
    on_step: Callable[[Step], None] = lambda _step: None,
) -> list[Step]:
    """Bring the database to revision ``target``, back (downgrades) or forward, one step at a
    time under the migration lock, calling ``on_step`` before each; the steps run."""
    with _lock(engine), _denied_says_who(engine):
        steps = plan(engine, target, scripts)
        for step in steps:
            on_step(step)
            with engine.begin() as conn:
                cfg = config(conn, scripts)
                if step.down:
                    command.downgrade(cfg, step.after)
                else:
                    command.upgrade(cfg, step.after)
    return steps


def _parent(script: Script) -> str:
    parent = script.down_revision
    if not isinstance(parent, str):  # one line of history, never below the baseline
        raise MigrationError(f"revision {script.revision} has no single parent ({parent!r})")
    return parent


def _about(doc: str | None) -> str:
    """A revision's docstring's first paragraph, on one line."""
    first = (doc or "").strip().split("\n\n")[0]
    return " ".join(first.split()).rstrip(".") or "no description"


@contextlib.contextmanager
def _denied_says_who(engine: Engine) -> Iterator[None]:
    """A schema change the server refused for want of a privilege, as a ``MigrationError``
    that says who may make it."""
    try:
        yield
    except DBAPIError as exc:
        args = getattr(exc.orig, "args", ())
        if not args or args[0] not in DENIED:
            raise
        user = engine.url.username or "this role's user"
        raise MigrationError(
            f"{user} may not change the database's schema ({args[-1]}): schema changes are the master "
            "user's, through `nimbus migrate` on the indexer (NIMBUS_DATABASE_ADMIN_SECRET); until it "
            "ran, this release cannot start (docs/database.md)"
        ) from exc


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
