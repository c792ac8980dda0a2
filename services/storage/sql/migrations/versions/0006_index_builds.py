"""Index builds: the indexer's queue of builds asked for or scheduled, and their outcome.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "index_builds",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("requested_at", sa.Double(), nullable=False),
        sa.Column("requested_by", sa.String(length=255), nullable=False),
        sa.Column("runner", sa.String(length=16), nullable=False),
        sa.Column("started_at", sa.Double(), nullable=True),
        sa.Column("heartbeat_at", sa.Double(), nullable=True),
        sa.Column("finished_at", sa.Double(), nullable=True),
        sa.Column("worker", sa.String(length=255), nullable=False),
        sa.Column("segment", sa.String(length=255), nullable=False),
        sa.Column("progress", sa.Text(), nullable=False),
        sa.Column("error", sa.Text(), nullable=False),
    )
    op.create_index("ix_index_builds_state", "index_builds", ["state"])


def downgrade() -> None:
    op.drop_index("ix_index_builds_state", table_name="index_builds")
    op.drop_table("index_builds")
