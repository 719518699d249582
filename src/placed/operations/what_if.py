"""`placed simulate` on the stored world (POST /v1/simulate): targets down and others up
in one simulation, or CloudStack migrations of running VMs, answered with the document the
CLI prints (`engine.documents.simulation_document`, `migration_document`: the same
functions) and the revision it was read at, so that a change made from it
(`POST /v1/targets:batch?expected_revision=N`) is refused if the world moved since.
Nothing is written: the world is read once, outside any write transaction.

A domain-admin or a user sees the moves and unplaced units of its own accounts'
workloads only; the others are counted in `hidden` (numbers, never names), so the
document's totals still add up."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from placed.engine.documents import ArgumentError, migration_document, simulation_document
from placed.engine.planner import Planner
from placed.engine.rebalance import UnknownTargetError, simulate
from placed.operations import cloudstack, placing, scopes, snapshots
from placed.operations.change_scope import DOMAIN_ADMIN, UNSCOPED, USER
from placed.operations.errors import Conflict, Invalid, NotFound, OperationError, Where
from placed.operations.store import Store
from placed.store.claims import Actor
from placed.store.world import Snapshot

Migration = tuple[str, str]  # a running VM, and the host to move it to


def checked(down: Sequence[str], up: Sequence[str], migrate: Sequence[Migration]) -> None:
    """Refused before the world is read: two simulations at once, or none."""
    if migrate and (down or up):
        # Each is well-formed alone: together they ask for two simulations at once.
        raise Conflict(
            "migrate moves running VMs one by one; simulate down and up apart",
            "conflicting-request",
            [Where("given with down or up", pointer="/migrate")],
        )
    if not (down or up or migrate):
        raise Invalid(
            "nothing to simulate: name a target in down or up, or a migration",
            where=[Where("down, up and migrate are empty", pointer="")],
        )


def run(
    engine: Store,
    down: Sequence[str],
    up: Sequence[str],
    migrate: Sequence[Migration],
    actor: Actor,
) -> dict[str, Any]:
    checked(down, up, migrate)
    snapshot = snapshots.read(engine)
    reach = reach_of(snapshot, actor)
    if migrate:
        return migrated(snapshot, migrate, reach)
    return simulated(snapshot, down, up, reach)


def reach_of(snapshot: Snapshot, actor: Actor) -> set[str] | None:
    """The accounts whose units the caller sees, from the snapshot's own tenancy rows
    (the same revision as the world simulated): None for a root-admin."""
    if actor.role in UNSCOPED:
        return None
    if actor.role == USER:
        return {actor.scope} if actor.scope in snapshot.accounts else set()
    if actor.role != DOMAIN_ADMIN or actor.scope is None:
        return set()
    domains = scopes.below(snapshot.domains, actor.scope)
    return {account for account, domain in snapshot.accounts.items() if domain in domains}


def _visible(snapshot: Snapshot, reach: Collection[str] | None, workload: str) -> bool:
    if reach is None:
        return True
    row = snapshot.workloads.get(workload)
    return row is not None and row.account is not None and row.account in reach


def _kept(
    snapshot: Snapshot, reach: Collection[str] | None, items: list[Mapping[str, Any]]
) -> tuple[list[Mapping[str, Any]], int]:
    shown = [item for item in items if _visible(snapshot, reach, str(item["workload"]))]
    return shown, len(items) - len(shown)


def _unknown(error: UnknownTargetError, down: Sequence[str], up: Sequence[str]) -> OperationError:
    """A name simulate did not find, at its place in the body."""
    field = "up" if error.option == "--up" else "down"
    names = up if field == "up" else down
    message = str(error)
    at = next((i for i, name in enumerate(names) if message.startswith(f"{name}:")), None)
    pointer = f"/{field}" if at is None else f"/{field}/{at}"
    if "named by both" in message:
        # down and up are each well-formed, and ask for opposite things of one target.
        return Conflict(message, "conflicting-request", [Where(message, pointer=pointer)])
    return NotFound(message, where=[Where("no such target", pointer=pointer)])


def simulated(
    snapshot: Snapshot, down: Sequence[str], up: Sequence[str], reach: set[str] | None
) -> dict[str, Any]:
    """Targets down and up on the world read, as `placed simulate --down --up` does."""
    planner = Planner(placing.world_spec(snapshot))
    try:
        result = simulate(planner, list(down), list(up))
    except UnknownTargetError as error:
        raise _unknown(error, down, up) from None
    document = simulation_document(planner, result)
    # What the change would commit (POST /v1/targets:batch): each unit from where the
    # store has it. The simulation's own moves compare two plans, and its first, made
    # from scratch, may place a unit the store holds pending.
    document["changes"] = placing.moves_document(
        placing.simulated(snapshot, snapshot, result, planner).moves
    )
    hidden: dict[str, int] = {}
    for key in ("moves", "unplaced", "unplaced_before", "changes"):
        document[key], hidden[key] = _kept(snapshot, reach, document[key])
    return {**document, "revision": snapshot.revision, "hidden": hidden}


def migrated(
    snapshot: Snapshot, migrate: Sequence[Migration], reach: set[str] | None
) -> dict[str, Any]:
    """VMs moved to hosts under the dedication rules, as `placed simulate --migrate`
    judges them (as the root admin: what the rules allow, not what this token may do)."""
    for index, (unit, target) in enumerate(migrate):
        found = snapshot.units.get(unit)
        if found is None or not _visible(snapshot, reach, found[1]):
            raise NotFound(
                f"no unit {unit!r}",
                where=[Where("no such unit", pointer=f"/migrate/{index}/unit")],
            )
        if target not in snapshot.targets:
            raise NotFound(
                f"no target {target!r}",
                where=[Where("no such target", pointer=f"/migrate/{index}/target")],
            )
    cloud = cloudstack.cloud_of(snapshot)
    try:
        document, _ = migration_document(cloud, list(migrate), [], [])
    except ArgumentError as error:
        raise Invalid(str(error), where=[Where(str(error), pointer="/migrate")]) from None
    hidden = {"moves": 0, "unplaced": 0, "unplaced_before": 0, "changes": 0}
    return {**document, "revision": snapshot.revision, "hidden": hidden}
