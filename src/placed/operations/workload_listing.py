"""What GET /v1/workloads and /v1/workloads/{name} read: a page of workloads by name,
each with its account, how many of its units are placed, and its mode (its own, or its
document's default), in one transaction."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select

from placed.operations.store import Store
from placed.store import settings
from placed.store.database import reading
from placed.store.tables import Account, Placement, Unit, Workload


@dataclass(frozen=True, slots=True)
class Listed:
    """One workload as the listing reads it."""

    name: str
    mode: str
    units: int
    placed: int
    account: str | None
    generation: int
    document: str | None
    spec: dict[str, Any]


def listed(
    engine: Store,
    after: str | None,
    limit: int,
    name: str | None = None,
    accounts: set[str] | None = None,
) -> list[Listed]:
    """Up to `limit` workloads by name, after `after`; only `name` when given, only of
    `accounts` when given (a scoped caller's)."""
    with reading(engine) as session:
        # Each workload is read with its own document's settings.
        documents = settings.documents(session)
        legacy = settings.get(session, settings.LEGACY_DEFAULT_MODE)
        placed = (
            select(Unit.workload_id, func.count().label("placed"))
            .join(Placement, Placement.unit_id == Unit.id)
            .group_by(Unit.workload_id)
            .subquery()
        )
        query = (
            select(Workload, Account.name, placed.c.placed)
            .outerjoin(Account, Account.id == Workload.account_id)
            .outerjoin(placed, placed.c.workload_id == Workload.id)
            .order_by(Workload.name)
            .limit(limit)
        )
        if after is not None:
            query = query.where(Workload.name > after)
        if name is not None:
            query = query.where(Workload.name == name)
        if accounts is not None:
            query = query.where(Account.name.in_(sorted(accounts)))
        return [
            Listed(
                name=row.name,
                mode=str(
                    row.spec.get("mode") or settings.default_mode(documents, legacy, row.document)
                ),
                units=int(row.spec.get("units", 1)),
                placed=int(count or 0),
                account=account,
                generation=row.generation,
                document=row.document,
                spec=row.spec,
            )
            for row, account, count in session.execute(query)
        ]
