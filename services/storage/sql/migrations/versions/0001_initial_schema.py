"""The schema as of release 0.1.0, when migrations began.

Databases made before migrations existed (by ``create_all``) hold exactly
these tables; ``migrate.py`` stamps them with this revision instead of
running it.

Revision ID: 0001
Revises:
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "crawl_counters",
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("value", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("name"),
    )
    op.create_table(
        "documents",
        sa.Column("url_id", sa.String(length=40), nullable=False),
        sa.Column("doc_num", sa.Integer(), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("doc_id", sa.String(length=40), nullable=False),
        sa.Column("content_type", sa.String(length=100), nullable=False),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("lang", sa.String(length=16), nullable=False),
        sa.Column("length", sa.Integer(), nullable=False),
        sa.Column("status", sa.Integer(), nullable=False),
        sa.Column("depth", sa.Integer(), nullable=False),
        sa.Column("last_crawled", sa.Double(), nullable=False),
        sa.Column("content_block", sa.String(length=255), nullable=False),
        sa.Column("content_index", sa.Integer(), nullable=False),
        sa.Column("content_offset", sa.Integer(), nullable=False),
        sa.Column("record_block", sa.String(length=255), nullable=False),
        sa.Column("record_offset", sa.Integer(), nullable=False),
        sa.Column("record_length", sa.Integer(), nullable=False),
        sa.Column("versions", sa.Integer(), nullable=False),
        sa.Column("unchanged", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("url_id"),
        sa.UniqueConstraint("doc_num"),
    )
    with op.batch_alter_table("documents", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_documents_doc_id"), ["doc_id"], unique=False)

    op.create_table(
        "duplicate_urls",
        sa.Column("url_id", sa.String(length=40), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("doc_num", sa.Integer(), nullable=False),
        sa.Column("doc_id", sa.String(length=40), nullable=False),
        sa.Column("first_seen", sa.Double(), nullable=False),
        sa.Column("last_seen", sa.Double(), nullable=False),
        sa.PrimaryKeyConstraint("url_id"),
    )
    with op.batch_alter_table("duplicate_urls", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_duplicate_urls_doc_num"), ["doc_num"], unique=False)

    op.create_table(
        "fetch_batches",
        sa.Column("seq", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("leased_by", sa.String(length=100), nullable=False),
        sa.Column("lease_expires", sa.Double(), nullable=False),
        sa.Column("created_at", sa.Double(), nullable=False),
        sa.Column("committed_at", sa.Double(), nullable=True),
        sa.Column("num_urls", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("seq"),
    )
    op.create_table(
        "frontier",
        sa.Column("url_id", sa.String(length=40), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("host", sa.String(length=255), nullable=False),
        sa.Column("priority", sa.Double(), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("available_at", sa.Double(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("depth", sa.Integer(), nullable=False),
        sa.Column("discovered_from", sa.String(length=40), nullable=True),
        sa.Column("batch_seq", sa.Integer(), nullable=True),
        sa.Column("last_status", sa.Integer(), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("host_partition", sa.Integer(), nullable=False),
        sa.Column("hops", sa.Integer(), nullable=False),
        sa.Column("inlinks", sa.Integer(), nullable=False),
        sa.Column("recrawl_interval", sa.Double(), nullable=True),
        sa.PrimaryKeyConstraint("url_id"),
    )
    with op.batch_alter_table("frontier", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_frontier_host"), ["host"], unique=False)
        batch_op.create_index(batch_op.f("ix_frontier_host_partition"), ["host_partition"], unique=False)
        batch_op.create_index("ix_frontier_ready", ["state", "available_at", "priority"], unique=False)
    # The lease index (an expression: autogenerate cannot see it on SQLite).
    op.create_index(
        "ix_frontier_lease",
        "frontier",
        ["state", sa.text("priority DESC"), "depth", "url_id", "host_partition", "available_at"],
    )

    op.create_table(
        "hosts",
        sa.Column("host", sa.String(length=255), nullable=False),
        sa.Column("robots_txt", sa.Text(), nullable=True),
        sa.Column("robots_status", sa.Integer(), nullable=True),
        sa.Column("robots_fetched_at", sa.Double(), nullable=True),
        sa.Column("crawl_delay", sa.Double(), nullable=True),
        sa.Column("next_fetch_at", sa.Double(), nullable=False),
        sa.Column("pages", sa.Integer(), nullable=False),
        sa.Column("errors", sa.Integer(), nullable=False),
        sa.Column("sitemaps_fetched_at", sa.Double(), nullable=True),
        sa.PrimaryKeyConstraint("host"),
    )
    op.create_table(
        "index_versions",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("segment", sa.String(length=255), nullable=False),
        sa.Column("created_at", sa.Double(), nullable=False),
        sa.Column("num_docs", sa.Integer(), nullable=False),
        sa.Column("num_terms", sa.Integer(), nullable=False),
        sa.Column("active", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("index_versions", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_index_versions_active"), ["active"], unique=False)

    op.create_table(
        "pagerank",
        sa.Column("doc_num", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("score", sa.Double(), nullable=False),
        sa.PrimaryKeyConstraint("doc_num"),
    )


def downgrade() -> None:
    op.drop_table("pagerank")
    with op.batch_alter_table("index_versions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_index_versions_active"))

    op.drop_table("index_versions")
    op.drop_table("hosts")
    op.drop_index("ix_frontier_lease", table_name="frontier")
    with op.batch_alter_table("frontier", schema=None) as batch_op:
        batch_op.drop_index("ix_frontier_ready")
        batch_op.drop_index(batch_op.f("ix_frontier_host_partition"))
        batch_op.drop_index(batch_op.f("ix_frontier_host"))

    op.drop_table("frontier")
    op.drop_table("fetch_batches")
    with op.batch_alter_table("duplicate_urls", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_duplicate_urls_doc_num"))

    op.drop_table("duplicate_urls")
    with op.batch_alter_table("documents", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_documents_doc_id"))

    op.drop_table("documents")
    op.drop_table("crawl_counters")
