"""POST /v1/apply: spec documents in (native, or a Juju bundle or deployer file, as the CLI
reads them), the world updated and planned in one transaction, the plan out."""

from __future__ import annotations

from pathlib import PurePath
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from starlette.concurrency import run_in_threadpool

from placed.engine.documents import only_workloads
from placed.engine.report import plan_document
from placed.service import context, placing, problems
from placed.service.bodies import read_body
from placed.service.plan import invalid_spec
from placed.spec import SpecError
from placed.spec.juju.convert import native_document
from placed.spec.juju.files import looks_like_juju_text
from placed.spec.load import load_specs_text, parse_documents
from placed.spec.schema import SpecDocument
from placed.spec.source import decode
from placed.store import merge
from placed.store.claims import Actor, Extra
from placed.store.world import Snapshot

router = APIRouter(prefix="/v1")


def documents_of(body: bytes, source: str) -> list[SpecDocument]:
    """The body's documents, each named (a document without a name is named after the
    source, as the CLI names one after its file)."""
    try:
        text = decode(body, source)
        specs = load_specs_text(text, source)
        if looks_like_juju_text(text):
            found = [SpecDocument.model_validate(native_document(spec)) for spec in specs]
        else:
            found = parse_documents(text, source)
    except SpecError as error:
        raise invalid_spec(error, body) from None
    return [
        document if document.name else document.model_copy(update={"name": spec.name})
        for document, spec in zip(found, specs, strict=True)
    ]


def apply(
    request_engine: Any,
    body: bytes,
    source: str,
    actor: Actor,
    dry_run: bool,
    prune: bool,
    expected_revision: int | None,
    report: placing.Reporter,
) -> dict[str, Any]:
    documents = documents_of(body, source)
    named = {w.name for document in documents for w in document.workloads}

    def prepare(snapshot: Snapshot) -> placing.Prepared:
        applied = merge.apply(snapshot, documents, prune)
        if applied.conflicts:
            raise problems.ProblemException(
                409,
                "defined-elsewhere",
                applied.conflicts[0].message
                + (
                    f" (and {len(applied.conflicts) - 1} more)"
                    if len(applied.conflicts) > 1
                    else ""
                ),
                [{"pointer": c.pointer, "detail": c.message} for c in applied.conflicts[:100]],
            )
        prepared = placing.plan(snapshot, applied.after)
        prepared.extra.extend(
            Extra(
                "dedication.created",
                entry["resource"],
                target=entry["resource"],
                domain=entry["domain"],
                account=entry.get("account"),
                details=dict(entry),
            )
            for entry in applied.new_dedications
        )
        return prepared

    committed = placing.transact(
        request_engine,
        prepare,
        actor,
        dry_run=dry_run,
        expected_revision=expected_revision,
        report=report,
    )
    result = committed.prepared.result
    shown = only_workloads(result, named) if named else only_workloads(result, set())
    return {
        "revision": committed.revision,
        "dry_run": dry_run,
        "documents": [document.name for document in documents],
        "changes": placing.moves_document(committed.prepared.moves),
        "conflicts": committed.conflicts,
        **plan_document(shown),
    }


@router.post(
    "/apply",
    summary="Apply spec documents",
    description="Create or update what the documents name (locations, targets, workloads, "
    "tenancy, offerings, dedications, settings) and plan the world, all in one "
    "transaction. What they do not name is kept; with prune=true, what a document defined "
    "before and names no more is deleted. The body is what `placed plan` reads: a native "
    "spec (several documents separated by ---) or a Juju bundle or deployer file. The "
    "answer is the plan of the workloads the documents name, every unit that changed "
    "place (`changes`), and the new revision.",
    responses={
        200: {
            "description": "The plan, the changes and the revision",
            "content": {"application/json": {"schema": {"type": "object"}}},
        },
        **problems.responses(409, 413, 415, 422),
    },
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {
                "application/json": {"schema": {"$ref": "#/components/schemas/SpecDocument"}},
                "application/yaml": {"schema": {"type": "string"}},
            },
        }
    },
)
async def post_apply(
    request: Request,
    dry_run: Annotated[bool, Query(description="Plan and answer; change nothing.")] = False,
    prune: Annotated[
        bool, Query(description="Delete what a document defined before and names no more.")
    ] = False,
    expected_revision: Annotated[
        int | None,
        Query(ge=0, description="Refuse (409) if the world changed since this revision."),
    ] = None,
    source: Annotated[
        str,
        Query(
            max_length=255,
            description="The file the body came from: errors name it, and a document "
            "without a name is named after it.",
        ),
    ] = "request",
) -> dict[str, Any]:
    engine = context.store(request)
    body = await read_body(request)
    name = PurePath(source).name or "request"
    return await run_in_threadpool(
        apply,
        engine,
        body,
        name,
        context.actor(request),
        dry_run,
        prune,
        expected_revision,
        context.reporter(request),
    )
