"""POST /v1/apply: spec documents in (native, or a Juju bundle or deployer file, as the CLI
reads them), the world updated and planned in one transaction, the plan out. The route
reads the body (a large one first in a worker process); the change is an operation
(operations/apply_documents.py)."""

from __future__ import annotations

from pathlib import PurePath
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from starlette.concurrency import run_in_threadpool

from placed.operations import apply_documents
from placed.service import context, documents, problems
from placed.service.auth import DOMAIN_ADMIN, ROOT_ADMIN, USER, Caller, allow
from placed.service.bodies import read_body
from placed.service.offload import OFFLOAD_BYTES, Offload
from placed.spec.schema import MAX_NAME

router = APIRouter(prefix="/v1")


@router.post(
    "/apply",
    summary="Apply spec documents",
    description="Create or update what the documents name (locations, targets, workloads, "
    "tenancy, offerings, dedications, settings) and plan the world, all in one "
    "transaction. What they do not name is kept; with prune=true, what a document defined "
    "before and names no more is deleted. The body is what `placed plan` reads: a native "
    "spec (several documents separated by ---) or a Juju bundle or deployer file. The "
    "answer is the plan of the workloads the documents name, every unit that changed "
    "place (`changes`: placed, moved, removed, each with why), the allocation units that "
    "no longer fit where they run and stay there (`incompatible`, each with the rule; "
    "POST /v1/workloads/{name}/replace moves them), and the new revision. With "
    "dry_run=true it is the same answer for a change that is not made: what it would move "
    "and why.",
    responses={
        200: documents.documented(documents.ApplyAnswer, "The plan, the changes and the revision"),
        **problems.responses(409, 413, 415, 422),
    },
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {
                "application/json": {"schema": {"$ref": "#/components/schemas/SpecDocument"}},
                # The same document, written in YAML (as a spec file is).
                "application/yaml": {"schema": {"$ref": "#/components/schemas/SpecDocument"}},
            },
        }
    },
)
async def post_apply(
    request: Request,
    caller: Annotated[Caller, allow(ROOT_ADMIN, DOMAIN_ADMIN, USER)],
    dry_run: context.DryRun = False,
    prune: Annotated[
        bool, Query(description="Delete what a document defined before and names no more.")
    ] = False,
    expected_revision: context.ExpectedRevision = None,
    source: Annotated[
        str,
        Query(
            max_length=MAX_NAME,
            description="The file the body came from: errors name it, and a document "
            "without a name is named after it.",
        ),
    ] = "request",
) -> dict[str, Any]:
    engine = context.store(request)
    body = await read_body(request)
    name = PurePath(source).name or "request"
    if len(body) > OFFLOAD_BYTES:
        # A large body is read first in a worker process (service/offload.py): a spec
        # that does not read is refused there, without holding this process's
        # interpreter for seconds. One that reads is read again here, with the world.
        offload: Offload = request.app.state.offload
        await offload.run(
            apply_documents.checked_json,
            body,
            name,
            await run_in_threadpool(apply_documents.world_sections, engine),
        )
    return await run_in_threadpool(
        apply_documents.apply,
        engine,
        body,
        name,
        context.actor(request, caller),
        dry_run,
        prune,
        expected_revision,
        context.reporter(request),
        request.app.state.replica,
    )
