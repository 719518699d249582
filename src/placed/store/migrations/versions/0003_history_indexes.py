"""The placements' history is read by unit (a unit's page, GET /v1/placements/history)
and by the target a unit went to (implicit dedications' owners): an index on each, so
neither read scans a history that only grows

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-02 04:50:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index(
        op.f("ix_placement_history_unit_name"), "placement_history", ["unit_name"], unique=False
    )
    op.create_index(
        op.f("ix_placement_history_to_target"), "placement_history", ["to_target"], unique=False
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_placement_history_to_target"), table_name="placement_history")
    op.drop_index(op.f("ix_placement_history_unit_name"), table_name="placement_history")
