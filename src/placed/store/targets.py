"""Targets, their resources and their liveness.

A claim is generation-checked: `UPDATE targets SET generation = generation + 1 WHERE id
= :id AND generation = :seen` touches no row when another writer got there first, and
the caller judges that target again (SERVICE.md, "Claims"). `CHECK (used <= capacity)`
backs it in the database. Callers touching several targets take them in id order, so two
writers never wait on each other in a cycle.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, exc, func, select, update
from sqlalchemy.orm import Session

from placed.store import locations, revision
from placed.store.leases import database_now
from placed.store.tables import (
    ADMIN_STATES,
    Location,
    Target,
    TargetLiveness,
    TargetResource,
)


class OverCapacity(Exception):
    """A claim would use more than a resource has (the database's CHECK refused it)."""


def create(
    session: Session,
    name: str,
    capacity: Mapping[str, float],
    location: str | None = None,
    tags: Sequence[str] = (),
    properties: Mapping[str, Any] | None = None,
) -> Target:
    where = locations.by_name(session, location) if location is not None else None
    if location is not None and where is None:
        raise LookupError(f"no location {location!r}")
    row = Target(
        name=name,
        location_id=where.id if where else None,
        tags=list(tags),
        properties=dict(properties or {}),
        revision=revision.bump(session),
    )
    session.add(row)
    session.flush()
    session.add_all(
        TargetResource(target_id=row.id, name=key, capacity=value, used=0.0)
        for key, value in capacity.items()
    )
    session.add(TargetLiveness(target_id=row.id, last_seen=None))
    session.flush()
    return row


def by_name(session: Session, name: str) -> Target | None:
    return session.scalar(select(Target).where(Target.name == name))


def resources(session: Session, target_id: int) -> dict[str, tuple[float, float]]:
    """(capacity, used) per resource."""
    rows = session.execute(
        select(TargetResource.name, TargetResource.capacity, TargetResource.used).where(
            TargetResource.target_id == target_id
        )
    ).all()
    return {name: (capacity, used) for name, capacity, used in rows}


def claim(
    session: Session, target_id: int, seen_generation: int, deltas: Mapping[str, float]
) -> bool:
    """Add `deltas` to the target's usage if its generation is still `seen_generation`.
    False when it is not (someone else changed it first: nothing is written);
    OverCapacity when it would not fit (nothing is written either)."""
    with session.begin_nested():
        bumped = session.execute(
            update(Target)
            .where(Target.id == target_id, Target.generation == seen_generation)
            .values(generation=Target.generation + 1, revision=revision.bump(session))
            .execution_options(synchronize_session=False)
        )
        if bumped.rowcount == 0:  # type: ignore[attr-defined]
            return False
        try:
            for name, delta in sorted(deltas.items()):
                changed = session.execute(
                    update(TargetResource)
                    .where(TargetResource.target_id == target_id, TargetResource.name == name)
                    .values(used=TargetResource.used + delta)
                    .execution_options(synchronize_session=False)
                )
                if changed.rowcount == 0:  # type: ignore[attr-defined]
                    raise OverCapacity(f"target {target_id} has no resource {name!r}")
        except exc.IntegrityError as error:
            raise OverCapacity(str(error.orig).splitlines()[0]) from None
    session.expire_all()
    return True


def set_admin_state(session: Session, target_id: int, seen_generation: int, state: str) -> bool:
    """Set up, down or maintenance, generation-checked as a claim is."""
    if state not in ADMIN_STATES:
        raise ValueError(f"unknown admin state {state!r} (one of {', '.join(ADMIN_STATES)})")
    done = session.execute(
        update(Target)
        .where(Target.id == target_id, Target.generation == seen_generation)
        .values(
            admin_state=state, generation=Target.generation + 1, revision=revision.bump(session)
        )
        .execution_options(synchronize_session=False)
    )
    session.expire_all()
    return bool(done.rowcount)  # type: ignore[attr-defined]


def heartbeat(session: Session, target_id: int, at: datetime | None = None) -> str:
    """Record that the target was seen; its generation stays as it is. Its liveness:
    a target never seen before is up from now; one the controller found stale stays
    down until the controller brings it up (and its units back) in a transaction of
    its own. Answers the liveness."""
    session.execute(
        update(TargetLiveness)
        .where(TargetLiveness.target_id == target_id)
        .values(last_seen=at or database_now(session))
        .execution_options(synchronize_session=False)
    )
    session.execute(
        update(TargetLiveness)
        .where(TargetLiveness.target_id == target_id, TargetLiveness.liveness == "unknown")
        .values(liveness="up")
        .execution_options(synchronize_session=False)
    )
    found = session.scalar(
        select(TargetLiveness.liveness).where(TargetLiveness.target_id == target_id)
    )
    return found or "unknown"


@dataclass(frozen=True, slots=True)
class Seen:
    """A target as the controller's sweep judges it."""

    name: str
    id: int
    admin_state: str
    liveness: str
    last_seen: datetime | None


def seen(session: Session) -> list[Seen]:
    """The liveness and last heartbeat of every target that has heartbeated, by name
    (one that never did is `unknown` and never stale: the sweep, every second, reads
    only the others)."""
    return [
        Seen(name, id_, admin, liveness or "unknown", last)
        for name, id_, admin, liveness, last in session.execute(
            select(
                Target.name,
                Target.id,
                Target.admin_state,
                TargetLiveness.liveness,
                TargetLiveness.last_seen,
            )
            .join(TargetLiveness, TargetLiveness.target_id == Target.id)
            .where(TargetLiveness.last_seen.is_not(None))
            .order_by(Target.name)
        )
    ]


def liveness_counts(session: Session) -> dict[str, int]:
    """How many targets are in each liveness, counted by the database."""
    judged = func.coalesce(TargetLiveness.liveness, "unknown")
    return {
        liveness: int(count)
        for liveness, count in session.execute(
            select(judged, func.count())
            .select_from(Target)
            .outerjoin(TargetLiveness, TargetLiveness.target_id == Target.id)
            .group_by(judged)
        )
    }


def set_liveness(session: Session, target_id: int, liveness: str) -> None:
    """The controller's judgement (up or down), raising the target's generation: a
    change planned while it was otherwise, placing a unit there, is stale (a target
    that ran nothing moves no unit going down, so no usage write would tell it)."""
    session.execute(
        update(TargetLiveness)
        .where(TargetLiveness.target_id == target_id)
        .values(liveness=liveness)
        .execution_options(synchronize_session=False)
    )
    session.execute(
        update(Target)
        .where(Target.id == target_id)
        .values(generation=Target.generation + 1)
        .execution_options(synchronize_session=False)
    )


def changed_since(session: Session, seen: int) -> Sequence[Target]:
    """The targets written after revision `seen`, for a replica's index refresh."""
    return session.scalars(select(Target).where(Target.revision > seen).order_by(Target.id)).all()


def views(
    session: Session,
    after: str | None = None,
    limit: int = 100,
    names: Sequence[str] = (),
    under: Sequence[str] = (),
    state: str | None = None,
) -> list[dict[str, Any]]:
    """Targets as the API shows them, by name, one page (`after`: the last name seen).
    `under`: only targets below one of these locations, or named so themselves (a host
    is a resource a dedication names too). `state`: only targets whose admin state is
    this (up, down, maintenance), or with `stale`/`unknown`, whose liveness is down or
    not known."""
    query = select(Target).where(*_listed(session, after, names, under, state))
    rows = session.scalars(query.order_by(Target.name).limit(limit)).all()
    ids = [row.id for row in rows]
    capacity: dict[int, dict[str, float]] = {i: {} for i in ids}
    used: dict[int, dict[str, float]] = {i: {} for i in ids}
    for target_id, name, cap, use in session.execute(
        select(
            TargetResource.target_id,
            TargetResource.name,
            TargetResource.capacity,
            TargetResource.used,
        ).where(TargetResource.target_id.in_(ids))
    ):
        capacity[target_id][name] = cap
        used[target_id][name] = use
    seen = {
        target_id: (last_seen, liveness)
        for target_id, last_seen, liveness in session.execute(
            select(
                TargetLiveness.target_id, TargetLiveness.last_seen, TargetLiveness.liveness
            ).where(TargetLiveness.target_id.in_(ids))
        )
    }
    parents = {
        location_id: name
        for location_id, name in session.execute(
            select(Location.id, Location.name).where(
                Location.id.in_([row.location_id for row in rows if row.location_id])
            )
        )
    }
    return [
        {
            "name": row.name,
            "kind": str(row.spec.get("kind", "host")),
            "parent": parents.get(row.location_id) if row.location_id else None,
            "tags": list(row.spec.get("tags", [])),
            "capacity": capacity[row.id],
            "used": used[row.id],
            "admin_state": row.admin_state,
            "liveness": seen.get(row.id, (None, "unknown"))[1],
            "last_seen": _iso(seen.get(row.id, (None, ""))[0]),
            "generation": row.generation,
            "document": row.document,
        }
        for row in rows
    ]


def placed_names(
    session: Session,
    after: str | None = None,
    limit: int = 100,
    under: Sequence[str] = (),
    state: str | None = None,
) -> list[tuple[str, int | None]]:
    """The names `views` would page through, each with its location: what a scoped
    listing judges before it builds the views it keeps."""
    query = select(Target.name, Target.location_id).where(
        *_listed(session, after, (), under, state)
    )
    query = query.order_by(Target.name).limit(limit)
    return [(name, location) for name, location in session.execute(query)]


def _listed(
    session: Session,
    after: str | None,
    names: Sequence[str],
    under: Sequence[str],
    state: str | None,
) -> list[ColumnElement[bool]]:
    """What a listing's page keeps: after a name, among names, under locations, in a
    state (see `views`)."""
    kept: list[ColumnElement[bool]] = []
    if after is not None:
        kept.append(Target.name > after)
    if names:
        kept.append(Target.name.in_(list(names)))
    if under:
        places = locations.beneath(session, under)
        kept.append(Target.location_id.in_(sorted(places)) | Target.name.in_(list(under)))
    if state in ADMIN_STATES:
        kept.append(Target.admin_state == state)
    elif state is not None:
        heard = select(TargetLiveness.target_id).where(TargetLiveness.liveness != "unknown")
        kept.append(
            Target.id.in_(select(TargetLiveness.target_id).where(TargetLiveness.liveness == "down"))
            if state == "stale"
            else Target.id.not_in(heard)
        )
    return kept


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment is not None else None
