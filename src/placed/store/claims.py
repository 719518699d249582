"""Commit a plan's outcome: each unit where the plan put it, each target's usage, and one
event per change, in the caller's transaction (SERVICE.md, "Claims without overcommit").

Every target whose usage changes is written with `WHERE generation = :seen`, in id order
(two writers never wait on each other in a cycle): zero rows means someone claimed
first, and the caller plans again on fresh rows. `CHECK (used <= capacity)` backs it in
the database itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence, Set
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import bindparam, delete, exc, func, insert, select, update
from sqlalchemy.orm import Session

from placed.store import events, revision
from placed.store.definitions import StaleRow
from placed.store.tables import (
    Placement,
    PlacementHistory,
    Target,
    TargetResource,
    Unit,
    Workload,
    now,
    table_of,
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
    """Who asks, for the events and for the scope rule (operations/change_scope.py): a
    token's accessor, role and scope (a domain-admin's domain, a user's account), and
    the request's id."""

    accessor: str | None = None
    role: str | None = None
    request_id: str | None = None
    scope: str | None = None


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

    def pending(self, actor: Actor) -> events.Pending:
        """The event to write, by `actor`."""
        return events.Pending(
            self.kind,
            self.subject,
            actor_accessor=actor.accessor,
            actor_role=actor.role,
            target=self.target,
            workload=self.workload,
            domain=self.domain,
            account=self.account,
            request_id=actor.request_id,
            details=self.details,
        )


def commit(
    session: Session,
    before: Snapshot,
    moves: Sequence[Move],
    used: Mapping[str, Mapping[str, float]],
    actor: Actor,
    bumped: set[str] = frozenset(),  # type: ignore[assignment]
    extra: Sequence[Extra] = (),
    accounts: Mapping[str, str | None] | None = None,
    moved: Callable[[Session, int], None] | None = None,
    rewritten: Set[str] = frozenset(),
    at_revision: int = 0,
) -> list[events.Written]:
    """Write `moves` and the targets' new `used`. `bumped`: targets this transaction has
    already written (their generation is one past the snapshot's); `rewritten`: the
    workloads it has (created, changed or deleted, each at the generation seen). Every
    other workload with a unit among the moves must still be at the snapshot's
    generation: a plan places a workload's units by its spec. Every kind of row is
    one bulk statement (a statement per row is a round trip each on PostgreSQL).
    `moved`: told once the moves are written, with how many (the controller's fault
    hooks). `at_revision`: the change's, on the targets it uses otherwise and the placements
    it writes, by which a replica reads what moved (store/claimed.py)."""
    connection = session.connection()
    targets = _targets_named(
        session, {*used, *(m.source for m in moves), *(m.destination for m in moves)}
    )
    changed = []
    for name, amounts in used.items():
        old = before.targets.get(name)
        was = old.used if old is not None else {}
        if any(abs(amounts.get(r, 0.0) - was.get(r, 0.0)) > 1e-9 for r in {*amounts, *was}):
            changed.append(name)
    changed.sort(key=lambda n: targets[n][0])
    if changed:
        seen = []
        for name in changed:
            target_id, generation = targets[name]
            old = before.targets.get(name)
            expected = (
                (old.generation + (name in bumped)) if old is not None and old.id else generation
            )
            seen.append({"tid": target_id, "seen": expected, "revision": at_revision})
        done = connection.execute(RAISE_GENERATION, seen)
        if done.rowcount != len(seen):
            raise StaleRow("target", _some(changed))
        try:
            connection.execute(
                SET_USED,
                [
                    {"tid": targets[name][0], "resource": resource, "amount": round(amount, 9)}
                    for name in changed
                    for resource, amount in sorted(used[name].items())
                ],
            )
        except exc.IntegrityError:
            # Only a stale plan asks for more than there is: the CHECK caught it.
            raise StaleRow("target", _some(changed)) from None
    workload_ids: dict[str, int] = {}
    generations: dict[str, int] = {}
    for id_, name, generation in _rows_named(
        session,
        select(Workload.id, Workload.name, Workload.generation),
        Workload.name,
        {m.workload for m in moves},
    ):
        workload_ids[name] = id_
        generations[name] = generation
    for name in sorted({m.workload for m in moves} - set(rewritten)):
        known = before.workloads.get(name)
        if known is None or generations.get(name) != known.generation:
            # Changed, deleted or (made by someone else) created since the snapshot.
            raise StaleRow("workload", name)
    unit_ids: dict[str, int] = {}
    names = [m.unit for m in moves]
    for chunk in _chunks(names):
        unit_ids.update(
            (name, id_)
            for id_, name in session.execute(select(Unit.id, Unit.name).where(Unit.name.in_(chunk)))
        )
    _check_sources(session, before, moves, unit_ids, targets)
    removed = [unit_ids[m.unit] for m in moves if m.kind == REMOVED and m.unit in unit_ids]
    staying = [unit_ids[m.unit] for m in moves if m.kind != REMOVED and m.unit in unit_ids]
    for chunk in _chunks([*removed, *staying]):
        connection.execute(
            delete(table_of(Placement)).where(table_of(Placement).c.unit_id.in_(chunk))
        )
    for chunk in _chunks(removed):
        connection.execute(delete(table_of(Unit)).where(table_of(Unit).c.id.in_(chunk)))
    new_units = [m for m in moves if m.kind != REMOVED and m.unit not in unit_ids]
    if new_units:
        numbers = _next_ordinals(session, {m.workload for m in new_units})
        values = []
        for move in new_units:
            ordinal = move.unit.rpartition("/")[2]
            if ordinal.isdigit():
                number = int(ordinal)
            else:
                # An every-mode unit is named after its target, not numbered: the next
                # free number keeps (workload, ordinal) unique.
                number = numbers[move.workload]
                numbers[move.workload] = number + 1
            values.append(
                {"name": move.unit, "workload_id": workload_ids[move.workload], "ordinal": number}
            )
        units = table_of(Unit)
        made = connection.execute(
            insert(units).returning(units.c.id, sort_by_parameter_order=True), values
        ).scalars()
        unit_ids.update(zip((m.unit for m in new_units), made, strict=True))
    at = now()
    landing = [
        {
            "unit_id": unit_ids[m.unit],
            "target_id": targets[m.destination][0],
            "placed_at": at,
            "revision": at_revision,
        }
        for m in moves
        if m.kind != REMOVED and m.destination is not None
    ]
    if landing:
        connection.execute(insert(table_of(Placement)), landing)
    owners = accounts or {}
    # What caused the moves comes first (a target down, then its units).
    pending = [item.pending(actor) for item in extra]
    pending.extend(
        events.Pending(
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
                **(move.details or {}),
            },
        )
        for move in moves
    )
    rows = events.append_many(connection, revision.event_ids(connection, len(pending)), pending)
    history = [
        {
            "unit_name": move.unit,
            "from_target": move.source,
            "to_target": move.destination,
            "at": at,
            "reason": move.why[:255],
            "event_id": row.id,
        }
        for move, row in zip(moves, rows[len(extra) :], strict=True)
        if move.source != move.destination
    ]
    if history:
        connection.execute(insert(table_of(PlacementHistory)), history)
    if moved is not None and moves:
        moved(session, len(moves))
    return rows


# Past this many names, one read of a whole table is cheaper than reading them by name.
_BY_NAME = 2_000


def _rows_named(session: Session, query: Any, column: Any, names: Set[str | None]) -> Any:
    """The rows of `query` whose `column` is one of `names`: read by name when they are
    few (a delta's moves name a handful at 10,000 targets), else the whole table."""
    wanted = sorted(n for n in names if n is not None)
    if len(wanted) > _BY_NAME:
        return session.execute(query).all()
    found: list[Any] = []
    for chunk in _chunks(wanted):
        found.extend(session.execute(query.where(column.in_(chunk))))
    return found


def _targets_named(session: Session, names: Set[str | None]) -> dict[str, tuple[int, int]]:
    """Each named target's id and generation, as stored."""
    query = select(Target.id, Target.name, Target.generation)
    return {name: (id_, gen) for id_, name, gen in _rows_named(session, query, Target.name, names)}


def _check_sources(
    session: Session,
    before: Snapshot,
    moves: Sequence[Move],
    unit_ids: Mapping[str, int],
    targets: Mapping[str, tuple[int, int]],
) -> None:
    """Each unit must still be where the change's snapshot saw it (nowhere, for `source`
    None). Anywhere else, another change moved it since: two changes placing one
    unplaced unit, each on its own target, pass their generation checks, and the first
    target would keep counting a unit that left it. Then the change is stale and plans
    again on fresh rows. Read under the revision row's lock, which every writer takes
    first, so no change lands between this and the writes."""
    expected: dict[int, tuple[str, int | None]] = {}
    for move in moves:
        unit_id = unit_ids.get(move.unit)
        if unit_id is None:
            if move.kind != REMOVED and move.unit in before.units:
                # The snapshot had it (placed or waiting), and another change removed it
                # since (a workload cut to fewer units): placing it now would bring back
                # a unit its owner removed, under a history that ended where it left.
                raise StaleRow("unit", move.unit)
            continue  # a new unit, or one this change's own definitions removed
        if move.source is None:
            expected[unit_id] = (move.unit, None)
        elif move.source in targets:  # else its target is gone in this very change
            expected[unit_id] = (move.unit, targets[move.source][0])
    found: dict[int, int] = {}
    for chunk in _chunks(list(expected)):
        rows = session.execute(
            select(Placement.unit_id, Placement.target_id).where(Placement.unit_id.in_(chunk))
        )
        found.update((unit_id, target_id) for unit_id, target_id in rows)
    for unit_id, (name, target_id) in expected.items():
        if found.get(unit_id) != target_id:
            raise StaleRow("unit", name)


_targets, _resources = table_of(Target), table_of(TargetResource)
RAISE_GENERATION = (
    update(_targets)
    .where(_targets.c.id == bindparam("tid"), _targets.c.generation == bindparam("seen"))
    .values(generation=_targets.c.generation + 1, revision=bindparam("revision"))
)
SET_USED = (
    update(_resources)
    .where(_resources.c.target_id == bindparam("tid"), _resources.c.name == bindparam("resource"))
    .values(used=bindparam("amount"))
)
CHUNK = 5000  # ids per IN list: well under every backend's limit of bound parameters


def _chunks(items: Sequence[Any]) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), CHUNK):
        yield items[start : start + CHUNK]


def _some(names: Sequence[str]) -> str:
    return ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")


def next_ordinals(session: Session, workloads: set[str]) -> dict[str, int]:
    """Per workload, the first unit number none of its units has (a unit named by its
    target, as an every-mode one is, takes the next)."""
    return _next_ordinals(session, workloads)


def _next_ordinals(session: Session, workloads: set[str]) -> dict[str, int]:
    """Per workload, the first unit number none of its units has."""
    found = dict.fromkeys(workloads, 0)
    for name, top in session.execute(
        select(Workload.name, func.max(Unit.ordinal))
        .join(Unit, Unit.workload_id == Workload.id)
        .where(Workload.name.in_(list(workloads)))
        .group_by(Workload.name)
    ):
        found[name] = int(top) + 1 if top is not None else 0
    return found
