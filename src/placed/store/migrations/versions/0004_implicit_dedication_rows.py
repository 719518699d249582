"""Implicit dedications become rows: a database written before kept none (plans derived
them again, and the owners' listing read them from the placements' reasons), so this
revision derives them once, by the reading the service used until now: a host that no
dedication holds (its own or a location's above it), where a unit of an account runs
whose last arrival there says implicit dedication gave it the host, is that account's.
A host where units of another account run too is left alone (no dedication could hold
it: the world would not load), as is everything when no unit qualifies. From here on a
plan writes and releases these rows itself.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-03 10:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# How a placement's reason began when implicit dedication gave a unit its host (the
# policy's IMPLICIT_REASON when this revision was written; a migration keeps its own).
IMPLICIT_REASON = "implicit dedication:"

_meta = sa.MetaData()
_locations = sa.Table(
    "locations", _meta, sa.Column("id"), sa.Column("name"), sa.Column("parent_id")
)
_targets = sa.Table("targets", _meta, sa.Column("id"), sa.Column("name"), sa.Column("location_id"))
_accounts = sa.Table("accounts", _meta, sa.Column("id"), sa.Column("domain_id"))
_workloads = sa.Table("workloads", _meta, sa.Column("id"), sa.Column("account_id"))
_units = sa.Table("units", _meta, sa.Column("id"), sa.Column("name"), sa.Column("workload_id"))
_placements = sa.Table("placements", _meta, sa.Column("unit_id"), sa.Column("target_id"))
_history = sa.Table(
    "placement_history",
    _meta,
    sa.Column("id"),
    sa.Column("unit_name"),
    sa.Column("to_target"),
    sa.Column("reason"),
)
_dedications = sa.Table(
    "dedications",
    _meta,
    sa.Column("resource"),
    sa.Column("kind"),
    sa.Column("domain_id"),
    sa.Column("account_id"),
    sa.Column("implicit"),
    sa.Column("revision"),
)
_revision = sa.Table("revision", _meta, sa.Column("id"), sa.Column("value"))


def derived(connection: sa.Connection) -> list[dict[str, object]]:
    """The implicit dedications the rows imply, as dedication rows."""
    dedicated = set(connection.scalars(sa.select(_dedications.c.resource)))
    parent = dict(connection.execute(sa.select(_locations.c.id, _locations.c.parent_id)).all())
    name = dict(connection.execute(sa.select(_locations.c.id, _locations.c.name)).all())

    def held(location: int | None) -> bool:
        seen = 0
        while location is not None and seen < 64:
            if name.get(location) in dedicated:
                return True
            location, seen = parent.get(location), seen + 1
        return False

    running: dict[str, tuple[str, int]] = {}  # unit -> (host, account id)
    accounts_on: dict[str, set[int]] = {}
    for unit, host, location, account in connection.execute(
        sa.select(_units.c.name, _targets.c.name, _targets.c.location_id, _workloads.c.account_id)
        .select_from(_placements)
        .join(_units, _units.c.id == _placements.c.unit_id)
        .join(_targets, _targets.c.id == _placements.c.target_id)
        .join(_workloads, _workloads.c.id == _units.c.workload_id)
        .where(_workloads.c.account_id.is_not(None))
    ):
        if host in dedicated or held(location):
            continue
        running[unit] = (host, account)
        accounts_on.setdefault(host, set()).add(account)
    if not running:
        return []
    arrival: dict[str, str] = {}
    for unit, host, reason in connection.execute(
        sa.select(_history.c.unit_name, _history.c.to_target, _history.c.reason)
        .where(_history.c.to_target.in_(sorted(accounts_on)))
        .order_by(_history.c.id)
    ):
        if unit in running and running[unit][0] == host:
            arrival[unit] = reason or ""
    domain_of = dict(connection.execute(sa.select(_accounts.c.id, _accounts.c.domain_id)).all())
    number = connection.scalar(sa.select(_revision.c.value).where(_revision.c.id == 1)) or 0
    rows: dict[str, dict[str, object]] = {}
    for unit in sorted(arrival):
        host, account = running[unit]
        if not arrival[unit].startswith(IMPLICIT_REASON) or accounts_on[host] != {account}:
            continue
        rows.setdefault(
            host,
            {
                "resource": host,
                "kind": "host",
                "domain_id": domain_of[account],
                "account_id": account,
                "implicit": True,
                "revision": number,
            },
        )
    return [rows[host] for host in sorted(rows)]


def upgrade() -> None:
    connection = op.get_bind()
    rows = derived(connection)
    if rows:
        connection.execute(sa.insert(_dedications), rows)


def downgrade() -> None:
    # The rows stay: 0003's code ignores implicit rows in the world and reads the
    # placements' reasons again.
    pass
