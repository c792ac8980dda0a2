"""Crawler heartbeats (one row per crawler process), the operator's commands to them, and
pages and errors in the ledger for the dashboard's chart (the operator's view).

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "crawl_nodes",
        sa.Column("node_id", sa.String(length=255), nullable=False),
        sa.Column("role", sa.String(length=32), nullable=False),
        sa.Column("host", sa.String(length=255), nullable=False),
        sa.Column("pid", sa.Integer(), nullable=False),
        sa.Column("version", sa.String(length=64), nullable=False),
        sa.Column("started_at", sa.Double(), nullable=False),
        sa.Column("beat_at", sa.Double(), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("counters", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("node_id"),
    )
    op.create_table(
        "crawl_control",
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("value", sa.Double(), nullable=False),
        sa.Column("set_at", sa.Double(), nullable=False),
        sa.PrimaryKeyConstraint("name"),
    )
    with op.batch_alter_table("fetch_batches") as batch:
        batch.add_column(sa.Column("pages", sa.Integer(), server_default="0", nullable=False))
        batch.add_column(sa.Column("errors", sa.Integer(), server_default="0", nullable=False))


def downgrade() -> None:
    with op.batch_alter_table("fetch_batches") as batch:
        batch.drop_column("errors")
        batch.drop_column("pages")
    op.drop_table("crawl_control")
    op.drop_table("crawl_nodes")
