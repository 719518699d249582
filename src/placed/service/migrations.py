"""POST /v1/units/{unit}/migrate, POST /v1/targets/{name}/evacuate and .../drain:
CloudStack's migrateVirtualMachine and host maintenance, judged by the dedication rules
(`Cloud.migrate`, `Cloud.evacuate`) on the world read, as `placed simulate --migrate` and
`--maintenance` judge them on a spec.

A drain is maintenance as CloudStack's PrepareForMaintenance does it: the host takes
nothing new, every allocation unit on it is placed again by the plan (its pipeline holds
the dedication rules, tenant affinity and implicit dedication), and a unit that finds no
place stays where it is with a `migration.refused` event, while the others move.

A migration onto a host the VM's account may not use is refused (the design: "migration
of a VM to a resource not owned by the account must fail"), and a maintenance that cannot
place every VM of the host again moves none; both answer 409 with the rule's kind and
leave one `migration.refused` event, nothing else.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Sequence
from typing import Annotated, Any

from fastapi import APIRouter, Body, Request
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from placed.engine.planner import Planner
from placed.engine.rebalance import simulate
from placed.model.dedications import (
    MIGRATION_REFUSED,
    NO_CAPACITY,
    PERMISSION_DENIED,
    DedicationError,
)
from placed.operations import cloudstack, placing
from placed.operations.replica import ReplicaWorld, Retargeting
from placed.operations.store import Store
from placed.service import context, problems
from placed.service.auth import (
    ROOT_ADMIN,
    Caller,
    allow,
)
from placed.service.targets import AdminChange, MoveView, Reason, StateChange
from placed.spec.schema import MAX_NAME
from placed.store.claims import MOVED, Actor, Extra, Move
from placed.store.world import Snapshot

router = APIRouter(prefix="/v1")

MAINTENANCE = "maintenance"
DRAIN = "drain"


class MigrateTo(BaseModel):
    model_config = ConfigDict(extra="forbid")
    target: str = Field(min_length=1, max_length=MAX_NAME, description="The host to move to.")


class Migration(BaseModel):
    model_config = ConfigDict(populate_by_name=True)
    unit: str
    from_: str | None = Field(alias="from")
    to: str
    revision: int
    changes: list[MoveView] = Field(description="The move, and what the world's plan moved.")
    incompatible: list[dict[str, Any]] = Field(
        default_factory=list,
        description="Allocation units that no longer fit where they run (they stay).",
    )


def migrate(
    engine: Store,
    unit: str,
    target: str,
    principal: str,
    actor: Actor,
    report: placing.Reporter = placing.silent,
) -> dict[str, Any]:
    def prepare(snapshot: Snapshot) -> placing.Prepared:
        if unit not in snapshot.units:
            raise problems.ProblemException(404, "not-found", f"no unit {unit!r}")
        cloud = cloudstack.cloud_of(snapshot)
        who = cloudstack.principal_of(cloud, principal)
        source = snapshot.placements.get(unit)
        workload = snapshot.units[unit][1]
        try:
            cloud.migrate(who, unit, target)
        except DedicationError as error:
            if error.kind == MIGRATION_REFUSED:
                details = {"operation": "migrate", "from": source, "to": target}
                owner = snapshot.workloads.get(workload)
                account = owner.account if owner is not None else None
                raise cloudstack.Refusal(error, unit, target, workload, details, account) from None
            raise cloudstack.problem(error) from None
        after = snapshot.copy()
        after.placements[unit] = target
        prepared = placing.plan(snapshot, after)
        why = f"migrated from {source} to {target} as asked"
        prepared.moves = [
            dataclasses.replace(move, why=why) if move.unit == unit else move
            for move in prepared.moves
        ]
        prepared.data.update({"unit": unit, "from": source, "to": target})
        return prepared

    try:
        committed = placing.transact(engine, prepare, actor, report=report)
    except cloudstack.Refusal as refusal:
        raise cloudstack.record(engine, refusal, actor, report) from None
    return {
        **committed.prepared.data,
        "revision": committed.revision,
        "changes": placing.moves_document(committed.prepared.moves),
    }


@router.post(
    "/units/{unit:path}/migrate",
    summary="Migrate a VM",
    description="CloudStack's migrateVirtualMachine, root admins only (403 "
    "permission-denied). A host the VM's account may not use (dedicated to others, not "
    "dedicated to a dedicated VM's domain chain, down, or without room) is a 409 "
    "migration-refused and a `migration.refused` event; a unit that is no tenant's VM, or "
    "a host that does not exist, a 409 invalid-parameter.",
    response_model=Migration,
    response_model_by_alias=True,
    responses=problems.responses(403, 404, 409, 422),
)
async def post_migrate(
    request: Request,
    unit: context.UnitPath,
    body: MigrateTo,
    caller: Annotated[Caller, allow(ROOT_ADMIN)],
) -> dict[str, Any]:
    engine = context.store(request)
    return await run_in_threadpool(
        migrate,
        engine,
        unit,
        body.target,
        context.principal(caller),
        context.actor(request, caller),
        context.reporter(request),
    )


def evacuate(
    engine: Store,
    name: str,
    reason: str,
    principal: str,
    actor: Actor,
    report: placing.Reporter = placing.silent,
) -> dict[str, Any]:
    def prepare(snapshot: Snapshot) -> placing.Prepared:
        row = snapshot.targets.get(name)
        if row is None:
            raise problems.ProblemException(404, "not-found", f"no target {name!r}")
        cloud = cloudstack.cloud_of(snapshot)
        who = cloudstack.principal_of(cloud, principal)
        try:
            moved = cloud.evacuate(who, name)
        except DedicationError as error:
            if error.kind == PERMISSION_DENIED:
                raise cloudstack.problem(error) from None
            failed = cloud.events[-1].details.get("vm") if cloud.events else None
            details = {"operation": MAINTENANCE, "vm": failed or None}
            raise cloudstack.Refusal(error, name, name, None, details) from None
        # The VMs move as the rules placed them; whatever else ran there moves as a
        # target going down moves it (`placed simulate --down`).
        middle = snapshot.copy()
        middle.placements.update(moved)
        after = middle.copy()
        after.targets[name] = dataclasses.replace(row, admin_state=MAINTENANCE)
        planner = Planner(placing.world_spec(middle))
        # Diffed against `middle`: the VMs' moves are the rules' own, prepended below.
        prepared = placing.simulated(middle, after, simulate(planner, [name], []), planner)
        why = f"{name} went into maintenance: placed again under the same rules"
        prepared.moves = [
            Move(snapshot.units[vm][1], vm, name, host, why, MOVED) for vm, host in moved.items()
        ] + prepared.moves
        changed = row.admin_state != MAINTENANCE
        if changed:
            prepared.extra.append(
                Extra(
                    "target.maintenance",
                    name,
                    target=name,
                    details={"reason": reason, "moves": len(prepared.moves)},
                )
            )
        prepared.data["changed"] = changed
        return prepared

    try:
        committed = placing.transact(engine, prepare, actor, report=report)
    except cloudstack.Refusal as refusal:
        raise cloudstack.record(engine, refusal, actor, report) from None
    return {
        "target": name,
        "admin_state": MAINTENANCE,
        "changed": committed.prepared.data["changed"],
        "revision": committed.revision,
        "moves": placing.moves_document(committed.prepared.moves),
    }


@router.post(
    "/targets/{name:path}/evacuate",
    summary="Put a host into maintenance",
    description="Its VMs are placed again under the same rules as a deploy (CloudStack's "
    "migrateAway), its other units move as POST .../down moves them, and it takes nothing "
    "new until POST .../up. Root admins only. When a VM finds no place none moves: a 409 "
    "of the rule's kind (no-capacity, zone-closed) and a `migration.refused` event.",
    response_model=AdminChange,
    response_model_by_alias=True,
    responses=problems.responses(403, 404, 409, 422),
)
async def post_evacuate(
    request: Request,
    name: context.NamePath,
    caller: Annotated[Caller, allow(ROOT_ADMIN)],
    body: Annotated[Reason | None, Body()] = None,
) -> dict[str, Any]:
    engine = context.store(request)
    why = body.reason if body is not None else ""
    return await run_in_threadpool(
        evacuate,
        engine,
        name,
        why,
        context.principal(caller),
        context.actor(request, caller),
        context.reporter(request),
    )


MAX_DRAIN = 1000  # targets in one drain, as POST /v1/targets:batch takes


def drain(
    engine: Store,
    names: Sequence[str],
    reason: str,
    actor: Actor,
    dry_run: bool = False,
    expected_revision: int | None = None,
    report: placing.Reporter = placing.silent,
    replica: ReplicaWorld | None = None,
) -> dict[str, Any]:
    """Drain every target of `names` at once, in one plan and one transaction: all go
    into maintenance before anything is placed again, so a unit leaving one never lands
    on another (as CloudStack would have it, had it several hosts in maintenance). With
    `replica`, a delta on its live world when it can be one (every unit finds another
    place) and no revision is expected."""
    wanted = list(dict.fromkeys(names))  # each once, in order
    if replica is not None and not dry_run and expected_revision is None:
        asked = Retargeting(tuple((name, MAINTENANCE) for name in wanted), reason, DRAIN)
        fast = replica.retarget(engine, asked, actor, report)
        if fast is not None:
            done = set(fast["changed"])
            return {
                "targets": [
                    {"target": name, "admin_state": MAINTENANCE, "changed": name in done}
                    for name in wanted
                ],
                "dry_run": False,
                "revision": fast["revision"],
                "moves": fast["moves"],
                "refused": [],
            }

    def prepare(snapshot: Snapshot) -> placing.Prepared:
        missing = [name for name in wanted if name not in snapshot.targets]
        if missing:
            raise problems.ProblemException(
                404,
                "not-found",
                f"no target {missing[0]!r}"
                + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""),
            )
        draining = set(wanted)
        rows = {name: snapshot.targets[name] for name in wanted}
        after = snapshot.copy()
        for name, row in rows.items():
            after.targets[name] = dataclasses.replace(row, admin_state=MAINTENANCE)
        # The allocation units that run there (mapping and every-mode units follow the
        # targets' state in any plan).
        units: dict[str, list[str]] = {}
        for running in snapshot.running():
            if running["target"] in draining:
                workload = snapshot.units[running["unit"]][1]
                units.setdefault(workload, []).append(running["unit"])
        refused: dict[str, str] = {}
        while True:
            again = {
                workload: [unit for unit in found if unit not in refused]
                for workload, found in units.items()
            }
            again = {workload: found for workload, found in again.items() if found}
            prepared = placing.plan(snapshot, after.copy(), again)
            moving = {unit for found in again.values() for unit in found}
            nowhere = {o.unit: o.summary for o in prepared.result.unplaced if o.unit in moving}
            if not nowhere:
                break
            # A unit with no other place stays (its host in maintenance); the others are
            # planned again without it, so none takes a place it would have freed.
            refused.update(nowhere)
        prepared.moves = [
            dataclasses.replace(
                move,
                why=f"{move.source} is drained (maintenance): placed again under the same "
                f"rules; now on {move.destination}: {move.why}",
            )
            if move.source in draining and move.destination not in (None, move.source)
            else move
            for move in prepared.moves
        ]
        accounts = {n: w.account for n, w in snapshot.workloads.items()}
        stays = {unit: snapshot.placements[unit] for unit in refused}
        refusals = [
            Extra(
                cloudstack.MIGRATION_REFUSED_EVENT,
                unit,
                target=stays[unit],
                workload=snapshot.units[unit][1],
                account=accounts.get(snapshot.units[unit][1]),
                details={
                    "operation": DRAIN,
                    "from": stays[unit],
                    "error": NO_CAPACITY,
                    "why": f"{unit} stays on {stays[unit]}: no other target takes it: {summary}",
                },
            )
            for unit, summary in refused.items()
        ]
        changed = [name for name in wanted if rows[name].admin_state != MAINTENANCE]
        staying = Counter(stays.values())
        several = len(wanted) > 1
        head = [
            Extra(
                "target.maintenance",
                name,
                target=name,
                details={
                    "reason": reason,
                    "operation": DRAIN,
                    "moves": len(prepared.moves),
                    "refused": staying[name],
                    **({"batch": True} if several else {}),
                },
            )
            for name in changed
        ]
        prepared.extra[:0] = [*head, *refusals]
        prepared.data["changed"] = changed
        prepared.data["refused"] = [
            {
                "unit": unit,
                "workload": snapshot.units[unit][1],
                "target": stays[unit],
                "why": summary,
            }
            for unit, summary in refused.items()
        ]
        return prepared

    committed = placing.transact(
        engine,
        prepare,
        actor,
        dry_run=dry_run,
        expected_revision=expected_revision,
        report=report,
    )
    changed = set(committed.prepared.data["changed"])
    return {
        "targets": [
            {"target": name, "admin_state": MAINTENANCE, "changed": name in changed}
            for name in wanted
        ],
        "dry_run": dry_run,
        "revision": committed.revision,
        "moves": placing.moves_document(committed.prepared.moves),
        "refused": committed.prepared.data["refused"],
    }


class Refused(BaseModel):
    unit: str
    workload: str
    target: str = Field(description="The drained target it stays on.")
    why: str = Field(description="Why no other target takes it (the kube-style summary).")


class Drained(AdminChange):
    dry_run: bool
    refused: list[Refused] = Field(
        description="Units that found no other place: they stay on the target, each with a "
        "`migration.refused` event."
    )


class DrainMany(BaseModel):
    model_config = ConfigDict(extra="forbid")
    targets: list[Annotated[str, Field(min_length=1, max_length=MAX_NAME)]] = Field(
        min_length=1, max_length=MAX_DRAIN, description="Targets to drain, each once."
    )
    reason: str = Field("", max_length=255, description="Why, for the events.")


class DrainedMany(BaseModel):
    targets: list[StateChange]
    dry_run: bool = Field(description="true: planned only, nothing was written.")
    revision: int = Field(description="The world's revision (a dry run's: the one it saw).")
    moves: list[MoveView]
    refused: list[Refused] = Field(
        description="Units that found no other place: each stays on its target, with a "
        "`migration.refused` event."
    )


DRAIN_RULES = (
    "under the same rules as a deploy (dedication included); mapping units move to their "
    "next owner and every-mode units leave, as when it goes down. A unit that finds no "
    "other place stays where it is, listed in `refused` with a `migration.refused` event; "
    "the others move (CloudStack's PrepareForMaintenance). All in one transaction; "
    "dry_run=true answers the same and changes nothing, with the revision it saw; "
    "expected_revision (a dry run's revision) refuses with 409 revision-changed if the "
    "world changed since. Root admins only."
)


@router.post(
    "/targets/{name:path}/drain",
    summary="Drain a host for maintenance",
    description="The target goes into maintenance (it takes nothing new until POST "
    ".../up) and each allocation unit on it is placed again by the plan, " + DRAIN_RULES,
    response_model=Drained,
    response_model_by_alias=True,
    responses=problems.responses(403, 404, 409, 422),
)
async def post_drain(
    request: Request,
    name: context.NamePath,
    caller: Annotated[Caller, allow(ROOT_ADMIN)],
    body: Annotated[Reason | None, Body()] = None,
    dry_run: context.DryRun = False,
    expected_revision: context.ExpectedRevision = None,
) -> dict[str, Any]:
    engine = context.store(request)
    why = body.reason if body is not None else ""
    done = await run_in_threadpool(
        drain,
        engine,
        [name],
        why,
        context.actor(request, caller),
        dry_run,
        expected_revision,
        context.reporter(request),
        request.app.state.replica,
    )
    [one] = done.pop("targets")
    return {**one, **done}


@router.post(
    "/targets:drain",
    summary="Drain several hosts for maintenance at once",
    description="Every target in `targets` goes into maintenance (each takes nothing new "
    "until POST .../up) and each allocation unit on them is placed again by one plan, "
    "with all of them already in maintenance, so that no unit leaving one lands on "
    "another; " + DRAIN_RULES,
    response_model=DrainedMany,
    response_model_by_alias=True,
    responses=problems.responses(403, 404, 409, 422),
)
async def post_drain_many(
    request: Request,
    body: DrainMany,
    caller: Annotated[Caller, allow(ROOT_ADMIN)],
    dry_run: context.DryRun = False,
    expected_revision: context.ExpectedRevision = None,
) -> dict[str, Any]:
    engine = context.store(request)
    return await run_in_threadpool(
        drain,
        engine,
        body.targets,
        body.reason,
        context.actor(request, caller),
        dry_run,
        expected_revision,
        context.reporter(request),
        request.app.state.replica,
    )
