"""Seed 004: dedicated resources, as a filter, a preference and a fallback.

A VM's request names its account (and so its domain chain) and whether its offering asks
for dedication. The plan state holds an owner per target (engine/state.py), set from the
spec's dedications and changed during a plan by implicit dedication.

- `dedication` (filter): a dedicated request lands only on hosts its account may use (an
  account dedication of its own, or a domain dedication of its domain or an ancestor);
  any other request never lands on a dedicated host, implicit ones included.
- `tenant-affinity` (scorer): among the hosts a dedicated request may use, those already
  running the account's VMs first, then empty ones (the seed's VM deployment 2a).
- fallback, implicit dedication: when no host takes a dedicated request and implicit
  dedication is on (`settings.implicit_dedication`, or a location's
  `implicit.dedication.enable` property, nearest wins), the first empty, undedicated host
  that is up and has room becomes the account's (an implicit dedication, reported under
  `dedications_created` and as an event), and the request is judged again.
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np
from numpy.typing import NDArray

from placed.model import Target, Workload
from placed.model.dedications import Event, Owner, now
from placed.model.storage import Storage
from placed.policy.base import (
    BoolArray,
    Bound,
    Consumer,
    Family,
    FloatArray,
    IndexView,
    PlanView,
    Reason,
    Retry,
    Scorer,
    World,
)
from placed.policy.base import Filter as _Filter

IMPLICIT_PROPERTY = "implicit.dedication.enable"
# Per target, the implicit setting a running cloud gave its zone: 0 none, 1 on, 2 off.
IMPLICIT_OVERRIDE = "implicit-override"
SHARED = "shared"  # what the preferred mode allows a unit that found nothing dedicated
VMS = "vms"


@dataclass(frozen=True, slots=True)
class Tenant:
    """A VM request's tenancy: its account, the domains whose dedications it may use
    (its domain up to ROOT), and what its offering asks."""

    account: str
    domain: str
    chain: tuple[str, ...]
    dedicated: bool = False
    implicit: Literal["strict", "preferred"] = "strict"
    implicit_enabled: bool = True  # the global setting; a location may override it
    offering: str = ""
    disk: float = 0.0  # GB on a storage pool, when the spec has pools
    storage: Storage | None = None

    def covers(self, owner: Owner) -> bool:
        if owner.account is not None:
            return owner.account == self.account
        return owner.domain in self.chain

    @property
    def tally(self) -> str:
        return f"account:{self.account}"


def tenant_of(workload: Workload) -> Tenant | None:
    found = workload.request(Tenant)
    return found if isinstance(found, Tenant) else None


def may_use(tenant: Tenant, owner: Owner | None) -> bool:
    """Seed 004's rule for a host: a dedicated request only where its account is
    covered, any other request only where nobody is."""
    if owner is None:
        return not tenant.dedicated
    return tenant.dedicated and tenant.covers(owner)


def _usable(tenant: Tenant, owners: list[Owner] | tuple[Owner, ...]) -> NDArray[np.bool_]:
    """Per owner code, whether the request may land there; the last entry answers for
    code -1 (not dedicated)."""
    return np.array([*(may_use(tenant, o) for o in owners), may_use(tenant, None)], dtype=bool)


def _via(target: Target, owner: Owner) -> str:
    found = target.dedication
    if found is not None and found.owner == owner and found.resource != target.id:
        return f"inherited from {found.kind} {found.resource}"
    if owner.implicit:
        return "implicit dedication"
    return ""


def dedication_reason(
    tenant: Tenant, target: Target, owner: Owner | None, empty: bool, implicit_here: bool
) -> Reason:
    name = DedicationFilter.name
    if owner is None:
        chain = f"not dedicated to {tenant.account}'s domain chain"
        # The summary groups targets by phrase: what decides the outcome goes in it.
        if not implicit_here:
            why = f"{chain} (implicit dedication is off)"
        elif not empty:
            why = "shared and not empty (implicit dedication takes only empty hosts)"
        else:
            why = chain
        return Reason(name, f"is {why}", f"are {why}")
    via = _via(target, owner)
    if not tenant.dedicated:
        return Reason(
            name,
            f"is dedicated to {owner}",
            f"are dedicated to {owner}",
            via or "the offering does not ask for dedication",
        )
    return Reason(
        name,
        "is dedicated to another tenant",
        "are dedicated to another tenant",
        f"{owner}" + (f", {via}" if via else ""),
    )


class DedicationFilter(_Filter, Consumer):
    name = "dedication"
    summary = (
        "dedicated to someone the VM's account may not use, or (a request without the "
        "dedicated flag) dedicated at all"
    )
    needs = Tenant

    def __init__(self, targets: tuple[Target, ...]) -> None:
        # Where a location says whether implicit dedication may take its hosts: 1 on,
        # 0 off, -1 as the settings say.
        self.implicit = np.array(
            [
                -1 if (p := t.properties.get(IMPLICIT_PROPERTY)) is None else int(bool(p.value))
                for t in targets
            ],
            dtype=np.int8,
        )
        self._usable: dict[tuple[Tenant, int], NDArray[np.bool_]] = {}

    def prepare(self, workload: Workload) -> Tenant | None:
        return tenant_of(workload)

    def keep(self, prepared: Tenant, state: PlanView) -> BoolArray:
        owners = state.owners
        key = (prepared, len(owners))
        usable = self._usable.get(key)
        if usable is None:
            usable = self._usable[key] = _usable(prepared, tuple(owners))
        if state.allowed(state.judging, SHARED):
            usable = usable.copy()
            usable[-1] = True  # preferred mode, nothing dedicated left: shared hosts too
        return usable[state.owner]

    def reserve(self, prepared: Tenant, state: Any, positions: int | NDArray[np.intp]) -> None:
        state.count(prepared.tally, positions)
        state.count(VMS, positions)

    def implicit_at(self, tenant: Tenant, position: int) -> bool:
        setting = int(self.implicit[position]) if position < self.implicit.size else -1
        return tenant.implicit_enabled if setting < 0 else bool(setting)

    def reason(self, workload: Workload, target: Target, position: int, state: PlanView) -> Reason:
        tenant = tenant_of(workload)
        assert tenant is not None
        code = int(state.owner[position])
        owner = state.owners[code] if code >= 0 else None
        empty = int(state.tally(VMS)[position]) == 0
        return dedication_reason(tenant, target, owner, empty, self.implicit_at(tenant, position))

    def judge(self, workload: Workload, target: Target, world: World) -> Reason | None:
        tenant = tenant_of(workload)
        if tenant is None:
            return None
        owner = world.owner(target)
        if may_use(tenant, owner) or (owner is None and world.allowed(SHARED)):
            return None
        empty = world.tally(VMS, target) == 0
        setting = target.properties.get(IMPLICIT_PROPERTY)
        here = tenant.implicit_enabled if setting is None else bool(setting.value)
        return dedication_reason(tenant, target, owner, empty, here)


POOL_USED = "pool-used"
POOL_OWNER = "pool-owner"


def pool_owners(storage: Storage, state: PlanView) -> FloatArray:
    """Each pool's owner code now (-1: shared), kept in the plan state so that a running
    cloud can change it (engine/cloud.py)."""
    codes = state.ledger(POOL_OWNER, len(storage.pools), float("nan"))
    if len(codes) and np.isnan(codes[0]):
        codes[:] = [state.owner_code(o) if o is not None else -1 for o in storage.owners]
    return codes


def pool_usable(tenant: Tenant, owner: Owner | None) -> bool:
    """A shared pool serves every VM; a dedicated one only the VMs of the accounts it
    covers that ask for dedication (as hosts do)."""
    return owner is None or (tenant.dedicated and tenant.covers(owner))


class StorageFilter(_Filter, Consumer):
    """Seed 004, requirement 8: a host is fit only if a pool it reaches, that the VM's
    account may use, has room for the VM's disk; when the VM lands, its disk takes the
    first such pool (one dedicated to it first, then cluster-wide before zone-wide)."""

    name = "storage"
    summary = (
        "no primary storage pool the host reaches, that the VM's account may use, has room "
        "for its disk"
    )
    needs = Tenant

    def __init__(self, targets: tuple[Target, ...]) -> None:
        self.position = {t.id: i for i, t in enumerate(targets)}
        self._reach: dict[int, tuple[Storage, list[NDArray[np.intp]]]] = {}

    def prepare(self, workload: Workload) -> Tenant | None:
        tenant = tenant_of(workload)
        return tenant if tenant is not None and tenant.storage and tenant.disk > 0 else None

    def reach(self, storage: Storage) -> list[NDArray[np.intp]]:
        found = self._reach.get(id(storage))
        if found is None or found[0] is not storage:
            positions = [
                np.array(sorted(self.position[h] for h in hosts if h in self.position), np.intp)
                for hosts in storage.reach
            ]
            found = self._reach[id(storage)] = (storage, positions)
        return found[1]

    @staticmethod
    def usable(tenant: Tenant, state: PlanView) -> NDArray[np.bool_]:
        storage = tenant.storage
        assert storage is not None
        used = state.ledger(POOL_USED, len(storage.pools))
        codes = pool_owners(storage, state)
        owners = state.owners
        capacity = np.array([p.capacity for p in storage.pools], dtype=np.float64)
        room = np.asarray(capacity - used >= tenant.disk, dtype=bool)
        allowed = [pool_usable(tenant, owners[int(c)] if c >= 0 else None) for c in codes.tolist()]
        usable: NDArray[np.bool_] = room & np.array(allowed, dtype=bool)
        return usable

    def keep(self, prepared: Tenant, state: PlanView) -> BoolArray:
        assert prepared.storage is not None
        mask = np.zeros(state.size, dtype=bool)
        reach = self.reach(prepared.storage)
        for pool in np.flatnonzero(self.usable(prepared, state)).tolist():
            mask[reach[pool]] = True  # a loop over pools, each a numpy scatter
        return mask

    def reserve(self, prepared: Tenant, state: Any, positions: int | NDArray[np.intp]) -> None:
        storage = prepared.storage
        assert storage is not None
        for position in [positions] if isinstance(positions, int) else positions.tolist():
            pool = choose_pool(prepared, state, state.target(position).id)
            if pool is None:
                continue  # a unit that runs already, on a host no pool reaches
            state.ledger(POOL_USED, len(storage.pools))[pool] += prepared.disk
            if state.judging is not None:
                state.detail(state.judging, "pool", storage.pools[pool].id)

    def reason(self, workload: Workload, target: Target, position: int, state: PlanView) -> Reason:
        tenant = tenant_of(workload)
        assert tenant is not None
        return _storage_reason(tenant)

    def judge(self, workload: Workload, target: Target, world: World) -> Reason | None:
        tenant = tenant_of(workload)
        if tenant is None or tenant.storage is None or tenant.disk <= 0:
            return None
        storage = tenant.storage
        used = world.ledger(POOL_USED, len(storage.pools))
        # The owner codes a running cloud keeps, else the owners the spec gave.
        codes = world.ledger(POOL_OWNER, len(storage.pools), float("nan"))
        for i, pool in enumerate(storage.pools):
            code = codes[i]
            if math.isnan(code):  # not kept yet
                owner = storage.owners[i]
            else:
                owner = world.owners[int(code)] if code >= 0 else None
            reached = target.id in storage.reach[i] and pool.capacity - used[i] >= tenant.disk
            if reached and pool_usable(tenant, owner):
                return None
        return _storage_reason(tenant)


def _storage_reason(tenant: Tenant) -> Reason:
    phrase = f"reaches no storage pool with {tenant.disk:g} GB free that {tenant.account} may use"
    return Reason(StorageFilter.name, phrase, phrase.replace("reaches", "reach", 1))


def choose_pool(tenant: Tenant, state: PlanView, host: str) -> int | None:
    """The pool a VM's disk takes on `host`: usable with room, one dedicated to the VM's
    account first, then cluster-wide before zone-wide, then in spec order."""
    storage = tenant.storage
    assert storage is not None
    usable = StorageFilter.usable(tenant, state)
    codes = pool_owners(storage, state)
    ranked = sorted(
        (int(codes[i]) < 0, storage.pools[i].scope != "cluster", i)
        for i in range(len(storage.pools))
        if usable[i] and host in storage.reach[i]
    )
    return ranked[0][2] if ranked else None


class TenantAffinity(Scorer):
    name = "tenant-affinity"
    summary = (
        "a dedicated request: +2 on a host already running its account's VMs, +1 on an empty one"
    )
    needs = Tenant
    static = False

    def prepare(self, workload: Workload) -> Tenant | None:
        tenant = tenant_of(workload)
        return tenant if tenant is not None and tenant.dedicated else None

    def score(self, prepared: Tenant) -> FloatArray:
        raise NotImplementedError("tenant-affinity reads the plan state: score_in")

    def score_in(self, prepared: Tenant, state: PlanView) -> FloatArray:
        own = state.tally(prepared.tally) > 0
        empty = state.tally(VMS) == 0
        return np.where(own, 2.0, np.where(empty, 1.0, 0.0))

    def judge(self, workload: Workload, target: Target) -> float:
        raise NotImplementedError("tenant-affinity reads the plan state: judge_in")

    def judge_in(self, workload: Workload, target: Target, world: World) -> float:
        tenant = tenant_of(workload)
        if tenant is None or not tenant.dedicated:
            return 0.0
        if world.tally(tenant.tally, target) > 0:
            return 2.0
        return 1.0 if world.tally(VMS, target) == 0 else 0.0


class Dedication(Family):
    """Seed 004: dedicated zones, pods, clusters and hosts, and implicit dedication."""

    name = "dedication"
    seed = "004"
    filter_types: ClassVar[tuple[type[_Filter], ...]] = (DedicationFilter, StorageFilter)
    scorer_types: ClassVar[tuple[type[Scorer], ...]] = (TenantAffinity,)

    def bind(self, index: IndexView) -> Bound:
        targets = tuple(index.targets)
        return Bound(
            filters=(DedicationFilter(targets), StorageFilter(targets)),
            scorers=(TenantAffinity(),),
        )

    def explain(self, workload: Workload, target: Target) -> str:
        tenant = tenant_of(workload)
        found = target.dedication
        if tenant is None or found is None:
            return ""
        via = _via(target, found.owner)
        return f"dedicated to {found.owner}" + (f", {via}" if via else "")

    def fallback(
        self, workload: Workload, unit: str, state: PlanView, created: int
    ) -> Retry | None:
        tenant = tenant_of(workload)
        if tenant is None or not tenant.dedicated:
            return None
        setting = _implicit_column(workload, state)
        # A change made while the cloud runs (engine/cloud.py) wins over the spec's.
        override = state.tally(IMPLICIT_OVERRIDE)
        setting = np.where(override == 1, 1, np.where(override == 2, 0, setting))
        enabled = np.where(setting < 0, tenant.implicit_enabled, setting > 0)
        free = state.free
        fits = np.ones(state.size, dtype=bool)
        for row, name in enumerate(state.resources):
            wanted = workload.resources.get(name, 0.0)
            if wanted:
                fits &= free[row] >= wanted
        candidates = np.flatnonzero(
            (state.owner < 0) & (state.tally(VMS) == 0) & state.up & fits & enabled
        )
        if (
            candidates.size == 0
            and tenant.implicit == "preferred"
            and not state.allowed(unit, SHARED)
        ):
            # CloudStack's preferred mode: no dedicated host and none to take, so a shared
            # one (the VM runs as a shared one; nothing is dedicated).
            state.allow(unit, SHARED)
            return Retry(f"{unit}: preferred mode falls back to shared hosts")
        if candidates.size == 0:
            why = (
                "implicit dedication is off"
                if not enabled.any()
                else "no empty, undedicated host has room"
            )
            state.event(
                Event(
                    now(),
                    "placed",
                    "placement-failed",
                    unit,
                    {"account": tenant.account, "offering": tenant.offering, "why": why},
                )
            )
            return None
        position = int(candidates[0])
        owner = Owner(tenant.domain, tenant.account, implicit=True)
        state.dedicate(position, owner)
        host = state.target(position).id
        state.annotate(
            unit,
            "implicit-dedication",
            f"implicit dedication: nothing dedicated to {tenant.account} had room, so the "
            f"empty host {host} became account {tenant.account}'s",
        )
        state.event(
            Event(
                now(),
                "placed",
                "implicit-dedication",
                host,
                {"account": tenant.account, "domain": tenant.domain, "for": unit},
            )
        )
        return Retry(f"host {host} dedicated to account {tenant.account} (implicit)")


# Per index, its targets' implicit-dedication settings (an index never changes).
_IMPLICIT: weakref.WeakKeyDictionary[Any, NDArray[np.int8]] = weakref.WeakKeyDictionary()


def _implicit_column(workload: Workload, state: PlanView) -> NDArray[np.int8]:
    """Per target, 1 or 0 where a location says whether implicit dedication may take
    it, -1 where the settings decide (created targets included)."""
    index = state.index
    column = _IMPLICIT.get(index)
    if column is None:
        column = _IMPLICIT[index] = np.array(
            [
                -1 if (p := t.properties.get(IMPLICIT_PROPERTY)) is None else int(bool(p.value))
                for t in index.targets
            ],
            dtype=np.int8,
        )
    if column.size < state.size:
        return np.concatenate([column, np.full(state.size - column.size, -1, dtype=np.int8)])
    return column
