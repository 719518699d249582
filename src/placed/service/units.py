"""GET /v1/units/{unit}: one unit, where it is, every move it made and why, and the
explanation `placed explain` prints: its workload planned again in the world as it is
now, every target judged as the plan judged it."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Request
from sqlalchemy import Engine
from starlette.concurrency import run_in_threadpool

from placed.engine.planner import Planner
from placed.engine.trace import UnknownUnitError, trace, trace_document
from placed.service import context, documents, placing, problems
from placed.service.auth import DOMAIN_ADMIN, ROOT_ADMIN, USER, Caller, allow
from placed.store import placements, world
from placed.store.database import reading

router = APIRouter(prefix="/v1")


def describe(engine: Engine, unit: str, accounts: set[str] | None = None) -> dict[str, Any]:
    with reading(engine) as session:
        snapshot = world.read(session)
        history = placements.history_page(session, 0, 1000, unit)
    found = snapshot.units.get(unit)
    workload = found[1] if found is not None else None
    row = snapshot.workloads.get(workload) if workload is not None else None
    if row is None or (accounts is not None and row.account not in accounts):
        raise problems.ProblemException(404, "not-found", f"no unit {unit!r}")
    # The workload's units placed again, everything else where it is: what `placed
    # explain` shows for a unit of a plan.
    again = snapshot.copy()
    for name, (_, owner) in snapshot.units.items():
        if owner == workload:
            again.placements.pop(name, None)
    planner = Planner(placing.world_spec(again))
    try:
        explanation: dict[str, Any] | None = trace_document(
            trace(planner, planned_name(snapshot, unit, row.mode))
        )
    except UnknownUnitError:
        explanation = None  # a unit its workload no longer has (it is being removed)
    if explanation is not None:
        explanation["unit"] = unit
    return {
        "unit": unit,
        "workload": workload,
        "account": row.account,
        "target": snapshot.placements.get(unit),
        "history": history,
        "explanation": explanation,
    }


def planned_name(snapshot: world.Snapshot, unit: str, mode: str) -> str:
    """The name a plan of the workload, none of its units placed, gives the stored
    `unit`: a plan numbers units from 0, and the store keeps the names units had (a
    workload cut and grown again may hold 0, 1 and 5)."""
    workload = unit.rpartition("/")[0]
    if mode != "allocation":
        return unit
    ordinals = sorted(
        int(ordinal)
        for name, (_, owner) in snapshot.units.items()
        if owner == workload and (ordinal := name.rpartition("/")[2]).isdigit()
    )
    ordinal = unit.rpartition("/")[2]
    if not ordinal.isdigit() or int(ordinal) not in ordinals:
        return unit
    return f"{workload}/{ordinals.index(int(ordinal))}"


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
    unit: str,
    caller: Annotated[Caller, allow(ROOT_ADMIN, DOMAIN_ADMIN, USER)],
) -> dict[str, Any]:
    engine = context.store(request)
    reach = await run_in_threadpool(context.accounts_of, engine, caller)
    return await run_in_threadpool(describe, engine, unit, reach)
