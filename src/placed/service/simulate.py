"""POST /v1/simulate: `placed simulate` on the stored world. Targets down and others up
(one simulation), or CloudStack migrations of running VMs, answered with the document the
CLI prints (`engine.documents.simulation_document`, `migration_document`: the same
functions) and the revision it was read at, so that a change made from it
(`POST /v1/targets:batch?expected_revision=N`) is refused if the world moved since.
Nothing is written: the world is read once, outside any write transaction.

A domain-admin or a user sees the moves and unplaced units of its own accounts'
workloads only; the others are counted in `hidden` (numbers, never names), so the
document's totals still add up."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Annotated, Any

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from placed.engine.documents import ArgumentError, migration_document, simulation_document
from placed.engine.planner import Planner
from placed.engine.rebalance import UnknownTargetError, simulate
from placed.operations import cloudstack, placing, scopes, snapshots
from placed.operations.store import Store
from placed.service import context, problems
from placed.service.auth import DOMAIN_ADMIN, ROOT_ADMIN, USER, Caller, allow
from placed.spec.schema import MAX_NAME
from placed.store.world import Snapshot

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


def reach_of(snapshot: Snapshot, caller: Caller) -> set[str] | None:
    """The accounts whose units the caller sees, from the snapshot's own tenancy rows
    (the same revision as the world simulated): None for a root-admin."""
    if caller.role == ROOT_ADMIN:
        return None
    if caller.role == USER:
        return {caller.scope} if caller.scope in snapshot.accounts else set()
    if caller.role != DOMAIN_ADMIN or caller.scope is None:
        return set()
    domains = scopes.below(snapshot.domains, caller.scope)
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


def _unknown(error: UnknownTargetError, body: SimulateBody) -> problems.ProblemException:
    """A name simulate did not find, at its place in the body."""
    field = "up" if error.option == "--up" else "down"
    names = body.up if field == "up" else body.down
    message = str(error)
    at = next((i for i, name in enumerate(names) if message.startswith(f"{name}:")), None)
    pointer = f"/{field}" if at is None else f"/{field}/{at}"
    if "named by both" in message:
        # down and up are each well-formed, and ask for opposite things of one target.
        return problems.ProblemException(
            409, "conflicting-request", message, [{"pointer": pointer, "detail": message}]
        )
    return problems.ProblemException(
        404, "not-found", message, [{"pointer": pointer, "detail": "no such target"}]
    )


def simulated(snapshot: Snapshot, body: SimulateBody, reach: set[str] | None) -> dict[str, Any]:
    """Targets down and up on the world read, as `placed simulate --down --up` does."""
    planner = Planner(placing.world_spec(snapshot))
    try:
        result = simulate(planner, list(body.down), list(body.up))
    except UnknownTargetError as error:
        raise _unknown(error, body) from None
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


def migrated(snapshot: Snapshot, body: SimulateBody, reach: set[str] | None) -> dict[str, Any]:
    """VMs moved to hosts under the dedication rules, as `placed simulate --migrate`
    judges them (as the root admin: what the rules allow, not what this token may do)."""
    for index, move in enumerate(body.migrate):
        found = snapshot.units.get(move.unit)
        if found is None or not _visible(snapshot, reach, found[1]):
            raise problems.ProblemException(
                404,
                "not-found",
                f"no unit {move.unit!r}",
                [{"pointer": f"/migrate/{index}/unit", "detail": "no such unit"}],
            )
        if move.target not in snapshot.targets:
            raise problems.ProblemException(
                404,
                "not-found",
                f"no target {move.target!r}",
                [{"pointer": f"/migrate/{index}/target", "detail": "no such target"}],
            )
    cloud = cloudstack.cloud_of(snapshot)
    try:
        document, _ = migration_document(
            cloud, [(move.unit, move.target) for move in body.migrate], [], []
        )
    except ArgumentError as error:
        raise problems.ProblemException(
            422, "invalid-request", str(error), [{"pointer": "/migrate", "detail": str(error)}]
        ) from None
    hidden = {"moves": 0, "unplaced": 0, "unplaced_before": 0, "changes": 0}
    return {**document, "revision": snapshot.revision, "hidden": hidden}


def run(engine: Store, body: SimulateBody, caller: Caller) -> dict[str, Any]:
    snapshot = snapshots.read(engine)
    reach = reach_of(snapshot, caller)
    if body.migrate:
        return migrated(snapshot, body, reach)
    return simulated(snapshot, body, reach)


def _checked(body: SimulateBody) -> None:
    if body.migrate and (body.down or body.up):
        # Each is well-formed alone: together they ask for two simulations at once.
        raise problems.ProblemException(
            409,
            "conflicting-request",
            "migrate moves running VMs one by one; simulate down and up apart",
            [{"pointer": "/migrate", "detail": "given with down or up"}],
        )
    if not (body.down or body.up or body.migrate):
        raise problems.ProblemException(
            422,
            "invalid-request",
            "nothing to simulate: name a target in down or up, or a migration",
            [{"pointer": "", "detail": "down, up and migrate are empty"}],
        )


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
    _checked(body)
    return await run_in_threadpool(run, engine, body, caller)
