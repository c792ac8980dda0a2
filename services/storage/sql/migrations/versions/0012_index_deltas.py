"""An index version may be a base segment and the delta segments published after it
(issue 31: committed batches searchable without rewriting the base): ``deltas`` lists their
blob names in commit order as JSON; NULL for a version of one segment. ``segment`` stays the
base, so a search service of an older release serves the base alone (complete, only older).

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("index_versions") as batch:
        batch.add_column(sa.Column("deltas", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("index_versions") as batch:
        batch.drop_column("deltas")
