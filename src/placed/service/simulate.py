"""POST /v1/simulate: `placed simulate` on the stored world, nothing written. The route
reads the body and answers; the simulation is an operation (operations/what_if.py), which
also hides from a domain-admin or a user the units of other accounts' workloads."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from placed.operations import what_if
from placed.service import context, problems
from placed.service.auth import DOMAIN_ADMIN, ROOT_ADMIN, USER, Caller, allow
from placed.spec.schema import MAX_NAME

router = APIRouter(prefix="/v1")

MAX_NAMES = 1000  # as POST /v1/targets:batch
MAX_MIGRATIONS = 100

Name = Annotated[str, Field(min_length=1, max_length=MAX_NAME)]


class MigrateOne(BaseModel):
    model_config = ConfigDict(extra="forbid")
    unit: Name = Field(description="A running VM.")
    target: Name = Field(description="The host to move it to.")


class SimulateBody(BaseModel):
    model_config = ConfigDict(
        extra="forbid", json_schema_extra=context.naming_one("down", "up", "migrate")
    )
    down: list[Name] = Field(
        default_factory=list,
        max_length=MAX_NAMES,
        description="Targets (or locations: every target in one) that fail.",
    )
    up: list[Name] = Field(
        default_factory=list, max_length=MAX_NAMES, description="Targets that come (back) up."
    )
    migrate: list[MigrateOne] = Field(
        default_factory=list,
        max_length=MAX_MIGRATIONS,
        description="VMs moved to hosts, in order, under CloudStack's dedication rules "
        "(`placed simulate --migrate VM=HOST`); apart from down and up, as on the CLI.",
    )


class Hidden(BaseModel):
    moves: int = Field(description="Moves of units out of this token's reach.")
    unplaced: int = Field(description="Unplaced units (after) out of its reach.")
    unplaced_before: int = Field(description="Unplaced units (before) out of its reach.")
    changes: int = Field(0, description="Changes of units out of its reach.")


class SimulatedMove(BaseModel):
    workload: str
    unit: str
    from_: str | None = Field(alias="from")
    to: str | None = Field(description="null: left unplaced (or removed).")
    why: str
    removed: bool = Field(description="An every-mode unit whose target is gone.")


class Simulated(BaseModel):
    """`placed simulate --down/--up --format json`'s document, with the revision read."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)
    down: list[str]
    up: list[str]
    moves: list[SimulatedMove]
    changes: list[dict[str, Any]] = Field(
        description="What making the change (POST /v1/targets:batch) would write: each "
        "unit from where the store has it to where the simulation leaves it. `moves` "
        "compares two plans, as `placed simulate` does, and may leave out a unit the "
        "store holds pending that the new plan places."
    )
    unplaced: list[dict[str, Any]]
    unplaced_before: list[dict[str, Any]]
    units: int
    units_before: int
    moved: int = Field(description="Every move, those hidden included.")
    removed: int
    already_down: list[str]
    already_up: list[str]
    revision: int = Field(description="The revision of the world simulated.")
    hidden: Hidden


class Migrated(BaseModel):
    """`placed simulate --migrate VM=HOST --format json`'s document, with the revision."""

    model_config = ConfigDict(extra="allow")
    migrated: list[dict[str, Any]]
    refused: list[dict[str, Any]]
    targets: dict[str, list[str]]
    notes: list[str]
    events: list[dict[str, Any]]
    revision: int = Field(description="The revision of the world simulated.")
    hidden: Hidden


@router.post(
    "/simulate",
    summary="What would move if targets went down or came up",
    description="`placed simulate` on the stored world: every target in `down` fails and "
    "every one in `up` comes up, in one simulation (a location names every target in "
    "it), or the VMs of `migrate` move under CloudStack's dedication rules. Answers the "
    "CLI's document (`--format json`) and the `revision` it read; nothing changes. A "
    "domain-admin or user sees the moves and unplaced units of its own accounts' "
    "workloads, the others counted in `hidden`. Make the change with `POST "
    "/v1/targets:batch?expected_revision=REVISION` (root admins): refused with 409 if "
    "anything changed since.",
    response_model=Simulated | Migrated,
    response_model_by_alias=True,
    responses=problems.responses(404, 409, 422),
)
async def post_simulate(
    request: Request,
    body: SimulateBody,
    caller: Annotated[Caller, allow(ROOT_ADMIN, DOMAIN_ADMIN, USER)],
) -> dict[str, Any]:
    engine = context.store(request)
    migrate = [(move.unit, move.target) for move in body.migrate]
    what_if.checked(body.down, body.up, migrate)
    return await run_in_threadpool(
        what_if.run, engine, body.down, body.up, migrate, context.actor(request, caller)
    )
