"""init_db's shortcut: the head it knows is Alembic's head of the shipped revisions."""

from __future__ import annotations

from services.storage.sql import migrate
from services.storage.sql.migrations import HEAD


def test_the_head_init_db_compares_with_is_the_newest_revision() -> None:
    # A new revision in versions/ without HEAD moved along would leave databases unmigrated.
    assert migrate.head() == HEAD
