"""/v1/workloads: what needs places. POST is a claim: every unit is placed, or nothing is
stored and the answer says why (the kube-style summary); PUT changes a workload at the
generation the caller saw, DELETE removes it and its units."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any

from fastapi import APIRouter, Body, Query, Request
from pydantic import BaseModel, ConfigDict, Field, ValidationError, WithJsonSchema
from starlette.concurrency import run_in_threadpool

from placed.engine.documents import only_workloads
from placed.engine.report import plan_document
from placed.operations import change_scope, cloudstack, placing, workload_listing
from placed.operations.errors import Conflict, OperationError
from placed.operations.replica import API_DOCUMENT, ReplicaWorld
from placed.operations.store import Store
from placed.service import context, documents, problems
from placed.service.auth import DOMAIN_ADMIN, ROOT_ADMIN, USER, Caller, allow
from placed.service.bodies import bounded_units
from placed.service.metrics import HttpMetrics
from placed.spec.load import workload_errors
from placed.spec.schema import WorkloadSpec
from placed.store.claims import Actor
from placed.store.world import Snapshot, WorkloadRow

router = APIRouter(prefix="/v1")

# A call from inside placed (tests, benchmarks): a root-admin without a token.
ROOT = Caller(None, ROOT_ADMIN, None)
MAX_PAGE = 1000
# A workload's body is read by the spec's own reader (`_spec`), which points its errors
# into the body; the document describes it with the spec's schema (app.py puts it in the
# components), so a client or a fuzzer knows what a workload holds. (In an allOf: pydantic
# resolves a bare $ref among its own models, and the spec's are not among them.)
WORKLOAD_SCHEMA = {"allOf": [{"$ref": "#/components/schemas/WorkloadSpec"}]}


class WorkloadView(BaseModel):
    name: str
    mode: str
    units: int = Field(description="How many units it asks for (every mode: one per target).")
    placed: int
    account: str | None
    generation: int
    document: str | None
    spec: dict[str, Any]


class WorkloadPage(BaseModel):
    items: list[WorkloadView]
    next_cursor: str | None


class WorkloadUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    generation: int = Field(
        ge=0, le=context.MAX_ID, description="The generation this change was made from."
    )
    spec: Annotated[dict[str, Any], WithJsonSchema(WORKLOAD_SCHEMA)] = Field(
        description="The workload, as a spec file writes it."
    )


def _views(
    engine: Store,
    after: str | None,
    limit: int,
    name: str | None = None,
    accounts: set[str] | None = None,
) -> list[dict[str, Any]]:
    return [
        dataclasses.asdict(row)
        for row in workload_listing.listed(engine, after, limit, name, accounts)
    ]


@router.get(
    "/workloads",
    summary="List workloads",
    response_model=WorkloadPage,
    responses=problems.responses(422),
)
async def list_workloads(
    request: Request,
    caller: Annotated[Caller, allow(ROOT_ADMIN, DOMAIN_ADMIN, USER)],
    after: context.NameQuery = None,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 100,
) -> dict[str, Any]:
    engine = context.store(request)
    reach = await run_in_threadpool(context.accounts_of, engine, caller)
    items = await run_in_threadpool(_views, engine, after, limit + 1, None, reach)
    more = len(items) > limit
    items = items[:limit]
    return {"items": items, "next_cursor": items[-1]["name"] if more and items else None}


@router.get(
    "/workloads/{name}",
    summary="One workload",
    response_model=WorkloadView,
    responses=problems.responses(404),
)
async def get_workload(
    request: Request,
    name: context.NamePath,
    caller: Annotated[Caller, allow(ROOT_ADMIN, DOMAIN_ADMIN, USER)],
) -> dict[str, Any]:
    engine = context.store(request)
    reach = await run_in_threadpool(context.accounts_of, engine, caller)
    found = await run_in_threadpool(_views, engine, None, 1, name, reach)
    if not found:
        raise problems.ProblemException(404, "not-found", f"no workload {name!r}")
    return found[0]


def _spec(data: Any, prefix: str = "") -> WorkloadSpec:
    try:
        return WorkloadSpec.model_validate(data)
    except ValidationError as error:
        # Worded as `placed validate` words a file's workload (spec/load.py).
        listed, more = workload_errors(error)
        count = len(listed) + more
        raise problems.ProblemException(
            422,
            "invalid-spec",
            f"the workload has {count} problem" + ("s" if count != 1 else ""),
            [{"pointer": prefix + pointer, "detail": detail} for pointer, detail in listed],
        ) from None


def _with(snapshot: Snapshot, spec: WorkloadSpec, document: str | None) -> Snapshot:
    after = snapshot.copy()
    old = snapshot.workloads.get(spec.name)
    after.workload_specs[spec.name] = spec.model_dump(mode="json", exclude_defaults=True)
    mode = spec.mode or snapshot.default_mode(document)
    after.workloads[spec.name] = WorkloadRow(
        old.id if old else 0, old.generation if old else 0, document, spec.account, mode
    )
    return after


def _answer(committed: placing.Committed, name: str) -> dict[str, Any]:
    shown = only_workloads(committed.prepared.result, {name})
    return {
        "revision": committed.revision,
        "conflicts": committed.conflicts,
        "changes": placing.moves_document(committed.prepared.moves),
        "incompatible": committed.prepared.data.get("incompatible", []),
        **plan_document(shown),
    }


def claim(
    engine: Store,
    spec: WorkloadSpec,
    actor: Actor,
    replica: ReplicaWorld | None = None,
    report: placing.Reporter = placing.silent,
) -> dict[str, Any]:
    fast = replica.claim(engine, spec, actor, report) if replica is not None else None
    if fast is not None:
        return fast

    def prepare(snapshot: Snapshot) -> placing.Prepared:
        if change_scope.hidden(actor, snapshot, spec.name):
            raise change_scope.name_taken(spec.name)
        if spec.name in snapshot.workloads:
            raise problems.ProblemException(
                409, "exists", f"workload {spec.name!r} exists: PUT changes it"
            )
        prepared = placing.plan(
            snapshot, _with(snapshot, spec, API_DOCUMENT), focus=placing.Focus.one(spec.name)
        )
        unplaced = [o for o in prepared.result.unplaced if o.workload == spec.name]
        if unplaced:
            raise cloudstack.Unplaceable(
                Conflict(
                    f"{len(unplaced)} of the units cannot be placed: {unplaced[0].summary}",
                    "unplaceable",
                ),
                cloudstack.placement_failures(prepared.result.events, spec.name),
            )
        return prepared

    try:
        committed = placing.transact(engine, prepare, actor, report=report)
    except cloudstack.Unplaceable as refused:
        raise cloudstack.record_unplaceable(engine, refused, actor, report) from None
    return _answer(committed, spec.name)


@router.post(
    "/workloads",
    summary="Claim places for a workload",
    description="The workload (as a spec file writes one) is placed in full and stored, "
    "or, when some unit finds no place, nothing is stored and the 409 problem says why.",
    status_code=201,
    responses={
        201: documents.documented(documents.ChangeAnswer, "The plan of the workload"),
        **problems.responses(409, 422),
    },
)
async def post_workload(
    request: Request,
    caller: Annotated[Caller, allow(ROOT_ADMIN, DOMAIN_ADMIN, USER)],
    body: Annotated[dict[str, Any], Body(), WithJsonSchema(WORKLOAD_SCHEMA)],
) -> dict[str, Any]:
    engine = context.store(request)
    spec = _spec(body)
    bounded_units([("/units", spec.units)])
    actor, replica, report = (
        context.actor(request, caller),
        request.app.state.replica,
        context.reporter(request),
    )

    def owned_by(reach: set[str] | None) -> WorkloadSpec:
        account = context.own_account(caller, spec.account, reach, "/account")
        return spec if account == spec.account else spec.model_copy(update={"account": account})

    def scoped_claim() -> dict[str, Any]:
        # One trip to a worker thread for the scope and the claim: a claim's own work is
        # short enough that a second trip would show in its cost.
        return claim(engine, owned_by(context.accounts_of(engine, caller)), actor, replica, report)

    async def fast_claim() -> dict[str, Any]:
        # The replica's thread serves the claim: no trip to a worker thread unless the
        # general path takes it.
        owned = owned_by(context.accounts_of(engine, caller))
        fast: dict[str, Any] | None = await replica.claim_async(engine, owned, actor, report)
        if fast is not None:
            return fast
        general: dict[str, Any] = await run_in_threadpool(claim, engine, owned, actor, None, report)
        return general

    found: HttpMetrics = request.app.state.metrics
    try:
        # A domain-admin's reach is read from the store (in a worker thread); a root-admin's
        # and a user's need no read.
        answer: dict[str, Any] = await (
            run_in_threadpool(scoped_claim) if caller.role == DOMAIN_ADMIN else fast_claim()
        )
    except (problems.ProblemException, OperationError) as error:
        if error.kind == "unplaceable":
            found.schedule_attempts.labels("unplaceable").inc()
        raise
    found.schedule_attempts.labels("placed").inc()
    return answer


def update(
    engine: Store,
    name: str,
    change: WorkloadUpdate,
    actor: Actor,
    report: placing.Reporter = placing.silent,
    caller: Caller = ROOT,
    replica: ReplicaWorld | None = None,
) -> dict[str, Any]:
    reach = context.accounts_of(engine, caller)
    spec = _new_spec(name, change, caller, reach)
    if replica is not None:
        # A delta on the live world when only the count changes (operations/replica.py).
        fast = replica.rescale(engine, spec, change.generation, actor, report)
        if fast is not None:
            return fast

    def prepare(snapshot: Snapshot) -> placing.Prepared:
        row = snapshot.workloads.get(name)
        if row is None or (reach is not None and row.account not in reach):
            raise problems.ProblemException(404, "not-found", f"no workload {name!r}")
        if row.generation != change.generation:
            raise problems.ProblemException(
                409,
                "stale-generation",
                f"workload {name!r} is at generation {row.generation}, not "
                f"{change.generation}: read it again and redo the change",
                extensions={"current_generation": row.generation},
            )
        return placing.plan(
            snapshot, _with(snapshot, spec, row.document), focus=placing.Focus.one(name, "/spec")
        )

    return _answer(placing.transact(engine, prepare, actor, report=report), name)


def _new_spec(
    name: str, change: WorkloadUpdate, caller: Caller, reach: set[str] | None
) -> WorkloadSpec:
    """The PUT's spec, read, bounded and owned as the caller's workloads are."""
    spec = _spec(change.spec, "/spec")
    bounded_units([("/spec/units", spec.units)])
    account = context.own_account(caller, spec.account, reach, "/spec/account")
    if account != spec.account:
        spec = spec.model_copy(update={"account": account})
    if spec.name != name:
        # The path and the body are each well-formed, and disagree.
        raise problems.ProblemException(
            409,
            "conflicting-request",
            f"the spec names {spec.name!r}, the path {name!r}",
            [{"pointer": "/spec/name", "detail": "must be the workload of the path"}],
        )
    return spec


@router.put(
    "/workloads/{name}",
    summary="Change a workload",
    description="At the generation read: a stale one is a 409 with current_generation, "
    "never retried for the caller. Units move only as the new spec needs.",
    responses={
        200: documents.documented(documents.ChangeAnswer, "The plan of the workload"),
        **problems.responses(404, 409, 422),
    },
)
async def put_workload(
    request: Request,
    name: context.NamePath,
    change: WorkloadUpdate,
    caller: Annotated[Caller, allow(ROOT_ADMIN, DOMAIN_ADMIN, USER)],
) -> dict[str, Any]:
    engine = context.store(request)
    actor, report = context.actor(request, caller), context.reporter(request)
    replica: ReplicaWorld | None = request.app.state.replica
    if replica is not None and caller.role != DOMAIN_ADMIN:
        # A root-admin's and a user's reach need no read: the replica's thread serves
        # the change with the claims, with no trip to a worker thread unless the general
        # path takes it.
        spec = _new_spec(name, change, caller, context.accounts_of(engine, caller))
        fast = await replica.rescale_async(engine, spec, change.generation, actor, report)
        if fast is not None:
            return fast
        replica = None
    return await run_in_threadpool(update, engine, name, change, actor, report, caller, replica)


def replace(
    engine: Store,
    name: str,
    actor: Actor,
    dry_run: bool = False,
    report: placing.Reporter = placing.silent,
    caller: Caller = ROOT,
) -> dict[str, Any]:
    """Move the workload's allocation units that no longer fit where they run to where
    the plan puts them now; a unit that fits nowhere else stays (and says why)."""
    reach = context.accounts_of(engine, caller)

    def prepare(snapshot: Snapshot) -> placing.Prepared:
        row = snapshot.workloads.get(name)
        if row is None or (reach is not None and row.account not in reach):
            raise problems.ProblemException(404, "not-found", f"no workload {name!r}")
        prepared = placing.plan(snapshot, snapshot.copy())
        misfits = {m["unit"]: m for m in prepared.data["incompatible"] if m["workload"] == name}
        stayed: list[dict[str, Any]] = []
        moving = list(misfits)
        while moving:
            prepared = placing.plan(snapshot, snapshot.copy(), {name: moving})
            nowhere = {o.unit: o.summary for o in prepared.result.unplaced if o.unit in misfits}
            if not nowhere:
                break
            # Placed again elsewhere or not at all: a unit with no other place keeps the
            # one it has (no outage for a rule), and the others are planned without it.
            stayed.extend({**misfits[unit], "summary": nowhere[unit]} for unit in nowhere)
            moving = [unit for unit in moving if unit not in nowhere]
            if not moving:
                prepared = placing.plan(snapshot, snapshot.copy())
        prepared.moves = [
            dataclasses.replace(
                move,
                why=f"replaced: {move.source} no longer fits ({misfits[move.unit]['rule']}: "
                f"{misfits[move.unit]['why']}); now on {move.destination}: {move.why}",
                details={"rule": misfits[move.unit]["rule"]},
            )
            if move.unit in misfits and move.destination is not None
            else move
            for move in prepared.moves
        ]
        prepared.data["stayed"] = stayed
        return prepared

    committed = placing.transact(engine, prepare, actor, dry_run=dry_run, report=report)
    return {
        "workload": name,
        "revision": committed.revision,
        "dry_run": dry_run,
        "changes": placing.moves_document(committed.prepared.moves),
        "stayed": committed.prepared.data.get("stayed", []),
        "incompatible": committed.prepared.data.get("incompatible", []),
    }


class Replaced(BaseModel):
    workload: str
    revision: int
    dry_run: bool
    changes: list[dict[str, Any]] = Field(
        description="Each unit that moved (unit.moved, from, to, why) and anything else the "
        "plan changed."
    )
    stayed: list[dict[str, Any]] = Field(
        description="Units that no longer fit where they run but fit nowhere else: they "
        "stay, with the rule they fail and the summary of why nowhere else takes them."
    )
    incompatible: list[dict[str, Any]] = Field(
        description="What still does not fit where it runs afterwards (the world's)."
    )


@router.post(
    "/workloads/{name}/replace",
    summary="Move the units that no longer fit",
    description="The workload's allocation units that a change made incompatible with "
    "their target (a `unit.incompatible` event, `incompatible` in a change's answer) are "
    "placed again where the plan puts them now, each move an event; the others stay. A "
    "unit that fits nowhere else stays where it is and is listed in `stayed`. Nothing "
    "to move changes nothing. dry_run=true answers the same and changes nothing.",
    response_model=Replaced,
    responses=problems.responses(404, 409, 422),
)
async def post_replace(
    request: Request,
    name: context.NamePath,
    caller: Annotated[Caller, allow(ROOT_ADMIN, DOMAIN_ADMIN, USER)],
    dry_run: context.DryRun = False,
) -> dict[str, Any]:
    engine = context.store(request)
    return await run_in_threadpool(
        replace,
        engine,
        name,
        context.actor(request, caller),
        dry_run,
        context.reporter(request),
        caller,
    )


def remove(
    engine: Store,
    name: str,
    generation: int | None,
    actor: Actor,
    report: placing.Reporter = placing.silent,
    caller: Caller = ROOT,
    replica: ReplicaWorld | None = None,
) -> dict[str, Any]:
    if replica is not None:
        # A delta on the live world, committed with the claims beside it, when it can be
        # one (operations/replica.py); the caller's reach is judged there on the cached world.
        fast = replica.remove(engine, name, generation, actor, report)
        if fast is not None:
            return fast
    reach = context.accounts_of(engine, caller)

    def prepare(snapshot: Snapshot) -> placing.Prepared:
        row = snapshot.workloads.get(name)
        if row is None or (reach is not None and row.account not in reach):
            raise problems.ProblemException(404, "not-found", f"no workload {name!r}")
        if generation is not None and row.generation != generation:
            raise problems.ProblemException(
                409,
                "stale-generation",
                f"workload {name!r} is at generation {row.generation}, not {generation}",
                extensions={"current_generation": row.generation},
            )
        after = snapshot.copy()
        del after.workloads[name]
        del after.workload_specs[name]
        return placing.plan(snapshot, after)

    committed = placing.transact(engine, prepare, actor, report=report)
    return {
        "revision": committed.revision,
        "changes": placing.moves_document(committed.prepared.moves),
    }


@router.delete(
    "/workloads/{name}",
    summary="Remove a workload and its units",
    responses={
        200: documents.documented(documents.RemovedAnswer, "The units removed"),
        **problems.responses(404, 409),
    },
)
async def delete_workload(
    request: Request,
    name: context.NamePath,
    caller: Annotated[Caller, allow(ROOT_ADMIN, DOMAIN_ADMIN, USER)],
    generation: Annotated[int | None, Query(ge=0, le=context.MAX_ID)] = None,
) -> dict[str, Any]:
    engine = context.store(request)
    actor, report = context.actor(request, caller), context.reporter(request)
    replica: ReplicaWorld | None = request.app.state.replica
    if replica is not None:
        # The replica's thread serves it with the claims: no trip to a worker thread
        # unless the general path takes it.
        fast = await replica.remove_async(engine, name, generation, actor, report)
        if fast is not None:
            return fast
    return await run_in_threadpool(remove, engine, name, generation, actor, report, caller)
