"""A replica reads what changed since its world's revision (store/claimed.py): the
locations, targets, workloads and placements written after it. An index on each table's
`revision`, so that read is as long as what changed, not as the world (it scanned 30,000
placements and 10,000 targets for each catch-up).

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-07 17:50:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = ("locations", "targets", "workloads", "placements")


def upgrade() -> None:
    for table in TABLES:
        op.create_index(op.f(f"ix_{table}_revision"), table, ["revision"], unique=False)


def downgrade() -> None:
    for table in TABLES:
        op.drop_index(op.f(f"ix_{table}_revision"), table_name=table)
