"""GET /v1/events: what changed, oldest first, paged by id; `wait` long-polls.

A long-poll sleeps on the app's `EventBell`, rung after each commit this process makes
and, on PostgreSQL, by the listener that hears every replica's (store/notify.py). It
still reads again every POLL_S without a listener (SQLite, or PostgreSQL while the
listener reconnects) and every HEARD_POLL_S with one, in case a ring was missed.
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, BeforeValidator, Field
from starlette.concurrency import run_in_threadpool

from placed.operations import event_listing
from placed.service import context, problems
from placed.service.auth import DOMAIN_ADMIN, ROOT_ADMIN, USER, Caller, allow
from placed.service.bell import EventBell

router = APIRouter(prefix="/v1")

MAX_PAGE = 1000
MAX_WAIT_S = 30.0
POLL_S = 0.2
HEARD_POLL_S = 2.0


class Actor(BaseModel):
    accessor: str | None
    role: str | None


class EventView(BaseModel):
    id: int
    time: str
    kind: str
    subject: str
    target: str | None
    workload: str | None
    domain: str | None
    account: str | None
    actor: Actor
    request_id: str | None
    details: dict[str, Any]


class EventPage(BaseModel):
    items: list[EventView]
    next_cursor: int = Field(description="Pass as `after` for the next page (the last id).")


def _a_time(value: Any) -> Any:
    """`since` as the document says it (a date-time): pydantic would also take a number
    of seconds since 1970 (since=0.5), which no client means."""
    if isinstance(value, str):
        try:
            # RFC 3339 lets its T and Z be lower case.
            return datetime.fromisoformat(value.upper())
        except ValueError:
            raise ValueError("a time, as 2026-12-01T09:00:00Z") from None
    return value


@router.get(
    "/events",
    summary="List events",
    description="Events in commit order. Filter by kind (`unit.` for every unit event), "
    "subject, target, workload, actor (a token's accessor), since (a time); page with "
    "after (the next_cursor of the page before). wait=N answers as soon as there is an "
    "event, or after N seconds with none (at once, with what it has, when the "
    "server stops).",
    response_model=EventPage,
    responses=problems.responses(422),
)
async def list_events(
    request: Request,
    caller: Annotated[Caller, allow(ROOT_ADMIN, DOMAIN_ADMIN, USER)],
    after: Annotated[int, Query(ge=0, le=context.MAX_ID)] = 0,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 100,
    kind: Annotated[str | None, Query(max_length=64)] = None,
    subject: context.UnitQuery = None,
    target: context.NameQuery = None,
    workload: context.NameQuery = None,
    actor: Annotated[str | None, Query(max_length=32)] = None,
    since: Annotated[datetime | None, BeforeValidator(_a_time), Query()] = None,
    wait: Annotated[float, Query(ge=0, le=MAX_WAIT_S)] = 0,
    latest: Annotated[
        bool, Query(description="The newest `limit` events after `after` (oldest first).")
    ] = False,
) -> dict[str, Any]:
    engine = context.store(request)
    if since is not None and since.tzinfo is None:
        raise problems.ProblemException(
            422,
            "invalid-request",
            "since needs a UTC offset (2026-12-01T09:00:00Z)",
            [{"parameter": "query.since", "detail": "no UTC offset"}],
        )

    reach = await run_in_threadpool(context.accounts_of, engine, caller)

    wanted = event_listing.Filter(kind, subject, target, workload, actor, since, latest)

    def page() -> list[dict[str, Any]]:
        return event_listing.page(engine, after, limit, wanted, reach)

    bell: EventBell = request.app.state.event_bell
    deadline = time.monotonic() + wait
    rung = bell.rings
    items = await run_in_threadpool(page)
    # A closed bell: the server is stopping, and the poll answers what it has at once.
    while not items and time.monotonic() < deadline and not bell.closed:
        poll = HEARD_POLL_S if bell.heard.is_set() else POLL_S
        await bell.wait(min(poll, deadline - time.monotonic()), rung)
        rung = bell.rings
        items = await run_in_threadpool(page)
    return {"items": items, "next_cursor": items[-1]["id"] if items else after}
