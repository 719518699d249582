"""The inventory tree above the targets (zones, pods, clusters, racks) as a reader may
see it: every location to a root-admin, those its accounts may use to a scoped caller."""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from placed.operations.holdings import Holdings
from placed.operations.store import Store
from placed.store import locations
from placed.store.database import reading


def page(
    engine: Store, reach: set[str] | None, after: str | None, wanted: int, chunk: int
) -> list[dict[str, Any]]:
    """The next `wanted` locations by name after `after` that some account of `reach`
    may use (None: every one), read `chunk` at a time for a scoped caller."""
    with reading(engine) as session:
        if reach is None:
            return locations.views(session, after, wanted)
        return _usable_page(session, reach, after, wanted, chunk)


def _usable_page(
    session: Session, reach: set[str], after: str | None, wanted: int, chunk: int
) -> list[dict[str, Any]]:
    usable = Holdings(session).usable_locations(reach)
    kept: list[dict[str, Any]] = []
    while len(kept) < wanted:
        views = locations.views(session, after, chunk)
        kept += [view for view in views if view["name"] in usable]
        if len(views) < chunk:
            break
        after = views[-1]["name"]
    return kept[:wanted]
