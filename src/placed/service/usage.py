"""Aggregates the console draws, each one grouped query rather than the whole world read:
capacity and use summed per location of one level (GET /v1/usage), how a workload's
units spread over the places of one level (GET /v1/workloads/{name}/spread), and the
owner of just the targets named (GET /v1/owners), implicit dedications (rows) included."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from placed.operations import usage as operation
from placed.service import context, problems
from placed.service.auth import DOMAIN_ADMIN, ROOT_ADMIN, USER, Caller, allow
from placed.spec.schema import MAX_NAME

router = APIRouter(prefix="/v1")

MAX_OWNERS = 100
LEVEL = Query(
    max_length=64,
    description="A kind of location the inventory has (zone, pod, cluster, rack), or "
    "`target` (spread only); one the inventory does not have is a 404 invalid-parameter "
    "naming the levels there are.",
)


class ResourceUse(BaseModel):
    capacity: float
    used: float


class DomainUsage(BaseModel):
    name: str | None = Field(description="The location; null: targets below no such place.")
    up: int = Field(description="Targets in service (admin state up).")
    down: int = Field(description="Targets down or in maintenance, counted apart.")
    resources: dict[str, ResourceUse] = Field(description="Summed over the up targets only.")
    down_resources: dict[str, ResourceUse] = Field(description="The down targets' own sums.")


class Usage(BaseModel):
    level: str
    levels: list[str] = Field(description="The kinds of location the inventory has.")
    items: list[DomainUsage]


class SpreadItem(BaseModel):
    name: str | None = Field(description="The place; null: placed below no such place.")
    units: int


class Spread(BaseModel):
    workload: str
    level: str
    levels: list[str] = Field(description="The levels to choose from: kinds, then target.")
    units: int = Field(description="Units of the workload, placed or not.")
    pending: int
    items: list[SpreadItem] = Field(description="Most units first, then by name.")


class TargetOwner(BaseModel):
    target: str
    resource: str = Field(description="What is dedicated: the target or an ancestor.")
    kind: str
    domain: str
    account: str | None
    implicit: bool = Field(
        description="A host taken by an account's VM of a dedicated offering "
        "(implicit dedication), not dedicated explicitly."
    )
    inherited_from: str | None = Field(description="The ancestor dedicated; null: its own.")


class DedicationView(BaseModel):
    resource: str
    kind: str
    domain: str
    account: str | None
    implicit: bool


class Owners(BaseModel):
    items: list[TargetOwner] = Field(description="The targets named that have an owner.")
    dedications: list[DedicationView] = Field(
        description="Every dedication the caller may see (implicit ones included), as "
        "GET /v1/dedications lists them but by resource (stored rows, no plan): the "
        "location tree's badges and the filter by owner."
    )
    implicit: list[str] = Field(
        default_factory=list,
        description="With `account`: the hosts that account holds by implicit "
        "dedication (its dedicated VM runs on a host nobody dedicates), that the caller "
        "may see: what the filter by owner adds to the account's explicit dedications.",
    )


@router.get(
    "/usage",
    summary="Capacity and use per location of one level",
    description="Per location of the level (a zone by default): per resource, capacity "
    "and use summed over its targets in service, and its targets down or in maintenance "
    "counted and summed apart. One grouped query, whatever the fleet's size. A "
    "domain-admin or user gets the locations GET /v1/locations lists to it (each summed "
    "over all its targets).",
    response_model=Usage,
    responses=problems.responses(404, 422),
)
async def get_usage(
    request: Request,
    caller: Annotated[Caller, allow(ROOT_ADMIN, DOMAIN_ADMIN, USER)],
    level: Annotated[str, LEVEL] = "zone",
) -> dict[str, Any]:
    engine = context.store(request)

    def read() -> dict[str, Any]:
        return operation.usage(engine, level, context.accounts_of(engine, caller))

    return await run_in_threadpool(read)


@router.get(
    "/workloads/{name}/spread",
    summary="How a workload's units spread over one level",
    description="The units placed per place of the level (zone, pod, cluster, rack: the "
    "kinds the inventory has, or `target`), most first; a workload the caller may not "
    "see is not there (404).",
    response_model=Spread,
    responses=problems.responses(404, 422),
)
async def get_spread(
    request: Request,
    name: context.NamePath,
    caller: Annotated[Caller, allow(ROOT_ADMIN, DOMAIN_ADMIN, USER)],
    level: Annotated[str, LEVEL] = "zone",
) -> dict[str, Any]:
    engine = context.store(request)
    reach = await run_in_threadpool(context.accounts_of, engine, caller)
    return await run_in_threadpool(operation.spread, engine, name, level, reach)


@router.get(
    "/owners",
    summary="The owners of some targets",
    description="For each target named (at most 100), the dedication in force on it (its "
    "own, implicit ones included: a host an account's dedicated VM took, while such a VM "
    "runs there; else its nearest dedicated ancestor's), "
    "shown to the same callers and by the same rule as GET /v1/dedications; and every "
    "explicit dedication it may see (`dedications`). It reads only those targets' rows and the "
    "dedications' (no plan): a page of a fleet costs the same at any size.",
    response_model=Owners,
    responses=problems.responses(422),
)
async def get_owners(
    request: Request,
    caller: Annotated[Caller, allow(ROOT_ADMIN, DOMAIN_ADMIN, USER)],
    target: Annotated[
        list[context.QueryName] | None,
        Query(max_length=MAX_OWNERS, description="A target's name; repeat for more."),
    ] = None,
    account: Annotated[
        str | None,
        Query(
            min_length=1,
            max_length=MAX_NAME,
            description="An account: also list the hosts it holds implicitly (`implicit`).",
        ),
    ] = None,
) -> dict[str, Any]:
    engine = context.store(request)
    return await run_in_threadpool(
        operation.owners, engine, target or [], context.principal(caller), account
    )
