"""Documents remember when a recrawl found them gone (404, 410) or marked noindex
(``removed_at``): the row stays, with its doc_num and history, and the index leaves it out
(services/indexing/manifest.py, services/indexing/incremental.py).

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("documents") as batch:
        batch.add_column(sa.Column("removed_at", sa.Double(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("documents") as batch:
        batch.drop_column("removed_at")
