"""One unit described (GET /v1/units/{unit}): where it is, every move it made and why,
and the explanation `placed explain` prints: its workload planned again in the world as
it is now, every target judged as the plan judged it.

The replica's world in memory answers when it can (operations/cached_explain.py: the
unit's workload replayed on the cached index, at the store's current revision); the
general path here reads and plans the whole world, and answers the same."""

from __future__ import annotations

from typing import Any

from placed.engine.planner import Planner
from placed.engine.trace import UnknownUnitError, trace, trace_document
from placed.operations import cached_explain, placing
from placed.operations import units as operation
from placed.operations.errors import NotFound, OperationError
from placed.operations.replica import Cached, ReplicaWorld
from placed.operations.store import Store
from placed.store import world

# How often the cached world is asked again when the store's revision moved between
# bringing it forward and reading the unit's history, before the general path answers.
TRIES = 3


HISTORY = 1000  # the unit's moves shown, oldest first


def describe(
    engine: Store,
    unit: str,
    accounts: set[str] | None = None,
    replica: ReplicaWorld | None = None,
) -> dict[str, Any]:
    """The unit's document; `replica`: the world in memory to answer from when it can."""
    if replica is not None:
        for _ in range(TRIES):
            try:
                found = replica.read_current(
                    engine, lambda cached: _from_cache(engine, cached, unit, accounts)
                )
            except OperationError:
                # The cache could not be built (a world the spec's rules refuse as a
                # whole): the general path reads the world as it explains the unit.
                break
            except cached_explain.Declined:
                break  # a world only the general path plans (a Juju directive)
            if found is not None:
                return found
    return described(engine, unit, accounts)


def _from_cache(
    engine: Store, cached: Cached, unit: str, accounts: set[str] | None
) -> dict[str, Any] | None:
    """The unit's document from the cached world, or None when the store's revision is
    no longer the cache's (the caller brings it forward and asks again): the history is
    read in one transaction with that revision, so the world explained is the store's
    current one as the history is, never an older one."""
    history = operation.history_at(engine, unit, cached.revision, HISTORY)
    if history is None:
        return None
    snapshot = cached.snapshot
    workload, row = _found(snapshot, unit, accounts)
    explanation = cached_explain.explanation(
        cached, workload, planned_name(snapshot, unit, row.mode)
    )
    return _document(snapshot, unit, row, history, explanation)


def _found(
    snapshot: world.Snapshot, unit: str, accounts: set[str] | None
) -> tuple[str, world.WorkloadRow]:
    """The unit's workload and its row; 404 when there is none the caller may see."""
    found = snapshot.units.get(unit)
    workload = found[1] if found is not None else None
    row = snapshot.workloads.get(workload) if workload is not None else None
    if workload is None or row is None or (accounts is not None and row.account not in accounts):
        raise NotFound(f"no unit {unit!r}")
    return workload, row


def _document(
    snapshot: world.Snapshot,
    unit: str,
    row: world.WorkloadRow,
    history: list[dict[str, Any]],
    explanation: dict[str, Any] | None,
) -> dict[str, Any]:
    if explanation is not None:
        explanation["unit"] = unit
    return {
        "unit": unit,
        "workload": snapshot.units[unit][1],
        "account": row.account,
        "target": snapshot.placements.get(unit),
        "history": history,
        "explanation": explanation,
    }


def described(engine: Store, unit: str, accounts: set[str] | None = None) -> dict[str, Any]:
    """The general path: the whole world read, loaded as a spec and planned."""
    snapshot, history = operation.world_and_history(engine, unit, HISTORY)
    workload, row = _found(snapshot, unit, accounts)
    # The workload's units placed again, everything else where it is: what `placed
    # explain` shows for a unit of a plan.
    again = snapshot.copy()
    for name, (_, owner) in snapshot.units.items():
        if owner == workload:
            again.placements.pop(name, None)
    planner = Planner(placing.world_spec(again))
    try:
        explanation: dict[str, Any] | None = trace_document(
            trace(planner, planned_name(snapshot, unit, row.mode))
        )
    except UnknownUnitError:
        explanation = None  # a unit its workload no longer has (it is being removed)
    return _document(snapshot, unit, row, history, explanation)


def planned_name(snapshot: world.Snapshot, unit: str, mode: str) -> str:
    """The name a plan of the workload, none of its units placed, gives the stored
    `unit`: a plan numbers units from 0, and the store keeps the names units had (a
    workload cut and grown again may hold 0, 1 and 5)."""
    workload = unit.rpartition("/")[0]
    if mode != "allocation":
        return unit
    ordinals = sorted(
        int(ordinal)
        for name, (_, owner) in snapshot.units.items()
        if owner == workload and (ordinal := name.rpartition("/")[2]).isdigit()
    )
    ordinal = unit.rpartition("/")[2]
    if not ordinal.isdigit() or int(ordinal) not in ordinals:
        return unit
    return f"{workload}/{ordinals.index(int(ordinal))}"
