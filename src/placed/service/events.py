"""GET /v1/events: what changed, oldest first, paged by id; `wait` long-polls.

A long-poll sleeps on the app's `EventBell`, rung after each commit this process makes
and, on PostgreSQL, by the listener that hears every replica's (store/notify.py). It
still reads again every POLL_S without a listener (SQLite, or PostgreSQL while the
listener reconnects) and every HEARD_POLL_S with one, in case a ring was missed.
"""

from __future__ import annotations

import asyncio
import threading
import time
from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from placed.service import context, problems
from placed.service.auth import DOMAIN_ADMIN, ROOT_ADMIN, USER, Caller, allow
from placed.store import events
from placed.store.database import reading

router = APIRouter(prefix="/v1")

MAX_PAGE = 1000
MAX_WAIT_S = 30.0
POLL_S = 0.2
HEARD_POLL_S = 2.0


class EventBell:
    """Wakes the long-polls of one app. `ring` may come from any thread; `rings` counts,
    so a waiter that read nothing knows whether a ring came since it started reading."""

    def __init__(self) -> None:
        self.rings = 0
        self.heard = threading.Event()  # set while a listener hears every replica
        self._loop: asyncio.AbstractEventLoop | None = None
        self._waiting: set[asyncio.Future[None]] = set()

    def ring(self) -> None:
        self.rings += 1
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._wake)

    def _wake(self) -> None:
        for waiter in list(self._waiting):
            if not waiter.done():
                waiter.set_result(None)

    async def wait(self, seconds: float, since: int) -> None:
        """Until a ring after the count `since`, or `seconds`."""
        if self.rings != since or seconds <= 0:
            return
        self._loop = loop = asyncio.get_running_loop()
        waiter: asyncio.Future[None] = loop.create_future()
        self._waiting.add(waiter)
        try:
            if self.rings == since:
                await asyncio.wait_for(waiter, seconds)
        except TimeoutError:
            pass
        finally:
            self._waiting.discard(waiter)


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


@router.get(
    "/events",
    summary="List events",
    description="Events in commit order. Filter by kind (`unit.` for every unit event), "
    "subject, target, workload, actor (a token's accessor), since (a time); page with "
    "after (the next_cursor of the page before). wait=N answers as soon as there is an "
    "event, or after N seconds with none.",
    response_model=EventPage,
    responses=problems.responses(422),
)
async def list_events(
    request: Request,
    caller: Annotated[Caller, allow(ROOT_ADMIN, DOMAIN_ADMIN, USER)],
    after: Annotated[int, Query(ge=0, le=context.MAX_ID)] = 0,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 100,
    kind: Annotated[str | None, Query(max_length=64)] = None,
    subject: Annotated[str | None, Query(max_length=255)] = None,
    target: Annotated[str | None, Query(max_length=255)] = None,
    workload: Annotated[str | None, Query(max_length=255)] = None,
    actor: Annotated[str | None, Query(max_length=32)] = None,
    since: Annotated[datetime | None, Query()] = None,
    wait: Annotated[float, Query(ge=0, le=MAX_WAIT_S)] = 0,
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

    def page() -> list[dict[str, Any]]:
        with reading(engine) as session:
            rows = events.page(
                session,
                after,
                limit,
                kind,
                subject,
                target,
                workload,
                actor,
                None if reach is None else sorted(reach),
                since=since,
            )
            return [events.view(row) for row in rows]

    bell: EventBell = request.app.state.event_bell
    deadline = time.monotonic() + wait
    rung = bell.rings
    items = await run_in_threadpool(page)
    while not items and time.monotonic() < deadline:
        poll = HEARD_POLL_S if bell.heard.is_set() else POLL_S
        await bell.wait(min(poll, deadline - time.monotonic()), rung)
        rung = bell.rings
        items = await run_in_threadpool(page)
    return {"items": items, "next_cursor": items[-1]["id"] if items else after}
