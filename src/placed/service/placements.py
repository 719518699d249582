"""GET /v1/placements and /v1/placements/history: where each unit is, and every move."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from placed.operations import placement_listing
from placed.service import context, problems
from placed.service.auth import DOMAIN_ADMIN, ROOT_ADMIN, USER, Caller, allow
from placed.spec.schema import MAX_UNIT_NAME

router = APIRouter(prefix="/v1")

MAX_PAGE = 1000


class PlacementView(BaseModel):
    unit: str
    workload: str
    target: str | None = Field(description="null: the unit is placed nowhere (unplaced).")
    placed_at: str | None
    account: str | None


class PlacementPage(BaseModel):
    items: list[PlacementView]
    next_cursor: str | None = Field(description="Pass as `after` for the next page; null: none.")


class HistoryView(BaseModel):
    id: int
    unit: str
    from_: str | None = Field(alias="from")
    to: str | None
    at: str
    reason: str
    event_id: int | None


class HistoryPage(BaseModel):
    items: list[HistoryView]
    next_cursor: int


@router.get(
    "/placements",
    summary="Where each unit is",
    response_model=PlacementPage,
    responses=problems.responses(422),
)
async def list_placements(
    request: Request,
    caller: Annotated[Caller, allow(ROOT_ADMIN, DOMAIN_ADMIN, USER)],
    after: Annotated[
        str | None, Query(max_length=MAX_UNIT_NAME, description="The last unit seen.")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 100,
    workload: context.NameQuery = None,
    target: context.NameQuery = None,
) -> dict[str, Any]:
    engine = context.store(request)
    reach = await run_in_threadpool(context.accounts_of, engine, caller)

    return await run_in_threadpool(
        placement_listing.page, engine, after, limit, workload, target, reach
    )


@router.get(
    "/placements/history",
    summary="Every change of a unit's place",
    response_model=HistoryPage,
    response_model_by_alias=True,
    responses=problems.responses(422),
)
async def list_history(
    request: Request,
    caller: Annotated[Caller, allow(ROOT_ADMIN)],
    after: Annotated[int, Query(ge=0, le=context.MAX_ROW_ID)] = 0,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 100,
    unit: context.UnitQuery = None,
) -> dict[str, Any]:
    engine = context.store(request)

    return await run_in_threadpool(placement_listing.history, engine, after, limit, unit)
