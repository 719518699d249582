"""Targets as a reader sees them, and a target's heartbeat. A domain-admin or user sees
the targets it may use (SERVICE.md: "what they may use"): none holds it, or the
dedication in force on it covers one of its accounts; another tenant's is not there."""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from placed.operations.errors import NotFound
from placed.operations.holdings import Holdings
from placed.operations.store import Store
from placed.store import settings, targets
from placed.store.database import reading, writing
from placed.store.leases import database_now


def page(
    engine: Store,
    reach: set[str] | None,
    after: str | None,
    wanted: int,
    under: list[str],
    state: str | None,
    chunk: int,
) -> list[dict[str, Any]]:
    """The next `wanted` targets by name after `after` (below a location of `under`, in
    `state`) that some account of `reach` may use (None: every one); a scoped caller's
    judged `chunk` names at a time (at least `wanted`)."""
    with reading(engine) as session:
        if reach is None:
            return targets.views(session, after, wanted, under=under, state=state)
        return _usable_page(session, reach, after, wanted, under, state, chunk)


def _usable_page(
    session: Session,
    reach: set[str],
    after: str | None,
    wanted: int,
    under: list[str],
    state: str | None,
    chunk: int,
) -> list[dict[str, Any]]:
    """Judged in chunks by name and location only, by the dedication in force on each,
    so a caller who may use little of the fleet pays a light read per chunk, and views
    are built only for the targets kept."""
    holdings = Holdings(session)
    kept: list[str] = []
    chunk = max(wanted, chunk)
    while len(kept) < wanted:
        located = targets.placed_names(session, after, chunk, under=under, state=state)
        if not located:
            break
        usable = holdings.usable([name for name, _ in located], reach, dict(located))
        kept.extend(name for name, _ in located if name in usable)
        if len(located) < chunk:
            break
        after = located[-1][0]
    kept = kept[:wanted]
    return targets.views(session, names=kept, limit=len(kept)) if kept else []


def one(engine: Store, name: str, reach: set[str] | None) -> dict[str, Any]:
    """The target's view; NotFound also when another tenant's dedication holds it (as if
    it were not there: another tenant's is none of the caller's business)."""
    with reading(engine) as session:
        found = targets.views(session, names=[name], limit=1)
        if found and reach is not None and not Holdings(session).usable([name], reach):
            found = []
    if not found:
        raise NotFound(f"no target {name!r}")
    return found[0]


def heartbeat(engine: Store, name: str) -> dict[str, Any]:
    """The target seen now (the database's clock), in its own row: no generation
    changes, so no claim is disturbed."""
    with writing(engine) as session:
        row = targets.by_name(session, name)
        if row is None:
            raise NotFound(f"no target {name!r}")
        at = database_now(session)
        liveness = targets.heartbeat(session, row.id, at)
        interval, timeout = settings.heartbeats(session)
    return {
        "target": name,
        "liveness": liveness,
        "last_seen": at.isoformat(),
        "interval_s": interval,
        "timeout_s": timeout,
    }
