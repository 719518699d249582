"""Spec documents applied (POST /v1/apply): native, or a Juju bundle or deployer file as
the CLI reads them; the world updated and planned in one transaction, the plan out. What
the documents do not name is kept; with prune, what a document defined before and names
no more is deleted. A delta of the live world when the documents change workloads alone
(operations/live_apply.py), for a body small enough to read in the serving thread."""

from __future__ import annotations

from typing import Any

from placed.engine.documents import only_workloads
from placed.engine.report import plan_document
from placed.operations import change_scope, placing, pointers, reach
from placed.operations.errors import Conflict, Forbidden, Invalid, SpecPlace, Where
from placed.operations.live_apply import Applying, document_events
from placed.operations.pointers import PLACED_BYTES, invalid_spec
from placed.operations.replica import API_DOCUMENT, ReplicaWorld
from placed.operations.store import Store
from placed.spec import SpecError
from placed.spec.juju.convert import native_document
from placed.spec.juju.files import looks_like_juju_text
from placed.spec.load import load_changes_text, parse_documents
from placed.spec.schema import SpecDocument
from placed.spec.source import SourceMap, decode, parse, placed_up_to
from placed.store import merge
from placed.store import world as world_rows
from placed.store.claims import Actor, Extra
from placed.store.database import reading
from placed.store.world import Snapshot

# The largest body an apply reads in the live world's serving thread (its claims wait
# meanwhile): a few workloads' documents; a larger one is read and planned apart.
LIVE_BYTES = 64 * 1024


def sections_of(snapshot: Snapshot) -> dict[str, Any]:
    """The world's sections a document may name without defining: tenancy, offerings."""
    found: dict[str, Any] = {}
    if len(snapshot.domains) > 1 or snapshot.accounts:
        found["tenancy"] = snapshot.tenancy()
    if snapshot.offerings:
        found["offerings"] = list(snapshot.offerings)
    return found


def documents_of(body: bytes, source: str, snapshot: Snapshot | None = None) -> list[SpecDocument]:
    """The body's documents, each named (a document without a name is named after the
    source, as the CLI names one after its file), checked against the world's tenancy
    and offerings where they name none of their own."""
    return documents_in(body, source, sections_of(snapshot) if snapshot is not None else {})


def checked_json(body: bytes, source: str, world: dict[str, Any]) -> bytes:
    """Read the body as `documents_in` does, in a worker process (service/offload.py):
    its problem raised, or nothing when it reads."""
    documents_in(body, source, world)
    return b""


def world_sections(engine: Store) -> dict[str, Any]:
    with reading(engine) as session:
        return sections_of(world_rows.read(session))


def documents_in(body: bytes, source: str, world: dict[str, Any]) -> list[SpecDocument]:
    try:
        text = decode(body, source)
        with placed_up_to(PLACED_BYTES):
            specs = load_changes_text(text, source, world)
        if looks_like_juju_text(text):
            found = [SpecDocument.model_validate(native_document(spec)) for spec in specs]
        else:
            found = parse_documents(text, source)
    except SpecError as error:
        raise invalid_spec(error, body) from None
    named = [
        document if document.name else document.model_copy(update={"name": spec.name})
        for document, spec in zip(found, specs, strict=True)
    ]
    for index, document in enumerate(named):
        if document.name in RESERVED_DOCUMENTS:
            raise Invalid(
                f"a document cannot be named {document.name!r}: the workloads made through "
                "POST /v1/workloads belong to it, with its settings; name the document "
                "another way (its name:, or the file's name)",
                "reserved-name",
                [
                    SpecPlace(
                        "a reserved document name",
                        (f"/{index}" if len(named) > 1 else "") + "/name",
                        defined_by=document.name,
                        owned=True,
                        located=False,
                    )
                ],
            )
    return named


# Names no applied document may take: the API's own document (its workloads are those
# POST /v1/workloads makes, and its settings row, d:api, the default of their mode).
# Settings rows of documents are keyed `d:NAME` (store/settings.py), which no world key
# is, so no other name meets a row of the world.
RESERVED_DOCUMENTS = frozenset({API_DOCUMENT})


def focus_of(documents: list[SpecDocument], body: bytes, source: str) -> placing.Focus:
    """Where the body holds each workload it names, for a problem the world finds in one:
    a pointer as the body's own errors have (`/1/workloads/0` in the second of several
    documents), with its line and column in a native body. A Juju file's workloads are
    its applications, which no pointer of the world names: their problems keep the
    world's pointers."""
    try:
        text = decode(body, source)
    except SpecError:
        return placing.Focus({})
    if looks_like_juju_text(text):
        return _juju_focus(documents, text, source)
    several = len(documents) > 1
    carried = {
        w.name: (f"/{index}" if several else "") + f"/workloads/{i}"
        for index, document in enumerate(documents)
        for i, w in enumerate(document.workloads)
    }

    parsed: list[list[SourceMap]] = []  # the body's positions, read once if ever asked

    def locate(pointer: str) -> tuple[int, int] | None:
        # Only on the error path: the body is parsed again for its positions, once.
        if not parsed:
            try:
                parsed.append([found for _, found in parse(text, source)])
            except SpecError:
                parsed.append([])
        maps = parsed[0]
        parts = [int(p) if p.isdigit() else p for p in pointer.split("/")[1:]]
        index = 0
        if several:
            first = parts.pop(0)
            index = first if isinstance(first, int) else 0
        if index >= len(maps):
            return None
        with placed_up_to(PLACED_BYTES):
            position = maps[index].value(tuple(parts))
        return (position.line, position.column) if position is not None else None

    return placing.Focus(carried, locate)


def _juju_focus(documents: list[SpecDocument], text: str, source: str) -> placing.Focus:
    """A Juju bundle's workloads are its applications: a problem the world finds in one
    points at the application's entry, at its line and column. A deployer file (its
    applications under a deployment's name, maybe inherited) keeps the world's pointers."""
    try:
        with placed_up_to(PLACED_BYTES):
            parsed = parse(text, source, any_keys=True)
    except SpecError:
        return placing.Focus({})
    if len(parsed) != 1 or not isinstance(parsed[0][0], dict):
        return placing.Focus({})
    data, positions = parsed[0]
    section = next(
        (key for key in ("applications", "services") if isinstance(data.get(key), dict)), None
    )
    if section is None:
        return placing.Focus({})
    names = {w.name for document in documents for w in document.workloads}
    paths = {
        pointers.pointer([section, str(name)]): (section, str(name))
        for name in data[section]
        if str(name) in names
    }

    def locate(pointer: str) -> tuple[int, int] | None:
        path = paths.get(pointer)
        position = positions.key(path) if path is not None else None
        return (position.line, position.column) if position is not None else None

    return placing.Focus({path[1]: pointer for pointer, path in paths.items()}, locate, whole=True)


# What only a root-admin's document may hold: everything but workloads.
_ROOT_SECTIONS = ("inventory", "tenancy", "offerings", "storage", "dedications", "running")


def scoped(
    documents: list[SpecDocument], actor: Actor, within: set[str] | None
) -> list[SpecDocument]:
    """A domain-admin's or user's documents: workloads of their own accounts only."""
    if within is None:
        return documents
    out = []
    for index, document in enumerate(documents):
        prefix = f"/{index}" if len(documents) > 1 else ""
        for section in _ROOT_SECTIONS:
            if getattr(document, section):
                raise Forbidden(
                    f"a {actor.role} token applies workloads only; {section} is the root-admin's",
                    "forbidden",
                    [Where("root-admin only", pointer=f"{prefix}/{section}")],
                )
        if document.settings.model_fields_set:
            raise Forbidden(
                "settings are the root-admin's",
                "forbidden",
                [Where("root-admin only", pointer=f"{prefix}/settings")],
            )
        workloads = [
            w.model_copy(
                update={
                    "account": reach.own_account(
                        actor.role,
                        actor.scope,
                        w.account,
                        within,
                        f"{prefix}/workloads/{i}/account",
                    )
                }
            )
            for i, w in enumerate(document.workloads)
        ]
        out.append(document.model_copy(update={"workloads": workloads}))
    return out


def _document_events(
    before: Snapshot, prepared: placing.Prepared, documents: list[SpecDocument], prune: bool
) -> list[Extra]:
    """A `document.applied` event per document, and a `document.pruned` one for each
    whose prune deleted something, naming what (each object has its own event too)."""
    changed = list(change_scope.touched(before, prepared.after, prepared.made_for))
    if not changed and not prepared.moves and not prepared.extra:
        return []  # an apply that changes nothing records nothing, as it stores nothing
    deleted: dict[str, list[str]] = {}
    if prune:
        for item in changed:
            if item.how != change_scope.DELETED:
                continue
            row = before.workloads.get(item.name) if item.kind == "workload" else None
            owner = row.document if row is not None else before.node_documents.get(item.name)
            if owner is not None:
                deleted.setdefault(owner, []).append(f"{item.kind} {item.name}")
    return document_events(documents, deleted, prune)


def apply(
    request_engine: Store,
    body: bytes,
    source: str,
    actor: Actor,
    dry_run: bool,
    prune: bool,
    expected_revision: int | None,
    report: placing.Reporter,
    replica: ReplicaWorld | None = None,
) -> dict[str, Any]:
    """With `replica`, a delta on its live world when the documents change workloads
    alone (operations/live_apply.py), for a body small enough to read in the serving thread
    (`LIVE_BYTES`)."""
    within = reach.reach_of(request_engine, actor)
    if (
        replica is not None
        and not dry_run
        and expected_revision is None
        and len(body) <= LIVE_BYTES
    ):

        def read(snapshot: Snapshot) -> list[SpecDocument]:
            return scoped(documents_of(body, source, snapshot), actor, within)

        fast = replica.apply(request_engine, Applying(read, prune), actor, report)
        if fast is not None:
            return fast
    named: set[str] = set()
    titles: list[str] = []

    def prepare(snapshot: Snapshot) -> placing.Prepared:
        # Read against the world each try plans: a workload may name its accounts.
        documents = scoped(documents_of(body, source, snapshot), actor, within)
        named.clear()
        named.update(w.name for document in documents for w in document.workloads)
        titles[:] = [str(document.name) for document in documents]
        for name in sorted(named):
            # Answered as POST /v1/workloads answers it: nothing of whose it is.
            if change_scope.hidden(actor, snapshot, name):
                raise change_scope.name_taken(name)
        applied = merge.apply(snapshot, documents, prune)
        if applied.conflicts:
            raise Conflict(
                applied.conflicts[0].message
                + (
                    f" (and {len(applied.conflicts) - 1} more)"
                    if len(applied.conflicts) > 1
                    else ""
                ),
                "defined-elsewhere",
                [Where(c.message, pointer=c.pointer) for c in applied.conflicts[:100]],
            )
        prepared = placing.plan(snapshot, applied.after, focus=focus_of(documents, body, source))
        prepared.extra.extend(_document_events(snapshot, prepared, documents, prune))
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
        "documents": titles,
        "changes": placing.moves_document(committed.prepared.moves),
        "incompatible": committed.prepared.data.get("incompatible", []),
        "conflicts": committed.conflicts,
        **plan_document(shown),
    }
