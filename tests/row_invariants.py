"""What must hold of the stored rows after any sequence of changes, read once and checked
as sentences: the load run (test_service_load) and the stale-plan search
(test_stale_plans) both judge their databases with it, so a rule added here holds for
both."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, func, select

from placed.store.database import reading
from placed.store.tables import (
    EventRow,
    OfferingRow,
    Placement,
    PlacementHistory,
    Revision,
    Target,
    TargetResource,
    Unit,
    Workload,
)


@dataclass(frozen=True)
class Rows:
    """The rows the invariants read, from one transaction."""

    names: dict[int, str]  # target id -> name
    capacity: dict[tuple[str, str], tuple[float, float]]  # (target, resource) -> (cap, used)
    workloads: dict[int, tuple[str, dict[str, Any]]]  # id -> (name, spec)
    units: dict[int, tuple[str, int]]  # id -> (name, workload id)
    placements: list[tuple[int, int]]  # (unit id, target id)
    history: list[tuple[str, str | None, str | None]]  # (unit, from, to) in id order
    events: list[int]
    last_event: int | None
    per_workload: dict[int, int]  # workload id -> units stored
    offerings: dict[str, dict[str, float]]  # name -> what each VM of it takes

    def takes(self, workload: int) -> dict[str, float]:
        """What one unit of the workload takes: its resources, or its offering's."""
        spec = self.workloads[workload][1]
        if spec.get("offering") is not None:
            return self.offerings.get(spec["offering"], {})
        return {name: float(amount) for name, amount in (spec.get("resources") or {}).items()}

    @property
    def where(self) -> dict[str, str]:
        """Each placed unit's target, by name."""
        return {self.units[unit][0]: self.names[target] for unit, target in self.placements}


def read_rows(engine: Engine) -> Rows:
    with reading(engine) as session:
        names = {id_: name for id_, name in session.execute(select(Target.id, Target.name))}
        capacity = {
            (names[target], resource): (float(cap), float(used))
            for target, resource, cap, used in session.execute(
                select(
                    TargetResource.target_id,
                    TargetResource.name,
                    TargetResource.capacity,
                    TargetResource.used,
                )
            )
        }
        workloads = {
            id_: (name, spec)
            for id_, name, spec in session.execute(
                select(Workload.id, Workload.name, Workload.spec)
            )
        }
        units = {
            id_: (name, workload)
            for id_, name, workload in session.execute(select(Unit.id, Unit.name, Unit.workload_id))
        }
        placements = [
            (unit, target)
            for unit, target in session.execute(select(Placement.unit_id, Placement.target_id))
        ]
        history = [
            (unit, source, destination)
            for unit, source, destination in session.execute(
                select(
                    PlacementHistory.unit_name,
                    PlacementHistory.from_target,
                    PlacementHistory.to_target,
                ).order_by(PlacementHistory.id)
            )
        ]
        events = list(session.scalars(select(EventRow.id).order_by(EventRow.id)))
        last_event = session.scalar(select(Revision.last_event_id))
        per_workload = {
            workload: count
            for workload, count in session.execute(
                select(Unit.workload_id, func.count()).group_by(Unit.workload_id)
            )
        }
        # As the spec reads an offering: its cpu and memory, where not zero.
        offerings = {
            name: {resource: float(amount) for resource, amount in kept.items() if amount}
            for name, kept in (
                (name, {"cpu": cpu, "memory": memory})
                for name, cpu, memory in session.execute(
                    select(OfferingRow.name, OfferingRow.cpu, OfferingRow.memory)
                )
            )
        }
    return Rows(
        names,
        capacity,
        workloads,
        units,
        placements,
        history,
        events,
        last_event,
        per_workload,
        offerings,
    )


def broken_rows(rows: Rows) -> list[str]:
    """Every inconsistency in the rows, as a sentence."""
    broken: list[str] = []
    where = rows.where

    # Capacity: the sum of the units' resources on each target.
    taken: dict[tuple[str, str], float] = defaultdict(float)
    for unit_id, target_id in rows.placements:
        for resource, amount in rows.takes(rows.units[unit_id][1]).items():
            taken[(rows.names[target_id], resource)] += amount
    for key, (cap, used) in sorted(rows.capacity.items()):
        if used > cap + 1e-9:
            broken.append(f"{key}: used {used} over capacity {cap}")
        if abs(used - taken.get(key, 0.0)) > 1e-9:
            broken.append(f"{key}: used {used}, its units take {taken.get(key, 0.0)}")
    for key in sorted(set(taken) - set(rows.capacity)):
        broken.append(f"{key}: units take {taken[key]} of a resource the target lacks")

    # One place per unit, and its history a chain ending there: each move starts where
    # the one before it ended (two changes placing one unit on two targets break it).
    if len(where) != len(rows.placements):
        broken.append(f"{len(rows.placements)} placements for {len(where)} units")
    last: dict[str, str | None] = {}
    for unit, source, destination in rows.history:
        if last.get(unit) != source:
            broken.append(f"{unit} moved from {source}, but its history had it on {last.get(unit)}")
        last[unit] = destination
    for unit, target in sorted(where.items()):
        if last.get(unit) != target:
            broken.append(f"{unit} is on {target}; its history ends at {last.get(unit)}")

    # No workload has more units than its spec asks (a stale plan once stored a unit
    # its owner had removed meanwhile: RELIABILITY.md).
    for id_, (name, spec) in sorted(rows.workloads.items()):
        count = rows.per_workload.get(id_, 0)
        if count > int(spec.get("units", 1)):
            broken.append(f"{name} has {count} units; its spec asks {spec.get('units', 1)}")

    # Event ids: unique, gapless, in commit order, and the revision row knows the last.
    if rows.events != list(range(1, len(rows.events) + 1)):
        broken.append(f"event ids are not 1..{len(rows.events)} without gaps or repeats")
    if rows.events and rows.last_event != rows.events[-1]:
        broken.append(
            f"the revision row's last event id is {rows.last_event}, the highest {rows.events[-1]}"
        )
    return broken
