"""Liveness and readiness, as Kubernetes probes them: /healthz says the process answers;
/readyz says it can serve (the store will add its database and schema check)."""

from __future__ import annotations

import logging
from collections.abc import Callable

from fastapi import APIRouter, Request
from pydantic import BaseModel
from starlette.concurrency import run_in_threadpool

from placed.service import problems
from placed.service.auth import public

log = logging.getLogger("placed.service")

# None when ready, else why not (shown to the caller).
Readiness = Callable[[], str | None]


def always_ready() -> str | None:
    return None


class Status(BaseModel):
    status: str


router = APIRouter()


@router.get("/healthz", summary="The process is up", dependencies=[public()])
def healthz() -> Status:
    return Status(status="ok")


@router.get(
    "/readyz",
    summary="The service can serve requests",
    responses=problems.responses(503),
    dependencies=[public()],
)
async def readyz(request: Request) -> Status:
    check: Readiness = request.app.state.readiness
    try:
        # A check may wait on a database: never on the event loop.
        reason = await run_in_threadpool(check)
    except Exception as error:
        # The caller learns only that it failed; the log has what and where.
        log.warning("readiness check failed", exc_info=True)
        reason = f"the readiness check failed: {type(error).__name__}"
    if reason is not None:
        raise problems.ProblemException(503, "not-ready", reason)
    return Status(status="ok")
