"""Locations: the inventory tree (datacenter, rack, ...) above the targets."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.orm import Session

from placed.store import revision
from placed.store.tables import Location


def by_name(session: Session, name: str) -> Location | None:
    return session.scalar(select(Location).where(Location.name == name))


def create(
    session: Session,
    name: str,
    parent: str | None = None,
    kind: str = "",
    tags: Sequence[str] = (),
) -> Location:
    above = by_name(session, parent) if parent is not None else None
    if parent is not None and above is None:
        raise LookupError(f"no location {parent!r}")
    row = Location(
        name=name,
        parent_id=above.id if above else None,
        kind=kind,
        tags=list(tags),
        properties={},
        revision=revision.bump(session),
    )
    session.add(row)
    session.flush()
    return row


def path(session: Session, name: str) -> list[str]:
    """The location's names from the root down to it."""
    found: list[str] = []
    row = by_name(session, name)
    while row is not None:
        found.append(row.name)
        row = session.get(Location, row.parent_id) if row.parent_id else None
    return found[::-1]
