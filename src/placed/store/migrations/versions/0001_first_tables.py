"""The first tables: tenancy, inventory, work, policy state, events, leases, revision

Revision ID: 0001
Revises:
Create Date: 2026-12-01 09:55:21.414634
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "domains",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("parent_id", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(
            ["parent_id"], ["domains.id"], name=op.f("fk_domains_parent_id_domains")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_domains")),
        sa.UniqueConstraint("name", name=op.f("uq_domains_name")),
    )
    op.create_table(
        "events",
        sa.Column("id", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("actor_accessor", sa.String(length=32), nullable=True),
        sa.Column("actor_role", sa.String(length=16), nullable=True),
        sa.Column("kind", sa.String(length=64), nullable=False),
        sa.Column("subject", sa.String(length=255), nullable=False),
        sa.Column("target", sa.String(length=255), nullable=True),
        sa.Column("workload", sa.String(length=255), nullable=True),
        sa.Column("domain", sa.String(length=255), nullable=True),
        sa.Column("account", sa.String(length=255), nullable=True),
        sa.Column("request_id", sa.String(length=64), nullable=True),
        sa.Column("details", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_events")),
    )
    op.create_index(op.f("ix_events_kind"), "events", ["kind"], unique=False)
    op.create_table(
        "leases",
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("holder", sa.String(length=64), nullable=False),
        sa.Column("epoch", sa.BigInteger(), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_leases")),
    )
    op.create_table(
        "locations",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("parent_id", sa.Integer(), nullable=True),
        sa.Column("kind", sa.String(length=64), nullable=False),
        sa.Column("tags", sa.JSON(), nullable=False),
        sa.Column("properties", sa.JSON(), nullable=False),
        sa.Column("revision", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["parent_id"], ["locations.id"], name=op.f("fk_locations_parent_id_locations")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_locations")),
        sa.UniqueConstraint("name", name=op.f("uq_locations_name")),
    )
    op.create_table(
        "offerings",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("cpu", sa.Float(), nullable=False),
        sa.Column("memory", sa.Float(), nullable=False),
        sa.Column("disk", sa.Float(), nullable=False),
        sa.Column("dedicated", sa.Boolean(), nullable=False),
        sa.Column("implicit", sa.String(length=16), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_offerings")),
        sa.UniqueConstraint("name", name=op.f("uq_offerings_name")),
    )
    op.create_table(
        "placement_history",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("unit_name", sa.String(length=255), nullable=False),
        sa.Column("from_target", sa.String(length=255), nullable=True),
        sa.Column("to_target", sa.String(length=255), nullable=True),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("reason", sa.String(length=255), nullable=False),
        sa.Column("event_id", sa.BigInteger(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_placement_history")),
    )
    op.create_table(
        "revision",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("value", sa.BigInteger(), nullable=False),
        sa.Column("last_event_id", sa.BigInteger(), nullable=False),
        sa.CheckConstraint("id = 1", name=op.f("ck_revision_single_row")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_revision")),
    )
    # The single revision row, and the root of the domain tree: every later step
    # (events, claims, tenancy) relies on both.
    op.bulk_insert(
        sa.table("revision", sa.column("id"), sa.column("value"), sa.column("last_event_id")),
        [{"id": 1, "value": 0, "last_event_id": 0}],
    )
    op.create_table(
        "settings",
        sa.Column("key", sa.String(length=255), nullable=False),
        sa.Column("value", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("key", name=op.f("pk_settings")),
    )
    op.create_table(
        "tokens",
        sa.Column("accessor", sa.String(length=32), nullable=False),
        sa.Column("secret_sha256", sa.String(length=64), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("scope", sa.String(length=255), nullable=True),
        sa.Column("description", sa.String(length=255), nullable=False),
        sa.Column("created", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires", sa.DateTime(timezone=True), nullable=True),
        sa.Column("revoked", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint("(role = 'root-admin') = (scope IS NULL)", name=op.f("ck_tokens_scope")),
        sa.CheckConstraint(
            "role IN ('root-admin', 'domain-admin', 'user', 'agent')", name=op.f("ck_tokens_role")
        ),
        sa.PrimaryKeyConstraint("accessor", name=op.f("pk_tokens")),
    )
    op.bulk_insert(
        sa.table("domains", sa.column("name"), sa.column("parent_id")),
        [{"name": "ROOT", "parent_id": None}],
    )
    op.create_table(
        "accounts",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("domain_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["domain_id"], ["domains.id"], name=op.f("fk_accounts_domain_id_domains")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_accounts")),
        sa.UniqueConstraint("name", name=op.f("uq_accounts_name")),
    )
    op.create_table(
        "targets",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("location_id", sa.Integer(), nullable=True),
        sa.Column("tags", sa.JSON(), nullable=False),
        sa.Column("properties", sa.JSON(), nullable=False),
        sa.Column("admin_state", sa.String(length=16), nullable=False),
        sa.Column("generation", sa.BigInteger(), nullable=False),
        sa.Column("revision", sa.BigInteger(), nullable=False),
        sa.CheckConstraint(
            "admin_state IN ('up', 'down', 'maintenance')", name=op.f("ck_targets_admin_state")
        ),
        sa.CheckConstraint("generation >= 0", name=op.f("ck_targets_generation")),
        sa.ForeignKeyConstraint(
            ["location_id"], ["locations.id"], name=op.f("fk_targets_location_id_locations")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_targets")),
        sa.UniqueConstraint("name", name=op.f("uq_targets_name")),
    )
    op.create_table(
        "dedications",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("resource", sa.String(length=255), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("domain_id", sa.Integer(), nullable=False),
        sa.Column("account_id", sa.Integer(), nullable=True),
        sa.Column("implicit", sa.Boolean(), nullable=False),
        sa.Column("revision", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["account_id"], ["accounts.id"], name=op.f("fk_dedications_account_id_accounts")
        ),
        sa.ForeignKeyConstraint(
            ["domain_id"], ["domains.id"], name=op.f("fk_dedications_domain_id_domains")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_dedications")),
        sa.UniqueConstraint("resource", name=op.f("uq_dedications_resource")),
    )
    op.create_table(
        "target_liveness",
        sa.Column("target_id", sa.Integer(), nullable=False),
        sa.Column("last_seen", sa.DateTime(timezone=True), nullable=True),
        sa.Column("liveness", sa.String(length=16), nullable=False),
        sa.ForeignKeyConstraint(
            ["target_id"],
            ["targets.id"],
            name=op.f("fk_target_liveness_target_id_targets"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("target_id", name=op.f("pk_target_liveness")),
    )
    op.create_table(
        "target_resources",
        sa.Column("target_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("capacity", sa.Float(), nullable=False),
        sa.Column("used", sa.Float(), nullable=False),
        sa.CheckConstraint(
            "used <= capacity", name=op.f("ck_target_resources_used_within_capacity")
        ),
        sa.CheckConstraint("used >= 0", name=op.f("ck_target_resources_used_not_negative")),
        sa.ForeignKeyConstraint(
            ["target_id"],
            ["targets.id"],
            name=op.f("fk_target_resources_target_id_targets"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("target_id", "name", name=op.f("pk_target_resources")),
    )
    op.create_table(
        "workloads",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("account_id", sa.Integer(), nullable=True),
        sa.Column("spec", sa.JSON(), nullable=False),
        sa.Column("generation", sa.BigInteger(), nullable=False),
        sa.Column("revision", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["account_id"], ["accounts.id"], name=op.f("fk_workloads_account_id_accounts")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_workloads")),
        sa.UniqueConstraint("name", name=op.f("uq_workloads_name")),
    )
    op.create_table(
        "units",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("workload_id", sa.Integer(), nullable=False),
        sa.Column("ordinal", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["workload_id"],
            ["workloads.id"],
            name=op.f("fk_units_workload_id_workloads"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_units")),
        sa.UniqueConstraint("name", name=op.f("uq_units_name")),
        sa.UniqueConstraint("workload_id", "ordinal", name=op.f("uq_units_workload_id")),
    )
    op.create_table(
        "placements",
        sa.Column("unit_id", sa.Integer(), nullable=False),
        sa.Column("target_id", sa.Integer(), nullable=False),
        sa.Column("placed_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("revision", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["target_id"], ["targets.id"], name=op.f("fk_placements_target_id_targets")
        ),
        sa.ForeignKeyConstraint(
            ["unit_id"], ["units.id"], name=op.f("fk_placements_unit_id_units"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("unit_id", name=op.f("pk_placements")),
    )


def downgrade() -> None:
    op.drop_table("placements")
    op.drop_table("units")
    op.drop_table("workloads")
    op.drop_table("target_resources")
    op.drop_table("target_liveness")
    op.drop_table("dedications")
    op.drop_table("targets")
    op.drop_table("accounts")
    op.drop_table("tokens")
    op.drop_table("settings")
    op.drop_table("revision")
    op.drop_table("placement_history")
    op.drop_table("offerings")
    op.drop_table("locations")
    op.drop_table("leases")
    op.drop_index(op.f("ix_events_kind"), table_name="events")
    op.drop_table("events")
    op.drop_table("domains")
