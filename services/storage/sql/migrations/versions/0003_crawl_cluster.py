"""The crawl cluster: workers acknowledge batches with a manifest, one elected
committer commits them in sequence order.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "role_leases",
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("holder", sa.String(length=255), nullable=False),
        sa.Column("term", sa.Integer(), nullable=False),
        sa.Column("expires_at", sa.Double(), nullable=False),
        sa.Column("acquired_at", sa.Double(), nullable=False),
        sa.PrimaryKeyConstraint("name"),
    )
    with op.batch_alter_table("fetch_batches") as batch:
        batch.add_column(sa.Column("manifest", sa.String(length=255), nullable=True))
        batch.add_column(sa.Column("acked_at", sa.Double(), nullable=True))
        batch.add_column(sa.Column("reschedules", sa.Integer(), server_default="0", nullable=False))
        batch.create_index("ix_fetch_batches_state_seq", ["state", "seq"])


def downgrade() -> None:
    with op.batch_alter_table("fetch_batches") as batch:
        batch.drop_index("ix_fetch_batches_state_seq")
        batch.drop_column("reschedules")
        batch.drop_column("acked_at")
        batch.drop_column("manifest")
    op.drop_table("role_leases")
