"""POST /v1/plan: a spec in, the plan document out, with no state kept: the same reader
as `placed plan` and the same engine function for its document."""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Request, Response
from fastapi.encoders import jsonable_encoder
from starlette.concurrency import run_in_threadpool

from placed.operations import spec_plan
from placed.service import documents, problems
from placed.service.auth import EVERY_ROLE, Caller, allow
from placed.service.bodies import read_body
from placed.service.offload import OFFLOAD_BYTES, Offload

router = APIRouter(prefix="/v1")


def plan(body: bytes) -> dict[str, Any]:
    """`spec_plan.plan`, its refusal as the problem it is answered with (in a worker
    process too, whose exception crosses back as it is)."""
    with problems.operation_errors():
        return spec_plan.plan(body)


def plan_json(body: bytes) -> bytes:
    """`plan`'s answer as the JSON FastAPI would send (in a worker process)."""
    return encoded(plan(body))


def encoded(document: Any) -> bytes:
    """A document as FastAPI's JSONResponse encodes it."""
    return json.dumps(
        jsonable_encoder(document),
        ensure_ascii=False,
        allow_nan=False,
        indent=None,
        separators=(",", ":"),
    ).encode("utf-8")


@router.post(
    "/plan",
    summary="Plan a spec",
    description="The spec (the same document `placed plan` reads) in the body; the plan "
    "document `placed plan --format json` prints in the answer. Nothing is stored, but "
    "planning is work: any valid token may ask.",
    response_model=None,
    responses={
        200: documents.documented(documents.PlanAnswer, "The plan document"),
        **problems.responses(413, 415, 422),
    },
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {
                # A plan needs an inventory to place on (an apply adds to the store's).
                "application/json": {
                    "schema": {
                        "allOf": [{"$ref": "#/components/schemas/SpecDocument"}],
                        "required": ["inventory"],
                    }
                }
            },
        }
    },
)
async def post_plan(
    request: Request, caller: Annotated[Caller, allow(*EVERY_ROLE)]
) -> dict[str, Any] | Response:
    body = await read_body(request)
    if len(body) > OFFLOAD_BYTES:
        # Reading it would hold the interpreter for seconds (service/offload.py).
        offload: Offload = request.app.state.offload
        return Response(await offload.run(plan_json, body), media_type="application/json")
    # Planning is CPU work: off the event loop, so health checks still answer.
    answer: dict[str, Any] = await run_in_threadpool(plan, body)
    return answer
