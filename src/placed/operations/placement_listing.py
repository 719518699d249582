"""What GET /v1/placements and /v1/placements/history read: a page of units with where
each runs (within the caller's accounts), and a page of every change of a unit's place,
each in one transaction."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from placed.operations.store import Store
from placed.store import placements
from placed.store.database import reading


def page(
    store: Store,
    after: str | None,
    limit: int,
    workload: str | None,
    target: str | None,
    accounts: Collection[str] | None,
) -> dict[str, Any]:
    """Up to `limit` units after `after`, and the cursor of the next page (None: none)."""
    with reading(store) as session:
        items = placements.page(
            session,
            after,
            limit + 1,
            workload,
            target,
            None if accounts is None else sorted(accounts),
        )
    more = len(items) > limit
    items = items[:limit]
    return {"items": items, "next_cursor": items[-1]["unit"] if more and items else None}


def history(store: Store, after: int, limit: int, unit: str | None) -> dict[str, Any]:
    """Up to `limit` changes of place after row `after`, and the cursor to poll from."""
    with reading(store) as session:
        items = placements.history_page(session, after, limit, unit)
    return {"items": items, "next_cursor": items[-1]["id"] if items else after}
