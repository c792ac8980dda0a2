"""Archive crawls: registered bundles, their planned batches (leased through fetch_batches
like URL batches) and URL aliases.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "archive_bundles",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("url_hash", sa.String(length=40), nullable=False),
        sa.Column("type", sa.String(length=16), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("registered_at", sa.Double(), nullable=False),
        sa.Column("started_at", sa.Double(), nullable=True),
        sa.Column("finished_at", sa.Double(), nullable=True),
        sa.Column("batches", sa.Integer(), nullable=False),
        sa.Column("records_hint", sa.BigInteger(), nullable=False),
        sa.Column("seed_frontier", sa.Boolean(), nullable=False),
    )
    op.create_index("ux_archive_bundles_url_sha", "archive_bundles", ["url_hash", "sha256"], unique=True)
    op.create_table(
        "archive_batches",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("bundle_id", sa.Integer(), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("file", sa.Text(), nullable=False),
        sa.Column("start", sa.BigInteger(), nullable=False),
        sa.Column("end", sa.BigInteger(), nullable=False),
        sa.Column("records_hint", sa.Integer(), nullable=False),
        sa.Column("seek_state", sa.Text(), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=True),
        sa.Column("committed_at", sa.Double(), nullable=True),
        sa.Column("records", sa.Integer(), nullable=False),
        sa.Column("bytes", sa.BigInteger(), nullable=False),
        sa.Column("errors", sa.Integer(), nullable=False),
        sa.Column("kinds", sa.Text(), nullable=False),
        sa.Column("damage", sa.Text(), nullable=False),
    )
    op.create_index("ix_archive_batches_bundle_id", "archive_batches", ["bundle_id"])
    op.create_index("ix_archive_batches_state_bundle", "archive_batches", ["state", "bundle_id", "number"])
    op.create_index("ix_archive_batches_seq", "archive_batches", ["seq"])
    op.create_table(
        "url_aliases",
        sa.Column("url_id", sa.String(length=40), primary_key=True),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("target_url_id", sa.String(length=40), nullable=False),
        sa.Column("target_url", sa.Text(), nullable=False),
        sa.Column("first_seen", sa.Double(), nullable=False),
        sa.Column("last_seen", sa.Double(), nullable=False),
    )
    op.create_index("ix_url_aliases_target_url_id", "url_aliases", ["target_url_id"])
    with op.batch_alter_table("fetch_batches") as batch:
        batch.add_column(sa.Column("archive_batch", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("fetch_batches") as batch:
        batch.drop_column("archive_batch")
    op.drop_index("ix_url_aliases_target_url_id", table_name="url_aliases")
    op.drop_table("url_aliases")
    op.drop_index("ix_archive_batches_seq", table_name="archive_batches")
    op.drop_index("ix_archive_batches_state_bundle", table_name="archive_batches")
    op.drop_index("ix_archive_batches_bundle_id", table_name="archive_batches")
    op.drop_table("archive_batches")
    op.drop_index("ux_archive_bundles_url_sha", table_name="archive_bundles")
    op.drop_table("archive_bundles")
