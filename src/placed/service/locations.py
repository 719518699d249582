"""GET /v1/locations: the inventory tree above the targets (zones, pods, clusters,
racks), each with its parent, so a reader can draw the tree and filter targets by it. A
domain-admin or user sees the locations it may use, as it sees the targets."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from placed.operations import locations as operation
from placed.service import context, problems
from placed.service.auth import DOMAIN_ADMIN, ROOT_ADMIN, USER, Caller, allow
from placed.spec.schema import MAX_NAME

router = APIRouter(prefix="/v1")

MAX_PAGE = 1000
# Locations read at a time for a scoped listing (a fleet has a few thousand at most).
SCOPED_CHUNK = 1000


class LocationView(BaseModel):
    name: str
    kind: str
    parent: str | None
    tags: list[str]


class LocationPage(BaseModel):
    items: list[LocationView]
    next_cursor: str | None = Field(description="Pass as `after` for the next page; null: none.")


@router.get(
    "/locations",
    summary="List locations",
    description="The locations (zones, pods, clusters, racks) by name, each with its parent. "
    "A domain-admin or user sees those it may use: none holds it, or the dedication in "
    "force on it (its own or its nearest dedicated ancestor's) covers one of its accounts.",
    response_model=LocationPage,
    responses=problems.responses(422),
)
async def list_locations(
    request: Request,
    caller: Annotated[Caller, allow(ROOT_ADMIN, DOMAIN_ADMIN, USER)],
    after: Annotated[
        str | None, Query(max_length=MAX_NAME, description="The last name seen.")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 100,
) -> dict[str, Any]:
    engine = context.store(request)

    def page() -> dict[str, Any]:
        reach = context.accounts_of(engine, caller)
        items = operation.page(engine, reach, after, limit + 1, SCOPED_CHUNK)
        more = len(items) > limit
        items = items[:limit]
        return {"items": items, "next_cursor": items[-1]["name"] if more and items else None}

    return await run_in_threadpool(page)
