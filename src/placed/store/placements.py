"""Where each unit is now, and every change of it in the history."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from placed.store import revision
from placed.store.tables import Placement, PlacementHistory, Target, Unit, now


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
