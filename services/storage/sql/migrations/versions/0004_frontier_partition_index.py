"""The frontier's index on host_partition alone is dropped: no query reads it.

Leases filter on the partition inside ix_frontier_lease (which carries it), due
recrawls and ``next_available`` walk ix_frontier_ready; the single-column index
is only written, once per new URL, and that costs the database server CPU on every
committed page that brings new URLs (the committer benchmark: docs/benchmarks.md).

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-26
"""

from __future__ import annotations

from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("frontier") as batch:
        batch.drop_index("ix_frontier_host_partition")


def downgrade() -> None:
    with op.batch_alter_table("frontier") as batch:
        batch.create_index("ix_frontier_host_partition", ["host_partition"], unique=False)
