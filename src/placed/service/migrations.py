"""POST /v1/units/{unit}/migrate, POST /v1/targets/{name}/evacuate, .../drain and
/v1/targets:drain: CloudStack's migrateVirtualMachine and host maintenance. The routes
authorize, parse and answer; each change is an operation (operations/migrate.py,
evacuate.py, drain.py), judged by the dedication rules as `placed simulate --migrate` and
`--maintenance` judge a spec. A refusal answers 409 with the rule's kind and leaves one
`migration.refused` event, nothing else.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Request
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from placed.operations import drain, evacuate, migrate
from placed.operations.drain import MAX_DRAIN
from placed.service import context, problems
from placed.service.auth import (
    ROOT_ADMIN,
    Caller,
    allow,
)
from placed.service.targets import AdminChange, MoveView, Reason, StateChange
from placed.spec.schema import MAX_NAME

router = APIRouter(prefix="/v1")


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
        migrate.migrate,
        engine,
        unit,
        body.target,
        context.principal(caller),
        context.actor(request, caller),
        context.reporter(request),
        request.app.state.replica,
    )


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
        evacuate.evacuate,
        engine,
        name,
        why,
        context.principal(caller),
        context.actor(request, caller),
        context.reporter(request),
        request.app.state.replica,
    )


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
        drain.drain,
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
        drain.drain,
        engine,
        body.targets,
        body.reason,
        context.actor(request, caller),
        dry_run,
        expected_revision,
        context.reporter(request),
        request.app.state.replica,
    )
