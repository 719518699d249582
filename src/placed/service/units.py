"""GET /v1/units/{unit}: one unit, where it is, every move it made and why, and the
explanation `placed explain` prints (operations/unit_description.py)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Request
from starlette.concurrency import run_in_threadpool

from placed.operations import unit_description
from placed.service import context, documents, problems
from placed.service.auth import DOMAIN_ADMIN, ROOT_ADMIN, USER, Caller, allow

router = APIRouter(prefix="/v1")


@router.get(
    "/units/{unit:path}",
    summary="One unit, explained",
    description="Where the unit is, its moves with their reasons, and the explanation "
    "`placed explain` gives: every target judged for it in the world as it is now.",
    responses={
        200: documents.documented(documents.UnitAnswer, "The unit"),
        **problems.responses(404),
    },
)
async def get_unit(
    request: Request,
    unit: context.UnitPath,
    caller: Annotated[Caller, allow(ROOT_ADMIN, DOMAIN_ADMIN, USER)],
) -> dict[str, Any]:
    engine = context.store(request)
    reach = await run_in_threadpool(context.accounts_of, engine, caller)
    return await run_in_threadpool(
        unit_description.describe, engine, unit, reach, request.app.state.replica
    )
