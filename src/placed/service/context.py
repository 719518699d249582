"""What a handler needs from its request: the store's engine and who is asking."""

from __future__ import annotations

from collections.abc import Sequence

from fastapi import Request
from sqlalchemy import Engine

from placed.service import eventlog
from placed.service.metrics import HttpMetrics
from placed.service.placing import Reporter
from placed.service.problems import ProblemException, request_id_of
from placed.store.claims import Actor
from placed.store.tables import EventRow


def store(request: Request) -> Engine:
    engine: Engine | None = request.app.state.database
    if engine is None:
        raise ProblemException(
            503, "no-store", "this server keeps no state: start it with placed serve"
        )
    return engine


def reporter(request: Request) -> Reporter:
    """What a committed change tells the app: its metrics, and a log line per event."""
    found: HttpMetrics = request.app.state.metrics
    as_json: bool = request.app.state.log_json

    def report(conflicts: int, rows: Sequence[EventRow], seconds: float, gave_up: bool) -> None:
        if gave_up:
            found.claim_conflicts.labels("gave_up").inc()
            found.schedule_attempts.labels("conflict").inc()
            return
        found.committed(
            conflicts, [row.kind for row in rows if row.kind.startswith("unit.")], seconds
        )
        eventlog.emit(rows, as_json)

    return report


def actor(request: Request) -> Actor:
    """The caller as events record it (the auth layer puts the token on the request)."""
    caller = getattr(request.state, "caller", None)
    return Actor(
        getattr(caller, "accessor", None), getattr(caller, "role", None), request_id_of(request)
    )
