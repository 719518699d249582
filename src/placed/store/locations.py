"""Locations: the inventory tree (datacenter, rack, ...) above the targets."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, aliased

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


def views(session: Session, after: str | None = None, limit: int = 100) -> list[dict[str, Any]]:
    """Locations as the API shows them, by name, one page (`after`: the last name seen)."""
    parent = aliased(Location)
    query = (
        select(Location, parent.name)
        .outerjoin(parent, parent.id == Location.parent_id)
        .order_by(Location.name)
        .limit(limit)
    )
    if after is not None:
        query = query.where(Location.name > after)
    return [
        # A row applied before its tags were written has them in its spec only.
        {
            "name": row.name,
            "kind": row.kind,
            "parent": above,
            "tags": list(row.tags or (row.spec or {}).get("tags", [])),
        }
        for row, above in session.execute(query)
    ]


def beneath(session: Session, names: Sequence[str]) -> set[int]:
    """The ids of the named locations and of every location below them. One read of the
    (id, parent) column pairs: the tree is walked in memory, once per location."""
    children: dict[int | None, list[int]] = {}
    named: list[int] = []
    wanted = set(names)
    for location_id, parent_id, name in session.execute(
        select(Location.id, Location.parent_id, Location.name)
    ):
        children.setdefault(parent_id, []).append(location_id)
        if name in wanted:
            named.append(location_id)
    found: set[int] = set()
    while named:
        here = named.pop()
        if here not in found:
            found.add(here)
            named.extend(children.get(here, ()))
    return found
