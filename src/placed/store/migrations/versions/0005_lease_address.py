"""The lease row records where its holder takes writes: the replicas that do not hold it
forward each write to that address (`placed serve --advertise`), so one process commits.
Null until a holder renews it, and for a holder that gave none (it then leaves every
replica to commit its own writes, as before this revision).

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-06 03:40:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# The models' ADDRESS_LENGTH when this revision was written (a migration keeps its own).
ADDRESS_LENGTH = 2048


def upgrade() -> None:
    with op.batch_alter_table("leases") as table:
        table.add_column(sa.Column("address", sa.String(ADDRESS_LENGTH), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("leases") as table:
        table.drop_column("address")
