"""Commit a plan's outcome: each unit where the plan put it, each target's usage, and one
event per change, in the caller's transaction (SERVICE.md, "Claims without overcommit").

Every target whose usage changes is written with `WHERE generation = :seen`, in id order
(two writers never wait on each other in a cycle): zero rows means someone claimed
first, and the caller plans again on fresh rows. `CHECK (used <= capacity)` backs it in
the database itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import delete, exc, select, update
from sqlalchemy.orm import Session

from placed.store import events
from placed.store.definitions import StaleRow
from placed.store.tables import (
    EventRow,
    Placement,
    PlacementHistory,
    Target,
    TargetResource,
    Unit,
    Workload,
    now,
)
from placed.store.world import Snapshot

# The event kind of each change of a unit's place.
PLACED, MOVED, UNPLACED, REMOVED = "unit.placed", "unit.moved", "unit.unplaced", "unit.removed"


@dataclass(frozen=True, slots=True)
class Move:
    """One unit's change: from where to where (None: nowhere), and why."""

    workload: str
    unit: str
    source: str | None
    destination: str | None
    why: str
    kind: str
    # What else changed with it (a namespace on the same target), for its event.
    details: Mapping[str, Any] = field(default_factory=dict, compare=False)

    def to_dict(self) -> dict[str, Any]:
        found: dict[str, Any] = {
            "workload": self.workload,
            "unit": self.unit,
            "from": self.source,
            "to": self.destination,
            "why": self.why,
            "kind": self.kind,
        }
        if self.details:
            found["details"] = dict(self.details)
        return found


@dataclass(frozen=True, slots=True)
class Actor:
    """Who asks, for the events: a token's accessor and role, and the request's id."""

    accessor: str | None = None
    role: str | None = None
    request_id: str | None = None


@dataclass
class Extra:
    """An event that is not a unit's move (a target going down, a dedication)."""

    kind: str
    subject: str
    target: str | None = None
    workload: str | None = None
    domain: str | None = None
    account: str | None = None
    details: dict[str, Any] = field(default_factory=dict)


def commit(
    session: Session,
    before: Snapshot,
    moves: Sequence[Move],
    used: Mapping[str, Mapping[str, float]],
    actor: Actor,
    bumped: set[str] = frozenset(),  # type: ignore[assignment]
    extra: Sequence[Extra] = (),
    accounts: Mapping[str, str | None] | None = None,
) -> list[EventRow]:
    """Write `moves` and the targets' new `used`. `bumped`: targets this transaction has
    already written (their generation is one past the snapshot's)."""
    targets = {
        name: (id_, generation)
        for id_, name, generation in session.execute(
            select(Target.id, Target.name, Target.generation)
        )
    }
    changed = []
    for name, amounts in used.items():
        old = before.targets.get(name)
        was = old.used if old is not None else {}
        if any(abs(amounts.get(r, 0.0) - was.get(r, 0.0)) > 1e-9 for r in {*amounts, *was}):
            changed.append(name)
    for name in sorted(changed, key=lambda n: targets[n][0]):
        target_id, generation = targets[name]
        old = before.targets.get(name)
        seen = (old.generation + (name in bumped)) if old is not None and old.id else generation
        done = session.execute(
            update(Target)
            .where(Target.id == target_id, Target.generation == seen)
            .values(generation=Target.generation + 1)
            .execution_options(synchronize_session=False)
        )
        if done.rowcount == 0:  # type: ignore[attr-defined]
            raise StaleRow("target", name)
        try:
            for resource, amount in sorted(used[name].items()):
                session.execute(
                    update(TargetResource)
                    .where(TargetResource.target_id == target_id, TargetResource.name == resource)
                    .values(used=round(amount, 9))
                    .execution_options(synchronize_session=False)
                )
            session.flush()
        except exc.IntegrityError:
            # Only a stale plan asks for more than there is: the CHECK caught it.
            raise StaleRow("target", name) from None
    workload_ids = {name: id_ for id_, name in session.execute(select(Workload.id, Workload.name))}
    unit_ids = {
        name: id_
        for id_, name in session.execute(
            select(Unit.id, Unit.name).where(Unit.name.in_([m.unit for m in moves]))
        )
    }
    rows: list[EventRow] = []
    at = now()
    owners = accounts or {}
    # What caused the moves comes first (a target down, then its units).
    for item in extra:
        rows.append(
            events.append(
                session,
                item.kind,
                item.subject,
                actor_accessor=actor.accessor,
                actor_role=actor.role,
                target=item.target,
                workload=item.workload,
                domain=item.domain,
                account=item.account,
                request_id=actor.request_id,
                details=item.details,
            )
        )
    for move in moves:
        unit_id = unit_ids.get(move.unit)
        if move.kind == REMOVED:
            if unit_id is not None:
                _unplace(session, unit_id, move, targets)
                session.execute(delete(Unit).where(Unit.id == unit_id))
        else:
            if unit_id is None:
                ordinal = move.unit.rpartition("/")[2]
                unit = Unit(
                    name=move.unit,
                    workload_id=workload_ids[move.workload],
                    ordinal=int(ordinal) if ordinal.isdigit() else _ordinal(session, move),
                )
                session.add(unit)
                try:
                    session.flush()
                except exc.IntegrityError:
                    raise StaleRow("unit", move.unit) from None  # another change made it
                unit_id = unit_ids[move.unit] = unit.id
            else:
                _unplace(session, unit_id, move, targets)
            if move.destination is not None:
                session.add(
                    Placement(
                        unit_id=unit_id,
                        target_id=targets[move.destination][0],
                        placed_at=at,
                        revision=0,
                    )
                )
        row = events.append(
            session,
            move.kind,
            move.unit,
            actor_accessor=actor.accessor,
            actor_role=actor.role,
            target=move.destination or move.source,
            workload=move.workload,
            account=owners.get(move.workload),
            request_id=actor.request_id,
            details={
                "from": move.source,
                "to": move.destination,
                "why": move.why,
                **move.details,
            },
        )
        rows.append(row)
        if move.source != move.destination:
            session.add(
                PlacementHistory(
                    unit_name=move.unit,
                    from_target=move.source,
                    to_target=move.destination,
                    at=at,
                    reason=move.why[:255],
                    event_id=row.id,
                )
            )
    session.flush()
    return rows


def _unplace(
    session: Session, unit_id: int, move: Move, targets: Mapping[str, tuple[int, int]]
) -> None:
    """Take the unit off where the snapshot saw it (nowhere, for `source` None). Anywhere
    else, another change moved it since: the usage this change computed would count it
    on the wrong target (two changes placing one unplaced unit on two targets leave one
    of them counting a unit that is not there), so plan again on fresh rows."""
    where = Placement.unit_id == unit_id
    if move.source is None:
        taken = session.execute(delete(Placement).where(where))
        expected = 0
    else:
        source = targets.get(move.source)
        if source is None:  # its target is gone in this very change: nothing to compare
            session.execute(delete(Placement).where(where))
            return
        taken = session.execute(delete(Placement).where(where, Placement.target_id == source[0]))
        expected = 1
    if taken.rowcount != expected:  # type: ignore[attr-defined]
        raise StaleRow("unit", move.unit)


def _ordinal(session: Session, move: Move) -> int:
    """An every-mode unit is named after its target, not numbered: the next free number
    keeps (workload, ordinal) unique."""
    found = session.scalars(
        select(Unit.ordinal)
        .join(Workload, Workload.id == Unit.workload_id)
        .where(Workload.name == move.workload)
        .order_by(Unit.ordinal.desc())
        .limit(1)
    ).first()
    return found + 1 if found is not None else 0
