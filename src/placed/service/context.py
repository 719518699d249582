"""What a handler needs from its request: the store's engine and who is asking."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any

from fastapi import Path, Query, Request
from pydantic import Field

from placed.operations import reach
from placed.operations.placing import Reporter
from placed.operations.store import Store
from placed.service import eventlog
from placed.service.auth import ROOT_ADMIN, Caller
from placed.service.bell import EventBell
from placed.service.metrics import HttpMetrics
from placed.service.problems import ProblemException, request_id_of
from placed.spec.schema import MAX_NAME, MAX_UNIT_NAME
from placed.store.claims import Actor
from placed.store.events import Recorded

# Ids, revisions and generations: the largest integer a JSON number holds exactly
# (I-JSON, RFC 7493; 2**53 - 1), far beyond any count the store reaches, and within its
# 64-bit columns. A larger one asks for nothing there is and is refused (422) before it
# reaches a query. The bound is exact as a float, so the OpenAPI document (which writes a
# body's bound as a float) says the same bound the code checks.
MAX_ID = 2**53 - 1

# The query parameters of every route that plans a change: one wording, one bound.
DryRun = Annotated[bool, Query(description="Plan and answer; change nothing.")]
# Names in a path or a query, bounded as the spec bounds them (spec/schema.py): a longer
# one is a 422 naming the parameter, never looked up.
NamePath = Annotated[str, Path(max_length=MAX_NAME)]
UnitPath = Annotated[str, Path(max_length=MAX_UNIT_NAME)]
NameQuery = Annotated[str | None, Query(max_length=MAX_NAME)]
UnitQuery = Annotated[str | None, Query(max_length=MAX_UNIT_NAME)]
# One name of a repeated query parameter (?under=a&under=b): the schema bounds each.
QueryName = Annotated[str, Field(min_length=1, max_length=MAX_NAME)]
ExpectedRevision = Annotated[
    int | None,
    Query(ge=0, le=MAX_ID, description="Refuse (409) if the world changed since this revision."),
]
MAX_ROW_ID = 2**31 - 1


def naming_one(*fields: str) -> dict[str, Any]:
    """A body's `json_schema_extra` for one that must name something in at least one of
    the lists `fields`: the schema says what the route refuses with nothing to do."""
    return {
        "anyOf": [{"required": [field], "properties": {field: {"minItems": 1}}} for field in fields]
    }  # an id of a table keyed by a plain integer (placement history)


def store(request: Request) -> Store:
    engine: Store | None = request.app.state.database
    if engine is None:
        raise ProblemException(
            503, "no-store", "this server keeps no state: start it with placed serve"
        )
    return engine


def reporter(request: Request) -> Reporter:
    """What a committed change tells the app: its metrics, and a log line per event."""
    return reporter_of(
        request.app.state.metrics, request.app.state.log_json, request.app.state.event_bell
    )


def reporter_of(found: HttpMetrics, as_json: bool, bell: EventBell | None = None) -> Reporter:
    """The same, for a change no request asked for (the controller's)."""

    def report(
        conflicts: int,
        rows: Sequence[Recorded],
        seconds: float,
        gave_up: bool,
        unplaced: Mapping[str, int] | None = None,
    ) -> None:
        if unplaced is not None:
            found.unplaced(unplaced)
        if gave_up:
            found.claim_conflicts.labels("gave_up").inc()
            found.schedule_attempts.labels("conflict").inc()
            return
        found.committed(
            conflicts, [row.kind for row in rows if row.kind.startswith("unit.")], seconds
        )
        eventlog.emit(rows, as_json)
        if rows and bell is not None:
            bell.ring()

    return report


def actor(request: Request, caller: Caller) -> Actor:
    """The caller as events record it."""
    return Actor(caller.accessor, caller.role, request_id_of(request), caller.scope)


def accounts_of(store: Store, caller: Caller) -> set[str] | None:
    """The accounts whose workloads the caller sees and changes (operations/reach.py)."""
    return reach.accounts_of(store, caller.role, caller.scope)


def principal(caller: Caller) -> str:
    """The caller as the dedication rules name principals (`Tenancy.principal`):
    `root-admin`, `domain-admin:DOMAIN` or `user:ACCOUNT`. An agent acts for a target,
    not a tenant: its text names no principal of any tenancy, so the rules refuse it."""
    if caller.role == ROOT_ADMIN:
        return caller.role
    return f"{caller.role}:{caller.scope or ''}"
