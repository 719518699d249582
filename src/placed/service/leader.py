"""GET /v1/leader: which replica's controller holds the lease, and whether it is this
one (SERVICE.md, "One controller at a time")."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Request
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from placed.operations import lease
from placed.service import context, problems
from placed.service.auth import DOMAIN_ADMIN, ROOT_ADMIN, USER, Caller, allow
from placed.service.controller import Controller

router = APIRouter(prefix="/v1")


class LeaderView(BaseModel):
    holder: str | None = Field(description="The leading process's id; null: never held.")
    epoch: int = Field(description="Raised on each takeover; 0: never held.")
    expires_at: str | None = Field(description="Unless renewed (the database's clock).")
    expired: bool = Field(description="true: no replica leads until one takes it.")
    address: str | None = Field(
        default=None,
        description="Where the holder takes the writes the other replicas forward to it "
        "(placed serve --advertise); null: it gave none, and each replica commits its own.",
    )
    this_replica: str | None = Field(description="This process's id; null: no controller.")
    leading: bool = Field(description="Whether this replica holds it.")


@router.get(
    "/leader",
    summary="The controller's lease",
    description="Who holds the controller's lease (one placed serve process of those on "
    "the database), its epoch, until when, and whether it is the replica answering.",
    response_model=LeaderView,
    responses=problems.responses(),
)
async def leader(
    request: Request,
    caller: Annotated[Caller, allow(ROOT_ADMIN, DOMAIN_ADMIN, USER)],
) -> dict[str, Any]:
    engine = context.store(request)
    mine: Controller | None = request.app.state.controller

    seen = await run_in_threadpool(lease.standing, engine)
    found: dict[str, Any] = (
        {
            "holder": seen.holder,
            "epoch": seen.epoch,
            "expires_at": seen.expires_at.isoformat(),
            "expired": seen.expired,
            "address": seen.address,
        }
        if seen is not None
        else {"holder": None, "epoch": 0, "expires_at": None, "expired": True, "address": None}
    )
    found["this_replica"] = mine.holder if mine is not None else None
    found["leading"] = bool(
        mine is not None
        and mine.leading
        and not found["expired"]
        and found["holder"] == mine.holder
        and found["epoch"] == mine.epoch
    )
    return found
