"""/v1/targets: where units run. Reading them, and taking one down or bringing it up (its
units move as `placed simulate --down/--up` says they would)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, Query, Request
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from placed.operations import target_states
from placed.operations import targets as operation
from placed.service import context, problems
from placed.service.auth import AGENT, DOMAIN_ADMIN, ROOT_ADMIN, USER, Caller, allow
from placed.spec.schema import MAX_NAME

router = APIRouter(prefix="/v1")

MAX_PAGE = 1000
MAX_UNDER = 100


class TargetView(BaseModel):
    name: str
    kind: str
    parent: str | None
    tags: list[str]
    capacity: dict[str, float]
    used: dict[str, float]
    admin_state: str = Field(description="up, down or maintenance")
    liveness: str = Field(description="up, down or unknown (from heartbeats)")
    last_seen: str | None
    generation: int
    document: str | None = Field(description="The spec document that defines it.")


class TargetPage(BaseModel):
    items: list[TargetView]
    next_cursor: str | None = Field(description="Pass as `after` for the next page; null: none.")


class Reason(BaseModel):
    model_config = ConfigDict(extra="forbid")
    reason: str = Field("", max_length=255, description="Why, for the event.")


class MoveView(BaseModel):
    workload: str
    unit: str
    from_: str | None = Field(alias="from")
    to: str | None
    why: str
    kind: str


class AdminChange(BaseModel):
    target: str
    admin_state: str
    dry_run: bool = Field(False, description="true: planned only, nothing was written.")
    changed: bool = Field(description="false: it was already in that state.")
    revision: int
    moves: list[MoveView]


@router.get(
    "/targets",
    summary="List targets",
    description="Targets by name. A domain-admin or user sees those it may use: none holds "
    "it, or the dedication in force on it (its own, its location's, or an implicit one) "
    "covers one of its accounts.",
    response_model=TargetPage,
    responses=problems.responses(422),
)
async def list_targets(
    request: Request,
    caller: Annotated[Caller, allow(ROOT_ADMIN, DOMAIN_ADMIN, USER)],
    after: Annotated[
        str | None, Query(max_length=MAX_NAME, description="The last name seen.")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 100,
    under: Annotated[
        list[context.QueryName] | None,
        Query(
            max_length=MAX_UNDER,
            description="Only targets below one of these locations (or so named): "
            "repeat it for several, at most 100.",
        ),
    ] = None,
    state: Annotated[
        Literal["up", "down", "maintenance", "stale", "unknown"] | None,
        Query(
            description="An admin state (up, down, maintenance), or a liveness: stale "
            "(down for want of heartbeats), unknown (never heard from)."
        ),
    ] = None,
) -> dict[str, Any]:
    engine = context.store(request)
    wanted = under or []

    def page() -> dict[str, Any]:
        reach = context.accounts_of(engine, caller)
        items = operation.page(engine, reach, after, limit + 1, wanted, state, USABLE_CHUNK)
        more = len(items) > limit
        items = items[:limit]
        return {"items": items, "next_cursor": items[-1]["name"] if more and items else None}

    return await run_in_threadpool(page)


# Targets judged at a time for a scoped listing (operations/targets.py: names and
# locations only, views built only for the targets kept).
USABLE_CHUNK = 2000


@router.get(
    "/targets/{name:path}",
    summary="One target",
    description="A target another tenant's dedication holds is a 404 to a domain-admin or "
    "user, as if it were not there.",
    response_model=TargetView,
    responses=problems.responses(404),
)
async def get_target(
    request: Request,
    name: context.NamePath,
    caller: Annotated[Caller, allow(ROOT_ADMIN, DOMAIN_ADMIN, USER)],
) -> dict[str, Any]:
    engine = context.store(request)

    def one() -> dict[str, Any]:
        return operation.one(engine, name, context.accounts_of(engine, caller))

    with problems.operation_errors():
        return await run_in_threadpool(one)


MAX_BATCH = 1000


class Batch(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra=context.naming_one("down", "up"))
    down: list[Annotated[str, Field(min_length=1, max_length=MAX_NAME)]] = Field(
        default_factory=list, max_length=MAX_BATCH, description="Targets to take down."
    )
    up: list[Annotated[str, Field(min_length=1, max_length=MAX_NAME)]] = Field(
        default_factory=list, max_length=MAX_BATCH, description="Targets to bring up."
    )
    reason: str = Field("", max_length=255, description="Why, for the events.")


class StateChange(BaseModel):
    target: str
    admin_state: str
    changed: bool = Field(description="false: it was already in that state.")


class BatchChange(BaseModel):
    targets: list[StateChange]
    dry_run: bool = Field(description="true: planned only, nothing was written.")
    revision: int = Field(description="The world's revision (a dry run's: the one it saw).")
    moves: list[MoveView]


@router.post(
    "/targets:batch",
    summary="Take several targets down and others up",
    description="Every target in `down` goes down and every one in `up` comes up, their "
    "units moving as one `placed simulate --down A --down B --up C` says (a unit leaving "
    "one target never lands on another going down), each move an event, all in one "
    "transaction. dry_run=true answers the same and changes nothing; expected_revision "
    "(a dry run's revision) refuses with 409 if the world changed since. Root admins only.",
    response_model=BatchChange,
    response_model_by_alias=True,
    responses=problems.responses(404, 409, 422),
)
async def post_batch(
    request: Request,
    body: Batch,
    caller: Annotated[Caller, allow(ROOT_ADMIN)],
    dry_run: context.DryRun = False,
    expected_revision: context.ExpectedRevision = None,
) -> dict[str, Any]:
    engine = context.store(request)
    return await run_in_threadpool(
        target_states.change_states,
        engine,
        body.down,
        body.up,
        body.reason,
        context.actor(request, caller),
        context.reporter(request),
        dry_run,
        expected_revision,
        request.app.state.replica,
    )


def _state_route(state: str) -> Any:
    async def handler(
        request: Request,
        name: context.NamePath,
        caller: Annotated[Caller, allow(ROOT_ADMIN)],
        body: Annotated[Reason | None, Body()] = None,
        dry_run: context.DryRun = False,
    ) -> dict[str, Any]:
        engine = context.store(request)
        why = body.reason if body is not None else ""
        return await run_in_threadpool(
            target_states.change_state,
            engine,
            name,
            state,
            why,
            context.actor(request, caller),
            context.reporter(request),
            dry_run,
            request.app.state.replica,
        )

    handler.__name__ = f"target_{state}"
    return handler


class Liveness(BaseModel):
    target: str
    liveness: str = Field(
        description="up; down while the controller has it stale (its next sweep brings "
        "it up and its units back)"
    )
    last_seen: str
    interval_s: float = Field(description="How often a heartbeat is expected.")
    timeout_s: float = Field(description="Without a heartbeat for this long, it is stale.")


@router.post(
    "/targets/{name:path}/heartbeat",
    summary="A target is alive",
    description="Records that the target was seen now (the database's clock), in its own "
    "row: no generation changes, so no claim is disturbed. A root-admin, or the target's "
    "own agent token. A target the controller took down for want of heartbeats comes "
    "back up at its next sweep.",
    response_model=Liveness,
    responses=problems.responses(403, 404),
)
async def heartbeat(
    request: Request,
    name: context.NamePath,
    caller: Annotated[Caller, allow(ROOT_ADMIN, AGENT)],
) -> dict[str, Any]:
    engine = context.store(request)
    if caller.role == AGENT and caller.scope != name:
        raise problems.ProblemException(
            403, "forbidden", "an agent token sends its own target's heartbeat only"
        )

    with problems.operation_errors():
        return await run_in_threadpool(operation.heartbeat, engine, name)


for _state, _summary in (("down", "Take a target down"), ("up", "Bring a target up")):
    router.add_api_route(
        f"/targets/{{name:path}}/{_state}",
        _state_route(_state),
        methods=["POST"],
        summary=_summary,
        description=f"Mark the target {_state} and move the units it "
        + (
            "held to where `placed simulate --down` says they go"
            if _state == "down"
            else "would own again (mapping units come back), as `placed simulate --up` says"
        )
        + "; each move is an event, all in one transaction. dry_run=true answers the "
        "same and changes nothing.",
        response_model=AdminChange,
        response_model_by_alias=True,
        responses=problems.responses(404, 409, 422),
    )
