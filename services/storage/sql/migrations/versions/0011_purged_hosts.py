"""A blocked host remembers when the operator purged its pages (``nimbus crawl block --purge``,
``purged_at``): while it stays blocked, a page of it committed late (fetched before its
crawler saw the block) is stored removed, so the purge holds (services/crawler/commit/purge.py).

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("blocked_hosts") as batch:
        batch.add_column(sa.Column("purged_at", sa.Double(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("blocked_hosts") as batch:
        batch.drop_column("purged_at")
