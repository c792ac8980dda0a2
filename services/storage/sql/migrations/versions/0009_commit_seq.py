"""Documents remember the commit that wrote their current record (``commit_seq``, the
ledger's seq), so an incremental index update finds what was committed after its base
version (services/indexing/incremental.py).

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("documents") as batch:
        batch.add_column(sa.Column("commit_seq", sa.Integer(), nullable=True))
        batch.create_index("ix_documents_commit_seq", ["commit_seq"])


def downgrade() -> None:
    with op.batch_alter_table("documents") as batch:
        batch.drop_index("ix_documents_commit_seq")
        batch.drop_column("commit_seq")
