"""Each location, target and workload keeps its own spec keys and the document defining it

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01 11:40:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # batch_alter_table: SQLite cannot add a NOT NULL column with a default to a table
    # that has rows through plain ALTER on every version placed supports.
    for table in ("locations", "targets"):
        with op.batch_alter_table(table) as batch:
            batch.add_column(sa.Column("spec", sa.JSON(), nullable=False, server_default="{}"))
            batch.add_column(sa.Column("document", sa.String(length=255), nullable=True))
    with op.batch_alter_table("workloads") as batch:
        batch.add_column(sa.Column("document", sa.String(length=255), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("workloads") as batch:
        batch.drop_column("document")
    for table in ("targets", "locations"):
        with op.batch_alter_table(table) as batch:
            batch.drop_column("document")
            batch.drop_column("spec")
