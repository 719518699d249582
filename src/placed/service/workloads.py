"""/v1/workloads: what needs places. POST is a claim: every unit is placed, or nothing is
stored and the answer says why (the kube-style summary); PUT changes a workload at the
generation the caller saw, DELETE removes it and its units. Each change is an operation
(operations/claim.py, update.py, replace.py, remove.py); the routes authorize, parse,
call it and answer."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any

from fastapi import APIRouter, Body, Query, Request
from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema
from starlette.concurrency import run_in_threadpool

from placed.operations import claim as claiming
from placed.operations import reach, workload_listing
from placed.operations import remove as removing
from placed.operations import replace as replacing
from placed.operations import update as updating
from placed.operations.errors import OperationError
from placed.operations.replica import ReplicaWorld
from placed.operations.spec_plan import bounded_units
from placed.operations.store import Store
from placed.service import context, documents, problems
from placed.service.auth import DOMAIN_ADMIN, ROOT_ADMIN, USER, Caller, allow
from placed.service.metrics import HttpMetrics

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
    spec = claiming.read_spec(body)
    bounded_units([("/units", spec.units)])
    actor, replica, report = (
        context.actor(request, caller),
        request.app.state.replica,
        context.reporter(request),
    )

    def scoped_claim() -> dict[str, Any]:
        # One trip to a worker thread for the scope and the claim: a claim's own work is
        # short enough that a second trip would show in its cost.
        owned = claiming.owned(spec, actor, reach.reach_of(engine, actor))
        return claiming.claim(engine, owned, actor, replica, report)

    async def fast_claim() -> dict[str, Any]:
        # The replica's thread serves the claim: no trip to a worker thread unless the
        # general path takes it.
        owned = claiming.owned(spec, actor, reach.reach_of(engine, actor))
        fast: dict[str, Any] | None = await replica.claim_async(engine, owned, actor, report)
        if fast is not None:
            return fast
        general: dict[str, Any] = await run_in_threadpool(
            claiming.claim, engine, owned, actor, None, report
        )
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
    spec = claiming.read_spec(change.spec, "/spec")
    bounded_units([("/spec/units", spec.units)])
    replica: ReplicaWorld | None = request.app.state.replica
    if replica is not None and caller.role != DOMAIN_ADMIN:
        # A root-admin's and a user's reach need no read: the replica's thread serves
        # the change with the claims, with no trip to a worker thread unless the general
        # path takes it.
        owned = updating.owned_spec(name, spec, actor, reach.reach_of(engine, actor))
        fast = await replica.rescale_async(engine, owned, change.generation, actor, report)
        if fast is not None:
            return fast
        replica = None
    return await run_in_threadpool(
        updating.update, engine, name, spec, change.generation, actor, report, replica
    )


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
        replacing.replace,
        engine,
        name,
        context.actor(request, caller),
        dry_run,
        context.reporter(request),
    )


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
    return await run_in_threadpool(removing.remove, engine, name, generation, actor, report)
