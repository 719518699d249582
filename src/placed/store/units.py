"""Units: the numbered instances of a workload (node3/0, node3/1, ...)."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.orm import Session

from placed.store.tables import Unit, Workload


def ensure(session: Session, workload: Workload, count: int) -> Sequence[Unit]:
    """The workload's units 0..count-1, creating the missing ones."""
    have = {unit.ordinal: unit for unit in of(session, workload.id)}
    session.add_all(
        Unit(name=f"{workload.name}/{n}", workload_id=workload.id, ordinal=n)
        for n in range(count)
        if n not in have
    )
    session.flush()
    return [unit for unit in of(session, workload.id) if unit.ordinal < count]


def of(session: Session, workload_id: int) -> Sequence[Unit]:
    return session.scalars(
        select(Unit).where(Unit.workload_id == workload_id).order_by(Unit.ordinal)
    ).all()


def by_name(session: Session, name: str) -> Unit | None:
    return session.scalar(select(Unit).where(Unit.name == name))
