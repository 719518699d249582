"""/v1/targets: where units run. Reading them, and taking one down or bringing it up (its
units move as `placed simulate --down/--up` says they would)."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, Query, Request
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from placed.engine.planner import Planner
from placed.engine.rebalance import simulate
from placed.operations import placing
from placed.operations import targets as operation
from placed.operations.replica import BATCH, DOWN_OR_UP, ReplicaWorld, Retargeting
from placed.operations.store import Store
from placed.service import context, problems
from placed.service.auth import AGENT, DOMAIN_ADMIN, ROOT_ADMIN, USER, Caller, allow
from placed.spec.schema import MAX_NAME
from placed.store.claims import Actor, Extra
from placed.store.world import Snapshot, TargetRow

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


# A target's change of state is planned and committed through placing.transact, which is
# the service's still: these functions move to operations/targets.py with it.
def replanned(snapshot: Snapshot, name: str, changed: TargetRow) -> placing.Prepared:
    """Target `name` becoming `changed` (an admin state, or liveness): when it stops
    taking work its units move as `placed simulate --down` says, when it starts again
    as `--up` says. An admin's down stays down however the heartbeats go, and a stale
    target stays down whatever the admin says, until it heartbeats again."""
    return replanned_all(snapshot, {name: changed})


def replanned_all(snapshot: Snapshot, changed: dict[str, TargetRow]) -> placing.Prepared:
    """Several targets changing at once, in one simulation (`placed simulate --down A
    --down B`): a unit leaving A never lands on B on its way."""
    after = snapshot.copy()
    after.targets.update(changed)
    planner = Planner(placing.world_spec(snapshot))
    before = snapshot.targets
    down = [n for n, row in changed.items() if before[n].takes_work and not row.takes_work]
    up = [n for n, row in changed.items() if row.takes_work and not before[n].takes_work]
    return placing.simulated(snapshot, after, simulate(planner, down, up), planner)


def change_state(
    engine: Store,
    name: str,
    state: str,
    reason: str,
    actor: Actor,
    report: placing.Reporter = placing.silent,
    dry_run: bool = False,
    replica: ReplicaWorld | None = None,
) -> dict[str, Any]:
    """Take a target down or bring it up, moving its units in the same transaction;
    `dry_run`: plan the same and write nothing (the console's what-if). With `replica`,
    a delta on its live world when it can be one (operations/replica.py)."""
    if replica is not None and not dry_run:
        asked = Retargeting(((name, state),), reason, DOWN_OR_UP)
        fast = replica.retarget(engine, asked, actor, report)
        if fast is not None:
            return {
                "target": name,
                "admin_state": state,
                "dry_run": False,
                "changed": bool(fast["changed"]),
                "revision": fast["revision"],
                "moves": fast["moves"],
            }

    def prepare(snapshot: Snapshot) -> placing.Prepared:
        row = snapshot.targets.get(name)
        if row is None:
            raise problems.ProblemException(404, "not-found", f"no target {name!r}")
        prepared = replanned(snapshot, name, dataclasses.replace(row, admin_state=state))
        if row.admin_state != state:
            prepared.extra.append(
                Extra(
                    f"target.{state}",
                    name,
                    target=name,
                    details={"reason": reason, "moves": len(prepared.moves)},
                )
            )
        prepared.data["changed"] = row.admin_state != state
        return prepared

    committed = placing.transact(engine, prepare, actor, dry_run=dry_run, report=report)
    return {
        "target": name,
        "admin_state": state,
        "dry_run": dry_run,
        "changed": committed.prepared.data["changed"],
        "revision": committed.revision,
        "moves": placing.moves_document(committed.prepared.moves),
    }


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


def change_states(
    engine: Store,
    batch: Batch,
    actor: Actor,
    report: placing.Reporter = placing.silent,
    dry_run: bool = False,
    expected_revision: int | None = None,
    replica: ReplicaWorld | None = None,
) -> dict[str, Any]:
    """Several targets down and others up in one transaction and one simulation: the
    console's what-if of several targets, and its confirmation. With `replica`, a delta
    on its live world when it can be one and no revision is expected."""
    wanted = {name: "down" for name in batch.down}
    for index, name in enumerate(batch.up):
        if name in wanted:
            # Each list is valid alone: together they ask for two things at once.
            raise problems.ProblemException(
                409,
                "conflicting-request",
                f"{name!r} is both taken down and brought up",
                [{"pointer": f"/up/{index}", "detail": "also in down"}],
            )
        wanted[name] = "up"
    if not wanted:
        raise problems.ProblemException(
            422, "invalid-request", "name a target to take down or bring up", []
        )
    if replica is not None and not dry_run and expected_revision is None:
        asked = Retargeting(tuple(wanted.items()), batch.reason, BATCH)
        fast = replica.retarget(engine, asked, actor, report)
        if fast is not None:
            done = set(fast["changed"])
            return {
                "targets": [
                    {"target": name, "admin_state": state, "changed": name in done}
                    for name, state in wanted.items()
                ],
                "dry_run": False,
                "revision": fast["revision"],
                "moves": fast["moves"],
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
        rows = {name: snapshot.targets[name] for name in wanted}
        prepared = replanned_all(
            snapshot,
            {name: dataclasses.replace(rows[name], admin_state=s) for name, s in wanted.items()},
        )
        changed = [name for name, state in wanted.items() if rows[name].admin_state != state]
        prepared.extra.extend(
            Extra(
                f"target.{wanted[name]}",
                name,
                target=name,
                details={"reason": batch.reason, "moves": len(prepared.moves), "batch": True},
            )
            for name in changed
        )
        prepared.data["changed"] = changed
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
            {"target": name, "admin_state": state, "changed": name in changed}
            for name, state in wanted.items()
        ],
        "dry_run": dry_run,
        "revision": committed.revision,
        "moves": placing.moves_document(committed.prepared.moves),
    }


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
        change_states,
        engine,
        body,
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
            change_state,
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
