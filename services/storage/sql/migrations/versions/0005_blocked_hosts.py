"""The operator's blocked hosts: hosts every crawler leaves alone from its next heartbeat.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "blocked_hosts",
        sa.Column("host", sa.String(length=255), primary_key=True),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("blocked_at", sa.Double(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("blocked_hosts")
