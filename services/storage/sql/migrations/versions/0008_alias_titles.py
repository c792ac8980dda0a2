"""URL aliases keep their own title (a wiki redirect's "UK" for "United Kingdom"): the index
build gives it to the target as anchor text, as Wikipedia's search does with redirects.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("url_aliases") as batch:
        batch.add_column(sa.Column("title", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("url_aliases") as batch:
        batch.drop_column("title")
