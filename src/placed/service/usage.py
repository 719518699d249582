"""Aggregates the console draws, each one grouped query rather than the whole world read:
capacity and use summed per location of one level (GET /v1/usage), how a workload's
units spread over the places of one level (GET /v1/workloads/{name}/spread), and the
owner of just the targets named (GET /v1/owners), implicit dedications (rows) included."""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, Field
from sqlalchemy import func, select
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from placed.model.dedications import Dedication, Dedications, Owner, Topology
from placed.model.tenancy import Principal, Tenancy
from placed.service import context, problems
from placed.service.auth import DOMAIN_ADMIN, ROOT_ADMIN, USER, Caller, allow
from placed.spec.schema import MAX_NAME
from placed.store import accounts, dedications, domains
from placed.store.database import reading
from placed.store.tables import (
    Account,
    Location,
    Placement,
    Target,
    TargetResource,
    Unit,
    Workload,
)

router = APIRouter(prefix="/v1")

TARGET = "target"
MAX_OWNERS = 100
LEVEL = Query(
    max_length=64,
    description="A kind of location the inventory has (zone, pod, cluster, rack), or "
    "`target` (spread only); one the inventory does not have is a 404 invalid-parameter "
    "naming the levels there are.",
)


class ResourceUse(BaseModel):
    capacity: float
    used: float


class DomainUsage(BaseModel):
    name: str | None = Field(description="The location; null: targets below no such place.")
    up: int = Field(description="Targets in service (admin state up).")
    down: int = Field(description="Targets down or in maintenance, counted apart.")
    resources: dict[str, ResourceUse] = Field(description="Summed over the up targets only.")
    down_resources: dict[str, ResourceUse] = Field(description="The down targets' own sums.")


class Usage(BaseModel):
    level: str
    levels: list[str] = Field(description="The kinds of location the inventory has.")
    items: list[DomainUsage]


class SpreadItem(BaseModel):
    name: str | None = Field(description="The place; null: placed below no such place.")
    units: int


class Spread(BaseModel):
    workload: str
    level: str
    levels: list[str] = Field(description="The levels to choose from: kinds, then target.")
    units: int = Field(description="Units of the workload, placed or not.")
    pending: int
    items: list[SpreadItem] = Field(description="Most units first, then by name.")


class TargetOwner(BaseModel):
    target: str
    resource: str = Field(description="What is dedicated: the target or an ancestor.")
    kind: str
    domain: str
    account: str | None
    implicit: bool = Field(
        description="A host taken by an account's VM of a dedicated offering "
        "(implicit dedication), not dedicated explicitly."
    )
    inherited_from: str | None = Field(description="The ancestor dedicated; null: its own.")


class DedicationView(BaseModel):
    resource: str
    kind: str
    domain: str
    account: str | None
    implicit: bool


class Owners(BaseModel):
    items: list[TargetOwner] = Field(description="The targets named that have an owner.")
    dedications: list[DedicationView] = Field(
        description="Every dedication the caller may see (implicit ones included), as "
        "GET /v1/dedications lists them but by resource (stored rows, no plan): the "
        "location tree's badges and the filter by owner."
    )
    implicit: list[str] = Field(
        default_factory=list,
        description="With `account`: the hosts that account holds by implicit "
        "dedication (its dedicated VM runs on a host nobody dedicates), that the caller "
        "may see: what the filter by owner adds to the account's explicit dedications.",
    )


class _Places:
    """Every location with its kind and parent (locations are few beside targets), and
    each one's ancestor of one kind."""

    def __init__(self, session: Session) -> None:
        rows = session.execute(
            select(Location.id, Location.name, Location.kind, Location.parent_id)
        )
        self.name: dict[int, str] = {}
        self.kind: dict[int, str] = {}
        self.parent: dict[int, int | None] = {}
        for row_id, name, kind, parent in rows:
            self.name[row_id], self.kind[row_id], self.parent[row_id] = name, kind, parent
        self._at: dict[tuple[int, str], str | None] = {}

    @property
    def levels(self) -> list[str]:
        return sorted(set(self.kind.values()))

    def at(self, location: int | None, level: str) -> str | None:
        """The location's ancestor (or itself) of kind `level`."""
        if location is None:
            return None
        key = (location, level)
        if key not in self._at:
            current: int | None = location
            seen = 0
            while current is not None and self.kind.get(current) != level and seen < 64:
                current, seen = self.parent.get(current), seen + 1
            self._at[key] = self.name.get(current) if current is not None else None
        return self._at[key]

    def chain(self, location: int | None) -> list[str]:
        """The location and its ancestors, nearest first."""
        found: list[str] = []
        while location is not None and len(found) < 64:
            found.append(self.name[location])
            location = self.parent.get(location)
        return found


def _level(level: str, levels: list[str]) -> None:
    if level not in levels:
        known = ", ".join(levels) or "none"
        # Well-formed, naming a level the inventory does not have: it finds nothing.
        raise problems.ProblemException(
            404,
            "invalid-parameter",
            f"no level {level!r}; the levels are {known}",
            [{"parameter": "query.level", "detail": f"one of {known}"}],
        )


def usage(session: Session, level: str) -> dict[str, Any]:
    places = _Places(session)
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


@router.get(
    "/usage",
    summary="Capacity and use per location of one level",
    description="Per location of the level (a zone by default): per resource, capacity "
    "and use summed over its targets in service, and its targets down or in maintenance "
    "counted and summed apart. One grouped query, whatever the fleet's size. A "
    "domain-admin or user gets the locations GET /v1/locations lists to it (each summed "
    "over all its targets).",
    response_model=Usage,
    responses=problems.responses(404, 422),
)
async def get_usage(
    request: Request,
    caller: Annotated[Caller, allow(ROOT_ADMIN, DOMAIN_ADMIN, USER)],
    level: Annotated[str, LEVEL] = "zone",
) -> dict[str, Any]:
    engine = context.store(request)

    def read() -> dict[str, Any]:
        reach = context.accounts_of(engine, caller)
        with reading(engine) as session:
            found = usage(session, level)
            if reach is not None:
                # Another tenant's zone is not named (GET /v1/locations lists it to
                # nobody else); a location shown sums all its targets.
                shown = Holdings(session).usable_locations(reach)
                found["items"] = [
                    row for row in found["items"] if row["name"] is None or row["name"] in shown
                ]
            return found

    return await run_in_threadpool(read)


def spread(
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
    places = _Places(session)
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


@router.get(
    "/workloads/{name}/spread",
    summary="How a workload's units spread over one level",
    description="The units placed per place of the level (zone, pod, cluster, rack: the "
    "kinds the inventory has, or `target`), most first; a workload the caller may not "
    "see is not there (404).",
    response_model=Spread,
    responses=problems.responses(404, 422),
)
async def get_spread(
    request: Request,
    name: context.NamePath,
    caller: Annotated[Caller, allow(ROOT_ADMIN, DOMAIN_ADMIN, USER)],
    level: Annotated[str, LEVEL] = "zone",
) -> dict[str, Any]:
    engine = context.store(request)
    reach = await run_in_threadpool(context.accounts_of, engine, caller)

    def read() -> dict[str, Any] | None:
        with reading(engine) as session:
            return spread(session, name, level, reach)

    found = await run_in_threadpool(read)
    if found is None:
        raise problems.ProblemException(404, "not-found", f"no workload {name!r}")
    return found


class Holdings:
    """The dedication in force on targets (their own, implicit ones included, or their
    nearest dedicated location's), the rows it rests on read once and each batch of
    targets judged apart: GET /v1/owners names a few, a scoped target listing judges a
    page at a time. Who may use what is the rules' own `covers`."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.domains = accounts.domains_of(session)
        self.tenancy = Tenancy(domains.parents(session), self.domains)
        self.places = _Places(session)
        self.held = {d.resource: d for d in dedications.listed(session)}

    def of(
        self, names: Sequence[str], located: Mapping[str, int | None] | None = None
    ) -> dict[str, tuple[Dedication, str | None]]:
        """Each named target a dedication holds, and where it is inherited from (None:
        its own)."""
        if located is None:
            located = {
                name: location
                for name, location in self.session.execute(
                    select(Target.name, Target.location_id).where(Target.name.in_(list(names)))
                )
            }
        found: dict[str, tuple[Dedication, str | None]] = {}
        for target, location in located.items():
            chain = self.places.chain(location)
            hit = next(
                ((d, p) for p in [target, *chain] if (d := self.held.get(p)) is not None),
                None,
            )
            if hit is not None:
                found[target] = (hit[0], None if hit[1] == target else hit[1])
        return found

    def usable(
        self,
        names: Sequence[str],
        reach: Set[str],
        located: Mapping[str, int | None] | None = None,
    ) -> set[str]:
        """Of the named targets (`located`: each one's location, when the caller read
        it), those some account of `reach` may use, by the rules' own `covers`: none
        holds it, or what holds it covers one of them."""
        found = self.of(names, located)
        return self._kept(
            [(name, found[name][0].owner if name in found else None) for name in names], reach
        )

    def usable_locations(self, reach: Set[str]) -> set[str]:
        """The locations some account of `reach` may use: none holds it, or the
        dedication in force on it (its own, or its nearest dedicated ancestor's) covers
        one of them. Below a location another tenant holds, none is (CloudStack lists a
        zone dedicated to a domain to that domain's users only)."""
        held: list[tuple[str, Owner | None]] = []
        for location, name in self.places.name.items():
            chain = self.places.chain(location)
            found = next((d for p in chain if (d := self.held.get(p)) is not None), None)
            held.append((name, found.owner if found is not None else None))
        return self._kept(held, reach)

    def _kept(self, held: Sequence[tuple[str, Owner | None]], reach: Set[str]) -> set[str]:
        """The names nothing holds, or whose holder covers an account of `reach` (the
        rules' own `covers`, judged once per holder)."""
        rules = Dedications(self.tenancy, Topology.of([]))
        verdicts: dict[Owner, bool] = {}
        kept = set()
        for name, owner in held:
            if owner is not None:
                if owner not in verdicts:
                    verdicts[owner] = any(rules.covers(owner, account) for account in reach)
                if not verdicts[owner]:
                    continue
            kept.add(name)
        return kept

    def shown(self, principal: Principal) -> list[Dedication]:
        """Every dedication GET /v1/dedications lists to the principal, by its rule."""
        rules = Dedications(self.tenancy, Topology.of([]))
        rules.items.update(self.held)
        return rules.list(principal)


def owners(
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


@router.get(
    "/owners",
    summary="The owners of some targets",
    description="For each target named (at most 100), the dedication in force on it (its "
    "own, implicit ones included: a host an account's dedicated VM took, while such a VM "
    "runs there; else its nearest dedicated ancestor's), "
    "shown to the same callers and by the same rule as GET /v1/dedications; and every "
    "explicit dedication it may see (`dedications`). It reads only those targets' rows and the "
    "dedications' (no plan): a page of a fleet costs the same at any size.",
    response_model=Owners,
    responses=problems.responses(422),
)
async def get_owners(
    request: Request,
    caller: Annotated[Caller, allow(ROOT_ADMIN, DOMAIN_ADMIN, USER)],
    target: Annotated[
        list[context.QueryName] | None,
        Query(max_length=MAX_OWNERS, description="A target's name; repeat for more."),
    ] = None,
    account: Annotated[
        str | None,
        Query(
            min_length=1,
            max_length=MAX_NAME,
            description="An account: also list the hosts it holds implicitly (`implicit`).",
        ),
    ] = None,
) -> dict[str, Any]:
    engine = context.store(request)
    named = target or []
    principal = context.principal(caller)

    def read() -> dict[str, Any]:
        with reading(engine) as session:
            items, listed = owners(session, list(dict.fromkeys(named)), principal)
            held = [] if account is None else implicitly_held(session, account, principal)
            return {"items": items, "dedications": listed, "implicit": held}

    return await run_in_threadpool(read)
