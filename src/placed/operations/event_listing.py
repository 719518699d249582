"""What GET /v1/events reads: one page of events, oldest first, filtered, within the
caller's accounts, in one transaction. The route long-polls by asking again."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from placed.operations.store import Store
from placed.store import events
from placed.store.database import reading


@dataclass(frozen=True, slots=True)
class Filter:
    """Which events a page holds (each None: any)."""

    kind: str | None = None
    subject: str | None = None
    target: str | None = None
    workload: str | None = None
    actor: str | None = None
    since: datetime | None = None
    latest: bool = False


def page(
    store: Store, after: int, limit: int, wanted: Filter, accounts: Collection[str] | None
) -> list[dict[str, Any]]:
    """Up to `limit` events after row `after`, as the API shows them."""
    with reading(store) as session:
        rows = events.page(
            session,
            after,
            limit,
            wanted.kind,
            wanted.subject,
            wanted.target,
            wanted.workload,
            wanted.actor,
            None if accounts is None else sorted(accounts),
            since=wanted.since,
            latest=wanted.latest,
        )
        return [events.view(row) for row in rows]
