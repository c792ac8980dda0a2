"""Alembic's environment for Nimbus: always given a live connection by ``migrate.py``.

There is no alembic.ini: the configuration is built in code, so the migrations
ship inside the wheel and run wherever Nimbus runs (``nimbus migrate``, and
on first use of a database).
"""

from __future__ import annotations

from alembic import context

from services.storage.sql.models import Base

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError(
        "run migrations through services.storage.sql.migrate (nimbus migrate), not alembic's CLI"
    )
context.configure(
    connection=connection,
    target_metadata=Base.metadata,
    render_as_batch=connection.dialect.name == "sqlite",  # SQLite alters tables by copying them
    compare_type=True,
)
with context.begin_transaction():
    context.run_migrations()
