"""The service's rows, as SERVICE.md lists them: tenancy, inventory, work, policy state,
events, leases and the global revision.

Each changing row carries the `revision` it was last written at, so a replica refreshes
its index from `revision > seen` instead of reloading everything. Capacity is a row per
(target, resource) so that `CHECK (used <= capacity)` holds per resource in the database
itself, on SQLite and PostgreSQL alike.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, ClassVar

from sqlalchemy import (
    JSON,
    BigInteger,
    CheckConstraint,
    DateTime,
    Dialect,
    Float,
    ForeignKey,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    TypeDecorator,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

# Stable constraint names, so a later migration can alter them on both backends.
NAMES = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

ROLES = ("root-admin", "domain-admin", "user", "agent")
ADMIN_STATES = ("up", "down", "maintenance")


class UTCDateTime(TypeDecorator[datetime]):
    """A moment in UTC. SQLite keeps no time zone and hands back naive values; they are
    read as UTC, so comparisons with an aware `now` never raise."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is not None and value.tzinfo is None:
            raise ValueError("a naive datetime would be ambiguous; give it a time zone")
        return value.astimezone(UTC) if value is not None else None

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _in(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMES)
    type_annotation_map: ClassVar[dict[Any, Any]] = {
        dict[str, Any]: JSON,
        list[str]: JSON,
        datetime: UTCDateTime,
    }


def table_of(model: type[Base]) -> Table:
    """A model's Core table, for bulk statements that skip the ORM's bookkeeping."""
    found = model.__table__
    assert isinstance(found, Table)
    return found


# Tenancy


class Domain(Base):
    __tablename__ = "domains"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(255), unique=True)
    parent_id: Mapped[int | None] = mapped_column(ForeignKey("domains.id"))


class Account(Base):
    __tablename__ = "accounts"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(255), unique=True)
    domain_id: Mapped[int] = mapped_column(ForeignKey("domains.id"))


class Token(Base):
    """Only the sha256 of the secret is kept; the accessor finds the row."""

    __tablename__ = "tokens"
    __table_args__ = (
        CheckConstraint(_in("role", ROLES), name="role"),
        # root-admin acts everywhere; every other role is bound to one scope.
        CheckConstraint("(role = 'root-admin') = (scope IS NULL)", name="scope"),
    )
    accessor: Mapped[str] = mapped_column(String(32), primary_key=True)
    secret_sha256: Mapped[str] = mapped_column(String(64))
    role: Mapped[str] = mapped_column(String(16))
    # A domain-admin's domain, a user's account, an agent's target (by name).
    scope: Mapped[str | None] = mapped_column(String(255))
    description: Mapped[str] = mapped_column(String(255), default="")
    created: Mapped[datetime]
    expires: Mapped[datetime | None]
    revoked: Mapped[datetime | None]


# Inventory


class Location(Base):
    __tablename__ = "locations"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(255), unique=True)
    parent_id: Mapped[int | None] = mapped_column(ForeignKey("locations.id"))
    kind: Mapped[str] = mapped_column(String(64), default="")
    tags: Mapped[list[str]] = mapped_column(default=list)
    properties: Mapped[dict[str, Any]] = mapped_column(default=dict)
    # The location's own keys as the spec wrote them (children and capacity apart), so
    # the world a plan starts from is read back through the spec's own schema.
    spec: Mapped[dict[str, Any]] = mapped_column(default=dict)
    # The spec document (its `name`) that defines it: another document naming it is a
    # conflict, and `prune` deletes only what its own document no longer names.
    document: Mapped[str | None] = mapped_column(String(255))
    revision: Mapped[int] = mapped_column(BigInteger, default=0, index=True)


class Target(Base):
    __tablename__ = "targets"
    __table_args__ = (
        CheckConstraint(_in("admin_state", ADMIN_STATES), name="admin_state"),
        CheckConstraint("generation >= 0", name="generation"),
    )
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(255), unique=True)
    location_id: Mapped[int | None] = mapped_column(ForeignKey("locations.id"))
    tags: Mapped[list[str]] = mapped_column(default=list)
    properties: Mapped[dict[str, Any]] = mapped_column(default=dict)
    spec: Mapped[dict[str, Any]] = mapped_column(default=dict)
    document: Mapped[str | None] = mapped_column(String(255))
    admin_state: Mapped[str] = mapped_column(String(16), default="up")
    # Every claim and every change raises it; a writer that saw an older one touches
    # nothing (`WHERE generation = :seen`).
    generation: Mapped[int] = mapped_column(BigInteger, default=0)
    revision: Mapped[int] = mapped_column(BigInteger, default=0, index=True)


class TargetResource(Base):
    __tablename__ = "target_resources"
    __table_args__ = (
        CheckConstraint("used <= capacity", name="used_within_capacity"),
        CheckConstraint("used >= 0", name="used_not_negative"),
    )
    target_id: Mapped[int] = mapped_column(
        ForeignKey("targets.id", ondelete="CASCADE"), primary_key=True
    )
    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    capacity: Mapped[float] = mapped_column(Float)
    used: Mapped[float] = mapped_column(Float, default=0.0)


class TargetLiveness(Base):
    """Apart from the target, so a heartbeat never bumps its generation."""

    __tablename__ = "target_liveness"
    target_id: Mapped[int] = mapped_column(
        ForeignKey("targets.id", ondelete="CASCADE"), primary_key=True
    )
    last_seen: Mapped[datetime | None]
    liveness: Mapped[str] = mapped_column(String(16), default="unknown")


# Work


class Workload(Base):
    __tablename__ = "workloads"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(255), unique=True)
    account_id: Mapped[int | None] = mapped_column(ForeignKey("accounts.id"))
    spec: Mapped[dict[str, Any]]
    document: Mapped[str | None] = mapped_column(String(255))
    generation: Mapped[int] = mapped_column(BigInteger, default=0)
    revision: Mapped[int] = mapped_column(BigInteger, default=0, index=True)


class Unit(Base):
    __tablename__ = "units"
    __table_args__ = (UniqueConstraint("workload_id", "ordinal"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(255), unique=True)  # node3/0
    workload_id: Mapped[int] = mapped_column(ForeignKey("workloads.id", ondelete="CASCADE"))
    ordinal: Mapped[int] = mapped_column(Integer)


class Placement(Base):
    """Where each unit is now (one row per placed unit)."""

    __tablename__ = "placements"
    unit_id: Mapped[int] = mapped_column(
        ForeignKey("units.id", ondelete="CASCADE"), primary_key=True
    )
    target_id: Mapped[int] = mapped_column(ForeignKey("targets.id"))
    placed_at: Mapped[datetime]
    revision: Mapped[int] = mapped_column(BigInteger, default=0, index=True)


class PlacementHistory(Base):
    """Every change of a unit's place; None on either side is "nowhere"."""

    __tablename__ = "placement_history"
    id: Mapped[int] = mapped_column(primary_key=True)
    # Read by unit (its page) and by where units went (implicit owners): indexed.
    unit_name: Mapped[str] = mapped_column(String(255), index=True)
    from_target: Mapped[str | None] = mapped_column(String(255))
    to_target: Mapped[str | None] = mapped_column(String(255), index=True)
    at: Mapped[datetime]
    reason: Mapped[str] = mapped_column(String(255), default="")
    event_id: Mapped[int | None] = mapped_column(BigInteger)


# Policy state


class DedicationRow(Base):
    __tablename__ = "dedications"
    id: Mapped[int] = mapped_column(primary_key=True)
    resource: Mapped[str] = mapped_column(String(255), unique=True)
    kind: Mapped[str] = mapped_column(String(32))  # zone, pod, cluster, host
    domain_id: Mapped[int] = mapped_column(ForeignKey("domains.id"))
    account_id: Mapped[int | None] = mapped_column(ForeignKey("accounts.id"))
    implicit: Mapped[bool] = mapped_column(default=False)
    revision: Mapped[int] = mapped_column(BigInteger, default=0)


class OfferingRow(Base):
    __tablename__ = "offerings"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(255), unique=True)
    cpu: Mapped[float] = mapped_column(Float, default=0.0)
    memory: Mapped[float] = mapped_column(Float, default=0.0)
    disk: Mapped[float] = mapped_column(Float, default=0.0)
    dedicated: Mapped[bool] = mapped_column(default=False)
    implicit: Mapped[str] = mapped_column(String(16), default="strict")


class IdempotencyKey(Base):
    """A POST's `Idempotency-Key`, per caller (a digest of its Authorization header): the
    request it came with (a digest) and, once answered, the answer, replayed to a retry
    of the same request within a day (service/idempotency.py)."""

    __tablename__ = "idempotency_keys"
    __table_args__ = (
        CheckConstraint(_in("outcome", ("started", "answered", "unknown")), name="outcome"),
    )
    caller: Mapped[str] = mapped_column(String(64), primary_key=True)
    key: Mapped[str] = mapped_column(String(255), primary_key=True)
    fingerprint: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime]
    holder: Mapped[str] = mapped_column(String(64))  # the process that runs the request
    outcome: Mapped[str] = mapped_column(String(16))
    status: Mapped[int | None] = mapped_column(Integer)
    content_type: Mapped[str | None] = mapped_column(String(255))
    body: Mapped[bytes | None] = mapped_column(LargeBinary)


class Setting(Base):
    __tablename__ = "settings"
    key: Mapped[str] = mapped_column(String(255), primary_key=True)
    value: Mapped[dict[str, Any]]


# Events, leases, revision

# The longest address a lease records (a URL: scheme, host, port, perhaps a path).
ADDRESS_LENGTH = 2048


class EventRow(Base):
    """Ids are handed out from `revision.last_event_id` under its row lock, never by a
    sequence: a sequence hands out ids in start order, commits land in another order,
    and a reader paging by id would skip the late ones."""

    __tablename__ = "events"
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    at: Mapped[datetime]
    actor_accessor: Mapped[str | None] = mapped_column(String(32))
    actor_role: Mapped[str | None] = mapped_column(String(16))
    kind: Mapped[str] = mapped_column(String(64), index=True)
    subject: Mapped[str] = mapped_column(String(255))
    target: Mapped[str | None] = mapped_column(String(255))
    workload: Mapped[str | None] = mapped_column(String(255))
    domain: Mapped[str | None] = mapped_column(String(255))
    account: Mapped[str | None] = mapped_column(String(255))
    request_id: Mapped[str | None] = mapped_column(String(64))
    details: Mapped[dict[str, Any]] = mapped_column(default=dict)


class Lease(Base):
    """`address`: where the holder takes the writes the other replicas forward to it
    (`placed serve --advertise`); null when it gave none."""

    __tablename__ = "leases"
    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    holder: Mapped[str] = mapped_column(String(64))
    epoch: Mapped[int] = mapped_column(BigInteger, default=0)
    expires_at: Mapped[datetime]
    address: Mapped[str | None] = mapped_column(String(ADDRESS_LENGTH))


class Revision(Base):
    """One row: the global revision and the last event id."""

    __tablename__ = "revision"
    __table_args__ = (CheckConstraint("id = 1", name="single_row"),)
    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    value: Mapped[int] = mapped_column(BigInteger, default=0)
    last_event_id: Mapped[int] = mapped_column(BigInteger, default=0)


def now() -> datetime:
    return datetime.now(UTC)
