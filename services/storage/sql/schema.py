"""Opening the metadata database at this release's schema (``init_db``), on every process start."""

from __future__ import annotations

import logging

from sqlalchemy import Engine, inspect
from sqlalchemy.exc import OperationalError, ProgrammingError

from services.storage.sql.migrations import HEAD, is_newer

log = logging.getLogger(__name__)


def init_db(engine: Engine) -> None:
    """Bring the schema to this release's (``migrate.upgrade_to_head``: a fresh database is
    created, an older one migrated, under a lock several starting processes share). A
    database stamped with this release's head, or a newer release's (expand/contract: this
    release runs on it), needs neither, nor Alembic's import."""
    found = _stamped_revision(engine)
    if found is not None and is_newer(found, HEAD):
        log.warning("the schema is at %s, a newer release's (this one's: %s): running on it", found, HEAD)
    elif found != HEAD:
        from services.storage.sql.migrate import upgrade_to_head

        upgrade_to_head(engine)
    drop_obsolete_indexes(engine)


def _stamped_revision(engine: Engine) -> str | None:
    """The revision in ``alembic_version`` (None: no such table yet, or no row)."""
    try:
        with engine.connect() as conn:
            found = conn.exec_driver_sql("SELECT version_num FROM alembic_version").scalar()
    except (OperationalError, ProgrammingError):
        return None
    return None if found is None else str(found)


COMMAND_DENIED = 1142  # MySQL: the user has no privilege on the table

# Indexes earlier versions created that nothing uses now: each costs every frontier insert.
_OBSOLETE_INDEXES = {"frontier": ("ix_frontier_next",)}  # replaced by ix_frontier_lease


def _index_names(engine: Engine, table_name: str) -> set[str]:
    return {ix["name"] for ix in inspect(engine).get_indexes(table_name) if ix["name"]}


def drop_obsolete_indexes(engine: Engine) -> None:
    """Drop the indexes earlier versions made that nothing reads; a role's user that may not
    see a table (the indexer's, the frontier) leaves it to ``nimbus migrate``."""
    for table_name, names in _OBSOLETE_INDEXES.items():
        try:
            present = _index_names(engine, table_name)
        except (OperationalError, ProgrammingError) as exc:
            if getattr(exc.orig, "args", (None,))[0] == COMMAND_DENIED:
                continue
            raise
        for name in names:
            if name in present:
                on = "" if engine.dialect.name == "sqlite" else f" ON {table_name}"
                try:
                    with engine.begin() as conn:
                        conn.exec_driver_sql(f"DROP INDEX {name}{on}")
                except (OperationalError, ProgrammingError):
                    # Two processes starting together: the other one dropped it first.
                    if name in _index_names(engine, table_name):
                        raise
