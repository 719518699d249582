"""POSTs' idempotency keys (service/idempotency.py): per caller and key, the request it
came with and, once answered, the answer a retry within a day gets again.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-06 04:20:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "idempotency_keys",
        sa.Column("caller", sa.String(64), nullable=False),
        sa.Column("key", sa.String(255), nullable=False),
        sa.Column("fingerprint", sa.String(64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("holder", sa.String(64), nullable=False),
        sa.Column("outcome", sa.String(16), nullable=False),
        sa.Column("status", sa.Integer(), nullable=True),
        sa.Column("content_type", sa.String(255), nullable=True),
        sa.Column("body", sa.LargeBinary(), nullable=True),
        sa.CheckConstraint(
            "outcome IN ('started', 'answered', 'unknown')",
            name=op.f("ck_idempotency_keys_outcome"),
        ),
        sa.PrimaryKeyConstraint("caller", "key", name=op.f("pk_idempotency_keys")),
    )


def downgrade() -> None:
    op.drop_table("idempotency_keys")
