"""Where each unit is now, and every change of it in the history."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from placed.store import revision
from placed.store.tables import (
    Account,
    Placement,
    PlacementHistory,
    Target,
    Unit,
    Workload,
    now,
)


def place(
    session: Session,
    unit: Unit,
    target: Target | None,
    reason: str = "",
    event_id: int | None = None,
) -> None:
    """Put `unit` on `target` (None: nowhere), and record the change in the history."""
    current = session.get(Placement, unit.id)
    before = session.get(Target, current.target_id).name if current else None  # type: ignore[union-attr]
    after = target.name if target else None
    if before == after:
        return
    at = now()
    if target is None:
        session.execute(delete(Placement).where(Placement.unit_id == unit.id))
    elif current is None:
        session.add(
            Placement(
                unit_id=unit.id, target_id=target.id, placed_at=at, revision=revision.bump(session)
            )
        )
    else:
        current.target_id, current.placed_at = target.id, at
        current.revision = revision.bump(session)
    session.add(
        PlacementHistory(
            unit_name=unit.name,
            from_target=before,
            to_target=after,
            at=at,
            reason=reason,
            event_id=event_id,
        )
    )
    session.flush()


def current(session: Session) -> dict[str, str]:
    """Each placed unit's target, by name."""
    rows = session.execute(
        select(Unit.name, Target.name)
        .join(Placement, Placement.unit_id == Unit.id)
        .join(Target, Target.id == Placement.target_id)
    ).all()
    return {unit: target for unit, target in rows}


def history(session: Session, unit_name: str | None = None) -> Sequence[PlacementHistory]:
    query = select(PlacementHistory).order_by(PlacementHistory.id)
    if unit_name is not None:
        query = query.where(PlacementHistory.unit_name == unit_name)
    return session.scalars(query).all()


def page(
    session: Session,
    after: str | None = None,
    limit: int = 100,
    workload: str | None = None,
    target: str | None = None,
    accounts: Sequence[str] | None = None,
) -> list[dict[str, Any]]:
    """Where each unit is, by unit name, one page. Units placed nowhere show with a null
    target. `accounts`: only units of workloads of these accounts."""
    query = (
        select(Unit.name, Workload.name, Target.name, Placement.placed_at, Account.name)
        .join(Workload, Workload.id == Unit.workload_id)
        .outerjoin(Placement, Placement.unit_id == Unit.id)
        .outerjoin(Target, Target.id == Placement.target_id)
        .outerjoin(Account, Account.id == Workload.account_id)
        .order_by(Unit.name)
        .limit(limit)
    )
    if after is not None:
        query = query.where(Unit.name > after)
    if workload is not None:
        query = query.where(Workload.name == workload)
    if target is not None:
        query = query.where(Target.name == target)
    if accounts is not None:
        query = query.where(Account.name.in_(list(accounts)))
    return [
        {
            "unit": unit,
            "workload": workload_name,
            "target": target_name,
            "placed_at": placed_at.isoformat() if placed_at is not None else None,
            "account": account,
        }
        for unit, workload_name, target_name, placed_at, account in session.execute(query)
    ]


def history_page(
    session: Session, after: int = 0, limit: int = 100, unit: str | None = None
) -> list[dict[str, Any]]:
    query = (
        select(PlacementHistory)
        .where(PlacementHistory.id > after)
        .order_by(PlacementHistory.id)
        .limit(limit)
    )
    if unit is not None:
        query = query.where(PlacementHistory.unit_name == unit)
    return [
        {
            "id": row.id,
            "unit": row.unit_name,
            "from": row.from_target,
            "to": row.to_target,
            "at": row.at.isoformat(),
            "reason": row.reason,
            "event_id": row.event_id,
        }
        for row in session.scalars(query)
    ]
