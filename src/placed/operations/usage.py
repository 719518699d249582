"""Aggregates the console draws, each one grouped query rather than the whole world read:
capacity and use summed per location of one level, how a workload's units spread over
the places of one level, and the owner of just the targets named, implicit dedications
(rows) included."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from placed.model.dedications import Dedication
from placed.operations.errors import NotFound, Where
from placed.operations.holdings import Holdings, Places
from placed.operations.store import Store
from placed.store.database import reading
from placed.store.tables import Account, Placement, Target, TargetResource, Unit, Workload

TARGET = "target"


def usage(engine: Store, level: str, reach: set[str] | None) -> dict[str, Any]:
    """Capacity and use per location of `level`; with `reach` (a scoped caller's
    accounts), only the locations some of them may use, each summed over all its
    targets (another tenant's zone is not named)."""
    with reading(engine) as session:
        found = _usage(session, level)
        if reach is not None:
            shown = Holdings(session).usable_locations(reach)
            found["items"] = [
                row for row in found["items"] if row["name"] is None or row["name"] in shown
            ]
        return found


def spread(engine: Store, name: str, level: str, reach: set[str] | None) -> dict[str, Any]:
    """How the workload's units spread over the places of `level` (or targets); a
    workload out of `reach` is not there."""
    with reading(engine) as session:
        found = _spread(session, name, level, reach)
    if found is None:
        raise NotFound(f"no workload {name!r}")
    return found


def owners(engine: Store, names: list[str], principal: str, account: str | None) -> dict[str, Any]:
    """The owners of the targets named as the principal may see them, every dedication it
    may see, and with `account`, the hosts that account holds implicitly."""
    with reading(engine) as session:
        items, listed = _owners(session, list(dict.fromkeys(names)), principal)
        held = [] if account is None else implicitly_held(session, account, principal)
        return {"items": items, "dedications": listed, "implicit": held}


def _level(level: str, levels: list[str]) -> None:
    if level not in levels:
        known = ", ".join(levels) or "none"
        # Well-formed, naming a level the inventory does not have: it finds nothing.
        raise NotFound(
            f"no level {level!r}; the levels are {known}",
            "invalid-parameter",
            [Where(f"one of {known}", parameter="query.level")],
        )


def _usage(session: Session, level: str) -> dict[str, Any]:
    places = Places(session)
    _level(level, places.levels)
    rows: dict[str | None, dict[str, Any]] = {}

    def domain(location: int | None) -> dict[str, Any]:
        name = places.at(location, level)
        found = rows.get(name)
        if found is None:
            found = rows[name] = {
                "name": name,
                "up": 0,
                "down": 0,
                "resources": {},
                "down_resources": {},
            }
        return found

    counted = select(Target.location_id, Target.admin_state, func.count()).group_by(
        Target.location_id, Target.admin_state
    )
    for location, state, count in session.execute(counted):
        domain(location)["up" if state == "up" else "down"] += int(count)
    summed = (
        select(
            Target.location_id,
            Target.admin_state,
            TargetResource.name,
            func.sum(TargetResource.capacity),
            func.sum(TargetResource.used),
        )
        .join(TargetResource, TargetResource.target_id == Target.id)
        .group_by(Target.location_id, Target.admin_state, TargetResource.name)
    )
    for location, state, resource, capacity, used in session.execute(summed):
        into = domain(location)["resources" if state == "up" else "down_resources"]
        was = into.setdefault(resource, {"capacity": 0.0, "used": 0.0})
        was["capacity"] += float(capacity or 0.0)
        was["used"] += float(used or 0.0)
    items = sorted(rows.values(), key=lambda r: (r["name"] is None, r["name"] or ""))
    return {"level": level, "levels": places.levels, "items": items}


def _spread(
    session: Session, name: str, level: str, reach: set[str] | None
) -> dict[str, Any] | None:
    found = session.execute(
        select(Workload.id, Account.name)
        .outerjoin(Account, Account.id == Workload.account_id)
        .where(Workload.name == name)
    ).first()
    if found is None or (reach is not None and found[1] not in reach):
        return None
    workload_id = found[0]
    places = Places(session)
    levels = [*places.levels, TARGET]
    _level(level, levels)
    total = int(
        session.scalar(
            select(func.count()).select_from(Unit).where(Unit.workload_id == workload_id)
        )
        or 0
    )
    placed = (
        select(Target.name, Target.location_id, func.count())
        .select_from(Placement)
        .join(Unit, Unit.id == Placement.unit_id)
        .join(Target, Target.id == Placement.target_id)
        .where(Unit.workload_id == workload_id)
        .group_by(Target.name, Target.location_id)
    )
    counts: dict[str | None, int] = {}
    landed = 0
    for target, location, count in session.execute(placed):
        key = target if level == TARGET else places.at(location, level)
        counts[key] = counts.get(key, 0) + int(count)
        landed += int(count)
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0] is None, kv[0] or ""))
    items = [{"name": k, "units": v} for k, v in ranked]
    return {
        "workload": name,
        "level": level,
        "levels": levels,
        "units": total,
        "pending": max(0, total - landed),
        "items": items,
    }


def _owners(
    session: Session, names: list[str], principal: str
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The dedication in force on each named target (`Holdings.of`), as GET
    /v1/dedications would list it (and only what that lists to the principal)."""
    holdings = Holdings(session)
    who = holdings.tenancy.principal(principal)
    if who is None:
        return [], []
    found = holdings.of(names)
    shown = holdings.shown(who)
    seen = {(d.resource, d.owner) for d in shown}
    items = []
    for target in names:
        if target not in found:
            continue
        dedication, inherited = found[target]
        if (dedication.resource, dedication.owner) not in seen:
            continue
        items.append({"target": target, **view(dedication), "inherited_from": inherited})
    return items, [view(d) for d in shown]


def implicitly_held(session: Session, account: str, principal: str) -> list[str]:
    """The hosts `account` holds by implicit dedication (its rows) that GET
    /v1/dedications lists to the principal."""
    holdings = Holdings(session)
    who = holdings.tenancy.principal(principal)
    if who is None:
        return []
    return sorted(
        d.resource for d in holdings.shown(who) if d.owner.implicit and d.owner.account == account
    )


def view(dedication: Dedication) -> dict[str, Any]:
    return {
        "resource": dedication.resource,
        "kind": dedication.kind,
        "domain": dedication.owner.domain,
        "account": dedication.owner.account,
        "implicit": dedication.owner.implicit,
    }
