"""What the changes committed since a revision wrote, read as plain rows: the workloads
written since (each with its account's name), their placed units, and the targets written
since with what each uses now; and, asked, which workloads there are. A replica's cached
world adds them to come up to date without reading the whole world again
(operations/replica.py), when they are claims, deletes, count changes and targets' changes
of state (the units they moved) alone."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from placed.store.tables import (
    Account,
    Location,
    Placement,
    Target,
    TargetLiveness,
    TargetResource,
    Unit,
    Workload,
)
from placed.store.world import (
    WorkloadRow,
    dedication_entries,
    world_offerings,
    world_settings,
)


@dataclass(frozen=True, slots=True)
class ClaimedWorkload:
    id: int
    name: str
    generation: int
    document: str | None
    account: str | None
    spec: dict[str, Any]


@dataclass(frozen=True, slots=True)
class PlacedUnit:
    id: int
    name: str
    workload_id: int
    target: str
    ordinal: int = 0


@dataclass(frozen=True, slots=True)
class WrittenTarget:
    """`used`: None when the target has no resource rows; `liveness`: as the controller
    judged its heartbeats (`unknown` before any)."""

    id: int
    name: str
    generation: int
    used: dict[str, float] | None
    admin_state: str = "up"
    liveness: str = "unknown"
    capacity: dict[str, float] | None = None


@dataclass(frozen=True, slots=True)
class WrittenNode:
    """A location or target written since (`Claimed.nodes`): as the world reads it."""

    name: str
    parent: str | None
    spec: dict[str, Any]
    document: str | None
    target: bool


@dataclass(frozen=True, slots=True)
class Claimed:
    workloads: list[ClaimedWorkload]  # by id
    units: list[PlacedUnit]  # those placed, by workload and ordinal
    targets: list[WrittenTarget]
    # Read when deletes, count changes and moves are asked for too (`since(...,
    # resized=True)`): the names of the workloads held that are stored no longer, and the
    # units of workloads not written since that were placed or moved since (a target's
    # change of state moves them), by workload and ordinal.
    gone: list[str] | None = None
    moved: list[PlacedUnit] | None = None
    # The locations and targets written since, locations first, each by id (a target's
    # rows are in `targets` too): those new to a cache are the inventory grown.
    nodes: list[WrittenNode] | None = None
    # Every dedication (by id) and the world's settings, as a world read holds them: a
    # change of the rules, read from the rows.
    dedications: list[dict[str, Any]] | None = None
    settings: dict[str, Any] | None = None
    # Every service offering, with the rules.
    offerings: list[dict[str, Any]] | None = None
    # The names of the units there are of the every-mode workloads asked for (`since(...,
    # every=...)`): one on a target that left is deleted, which leaves no other row.
    every_units: frozenset[str] | None = None


def since(
    session: Session,
    revision: int,
    resized: bool = False,
    rules: bool = False,
    every: Sequence[int] = (),
    held: Mapping[str, WorkloadRow] | None = None,
) -> Claimed:
    """The rows written after `revision` that a claim writes (module docstring); with
    `resized`, those a delete, a count change or a move writes too (`Claimed.gone` of the
    workloads `held`, `Claimed.moved`): the units of a workload written since are all of
    its units now;
    with `rules` too, every dedication and the world's settings; with `every` (workload
    ids), the units there are of those workloads (`Claimed.every_units`)."""
    added = session.scalars(
        select(Workload).where(Workload.revision > revision).order_by(Workload.id)
    ).all()
    accounts: dict[int, str] = {}
    with_accounts = sorted({row.account_id for row in added if row.account_id})
    if with_accounts:
        for account_id, account in session.execute(
            select(Account.id, Account.name).where(Account.id.in_(with_accounts))
        ):
            accounts[account_id] = account
    workloads = [
        ClaimedWorkload(
            row.id,
            row.name,
            row.generation,
            row.document,
            accounts.get(row.account_id) if row.account_id else None,
            row.spec,
        )
        for row in added
    ]
    units = (
        [
            PlacedUnit(unit_id, name, workload_id, target)
            for unit_id, name, workload_id, target in session.execute(
                select(Unit.id, Unit.name, Unit.workload_id, Target.name)
                .join(Placement, Placement.unit_id == Unit.id)
                .join(Target, Target.id == Placement.target_id)
                .where(Unit.workload_id.in_([row.id for row in added]))
                .order_by(Unit.workload_id, Unit.ordinal)
            )
        ]
        if added
        else []
    )
    written = session.execute(
        select(
            Target.id, Target.name, Target.generation, Target.admin_state, TargetLiveness.liveness
        )
        .outerjoin(TargetLiveness, TargetLiveness.target_id == Target.id)
        .where(Target.revision > revision)
    ).all()
    used: dict[int, dict[str, float]] = {}
    capacity: dict[int, dict[str, float]] = {}
    for target_id, resource, amount, most in session.execute(
        select(
            TargetResource.target_id,
            TargetResource.name,
            TargetResource.used,
            TargetResource.capacity,
        ).where(TargetResource.target_id.in_([row.id for row in written]))
    ):
        used.setdefault(target_id, {})[resource] = amount
        capacity.setdefault(target_id, {})[resource] = most
    targets = [
        WrittenTarget(
            target_id,
            name,
            generation,
            used.get(target_id),
            admin_state,
            liveness or "unknown",
            capacity.get(target_id, {}),
        )
        for target_id, name, generation, admin_state, liveness in written
    ]
    if not resized:
        return Claimed(workloads, units, targets)
    gone = _gone(session, added, held or {})
    written_ids = [row.id for row in added]
    moved = [
        PlacedUnit(unit_id, name, workload_id, target, ordinal)
        for unit_id, name, workload_id, target, ordinal in session.execute(
            select(Unit.id, Unit.name, Unit.workload_id, Target.name, Unit.ordinal)
            .join(Placement, Placement.unit_id == Unit.id)
            .join(Target, Target.id == Placement.target_id)
            .where(Placement.revision > revision, Unit.workload_id.not_in(written_ids))
            .order_by(Unit.workload_id, Unit.ordinal)
        )
    ]
    every_units = (
        frozenset(session.scalars(select(Unit.name).where(Unit.workload_id.in_(list(every)))))
        if every
        else None
    )
    return Claimed(
        workloads,
        units,
        targets,
        gone,
        moved,
        _nodes(session, revision),
        dedication_entries(session) if rules else None,
        world_settings(session) if rules else None,
        every_units=every_units,
        offerings=world_offerings(session) if rules else None,
    )


def _gone(
    session: Session, added: Sequence[Workload], held: Mapping[str, WorkloadRow]
) -> list[str]:
    """The workloads of `held` stored no longer. Every workload made after the holder's
    revision was written since (`added`), so when the stored count is the held ones plus
    those, none held is gone: a count, where reading every id is as long as the world;
    the ids are read only when one is gone."""
    made = sum(1 for row in added if (known := held.get(row.name)) is None or known.id != row.id)
    if session.scalar(select(func.count(Workload.id))) == len(held) + made:
        return []
    # By id and name: SQLite gives a deleted workload's id to the next one made when it
    # was the last, so an id alone may now be another workload's.
    present = {id_: name for id_, name in session.execute(select(Workload.id, Workload.name))}
    return [name for name, row in held.items() if present.get(row.id) != name]


def _nodes(session: Session, revision: int) -> list[WrittenNode]:
    """The locations and then the targets written after `revision`, each by id, with
    their parents' names."""
    locations = session.execute(
        select(Location.id, Location.name, Location.parent_id, Location.spec, Location.document)
        .where(Location.revision > revision)
        .order_by(Location.id)
    ).all()
    targets = session.execute(
        select(Target.name, Target.location_id, Target.spec, Target.document)
        .where(Target.revision > revision)
        .order_by(Target.id)
    ).all()
    parents = ({row.parent_id for row in locations} | {row.location_id for row in targets}) - {None}
    names = (
        {
            id_: name
            for id_, name in session.execute(
                select(Location.id, Location.name).where(Location.id.in_(parents))
            )
        }
        if parents
        else {}
    )
    return [
        WrittenNode(row.name, names.get(row.parent_id), dict(row.spec), row.document, False)
        for row in locations
    ] + [
        WrittenNode(row.name, names.get(row.location_id), dict(row.spec), row.document, True)
        for row in targets
    ]
