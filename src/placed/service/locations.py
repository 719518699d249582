"""GET /v1/locations: the inventory tree above the targets (zones, pods, clusters,
racks), each with its parent, so a reader can draw the tree and filter targets by it."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from placed.service import context, problems
from placed.service.auth import DOMAIN_ADMIN, ROOT_ADMIN, USER, Caller, allow
from placed.store import locations
from placed.store.database import reading

router = APIRouter(prefix="/v1")

MAX_PAGE = 1000


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
    description="The locations (zones, pods, clusters, racks) by name, each with its parent.",
    response_model=LocationPage,
    responses=problems.responses(422),
)
async def list_locations(
    request: Request,
    caller: Annotated[Caller, allow(ROOT_ADMIN, DOMAIN_ADMIN, USER)],
    after: Annotated[str | None, Query(max_length=255, description="The last name seen.")] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 100,
) -> dict[str, Any]:
    engine = context.store(request)

    def page() -> dict[str, Any]:
        with reading(engine) as session:
            items = locations.views(session, after, limit + 1)
        more = len(items) > limit
        items = items[:limit]
        return {"items": items, "next_cursor": items[-1]["name"] if more and items else None}

    return await run_in_threadpool(page)
