"""Seed 004: dedicated resources, as filters, a preference and a fallback.

A VM's request names its account (and so its domain chain) and whether its offering asks
for dedication. The family's own plan state (`DedicationState`, in the plan state's
family store) holds an owner per target, set from the spec's dedications and changed
during a plan by implicit dedication, and the counts and pool ledgers the filters read.

- `zone-dedication` (filter): a zone dedicated to a domain or an account is closed to
  every VM whose owner that dedication does not cover, flagged or not (CloudStack's
  DeploymentPlanningManagerImpl.checkForNonDedicatedResources: "Zone ... not available
  for the user account|domain"). A VM that finds every zone closed fails as
  `zone-closed`, not as `no-capacity`.
- `dedication` (filter): a dedicated request lands only on hosts its account may use (an
  account dedication of its own, or a domain dedication of its domain or an ancestor);
  any other request never lands on a host a pod, cluster or host dedication covers,
  implicit ones included. A zone's own dedication is a private zone: every VM its
  dedication covers may use the hosts nothing nearer dedicates, flagged or not (the
  design's "Current Scenario": only users of that domain create guests there).
- `tenant-affinity` (scorer): among the hosts a dedicated request may use, those already
  running the account's VMs first, then empty ones (the seed's VM deployment 2a).
- fallback, implicit dedication: when no host takes a dedicated request and implicit
  dedication is on (`settings.implicit_dedication`, or a location's
  `implicit.dedication.enable` property, nearest wins), the first empty, undedicated host
  that is up and has room becomes the account's (an implicit dedication, reported under
  `dedications_created` and as an event), and the request is judged again.
- every request that ends unplaced, after any fallback, records a failure event:
  `placement-failed`, or `zone-closed` when every zone is closed to it.
"""

from __future__ import annotations

import functools
import math
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Self

import numpy as np
from numpy.typing import NDArray

from placed.model import Target, Workload
from placed.model.dedications import Dedication as DedicationRule
from placed.model.dedications import Event, Owner, covers
from placed.model.storage import Storage
from placed.policy.base import (
    UNCHANGED,
    BoolArray,
    Bound,
    Codes,
    Consumer,
    Counts,
    Family,
    FamilyState,
    FloatArray,
    IndexView,
    PlanView,
    Reason,
    Retry,
    Scorer,
    Tracker,
    World,
)
from placed.policy.base import Filter as _Filter

IMPLICIT_PROPERTY = "implicit.dedication.enable"
# How a placement's reason begins when implicit dedication gave the unit its host (words
# for people: the dedication itself is a row, `implicit`).
IMPLICIT_REASON = "implicit dedication"
# Per target, the implicit setting a running cloud gave its zone: 0 none, 1 on, 2 off.
IMPLICIT_OVERRIDE = "implicit-override"
SHARED = "shared"  # what the preferred mode allows a unit that found nothing dedicated
VMS = "vms"
ZONE = "zone"  # the location kind CloudStack dedicates as a private zone
# Per target: 1 + the owner code of its zone's dedication (0: the zone is not
# dedicated), and 1 where that dedication is the one in force (nothing nearer dedicates
# the target). Tallies, so that a running cloud changes them and the reference reads
# them per target; filled from the spec the first time a plan state is judged.
ZONE_OWNER = "zone-owner"
ZONE_IN_FORCE = "zone-in-force"
ZONES_READY = "zones-ready"
PLACEMENT_FAILED = "placement-failed"
ZONE_CLOSED_EVENT = "zone-closed"
IMPLICIT_EVENT = "implicit-dedication"  # a host a plan gave an account (the event's kind)

ZoneDedications = tuple[tuple[str, Owner], ...]


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
    # The spec's zone dedications (zone id, owner), and the time the request's events
    # carry. Neither changes what the request may use where, so neither is compared:
    # equal requests share their cached masks.
    zones: ZoneDedications = field(default=(), compare=False)
    time: str | None = field(default=None, compare=False)
    # The name of the count of the account's VMs per target, and what decides which
    # dedications cover the request: made once, read for every unit.
    tally: str = field(init=False, repr=False, compare=False)
    covering: tuple[str, tuple[str, ...]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "tally", f"account:{self.account}")
        object.__setattr__(self, "covering", (self.account, self.chain))

    def covers(self, owner: Owner) -> bool:
        return covers(owner, self.account, self.chain)

    def closed_to(self, owner: Owner) -> str:
        """Whom a zone dedicated to `owner` is closed to, as CloudStack words it."""
        return f"account {self.account}" if owner.account else f"domain {self.domain}"


def tenant_of(workload: Workload) -> Tenant | None:
    found = workload.request(Tenant)
    return found if isinstance(found, Tenant) else None


def may_use(tenant: Tenant, owner: Owner | None, private: bool = False) -> bool:
    """Seed 004's rule for a host, `owner` being the dedication in force on it and
    `private` whether that is its zone's: a dedicated request only where its account is
    covered; any other request where nobody is, or in a zone dedicated to it (a private
    zone admits every VM of its owner; pods, clusters and hosts need the flag)."""
    if owner is None:
        return not tenant.dedicated
    return tenant.covers(owner) and (tenant.dedicated or private)


def zone_of(target: Target) -> str | None:
    for kind, location in target.ancestors:
        if kind == ZONE:
            return location
    return None


NO_OWNER = -1


def _room(array: NDArray[Any], needed: int) -> NDArray[Any]:
    """`array` with room for at least `needed` entries (doubling): growing a plan by k
    targets costs O(k) amortised."""
    if needed <= array.size:
        return array
    grown = np.zeros(max(needed, 2 * array.size, 8), dtype=array.dtype)
    grown[: array.size] = array
    return grown


# Per index, each target's owner code and who the codes stand for, as the spec's
# dedications give them (until a live world's change gives its targets others:
# `owners_changed`).
_OWNERS: weakref.WeakKeyDictionary[Any, tuple[NDArray[np.intp], tuple[Owner, ...]]] = (
    weakref.WeakKeyDictionary()
)


def _spec_owners(index: IndexView) -> tuple[NDArray[np.intp], tuple[Owner, ...]]:
    found = _OWNERS.get(index)
    if found is None:
        codes: dict[Owner, int] = {}
        column = np.array(
            [
                codes.setdefault(t.dedication.owner, len(codes)) if t.dedication else NO_OWNER
                for t in index.targets
            ],
            dtype=np.intp,
        )
        found = _OWNERS[index] = (column, tuple(codes))
    return found


def owners_changed(index: IndexView) -> None:
    """The index's targets carry other dedications (a live world's dedication change):
    a plan state started from it reads their owners again."""
    _OWNERS.pop(index, None)


def rededicate(
    state: PlanView,
    in_force: Mapping[int, DedicationRule | None],
    zone_owners: Mapping[int, Owner | None] | None = None,
) -> None:
    """The dedication in force on some targets changed (by position) while the world
    runs: each one's owner in the plan state, and where the state keeps its zone
    columns already, whether its zone's dedication is the one in force there and
    (`zone_owners`: a zone's own dedication changed) who that zone's is."""
    kept = state.family_state(DedicationState)
    zones_kept = bool(kept.ledger(ZONES_READY, 1)[0])
    zone_in_force = kept.tally(ZONE_IN_FORCE) if zones_kept else None
    zone_owner = kept.tally(ZONE_OWNER) if zones_kept else None
    for position, found in in_force.items():
        kept.set_owner(position, kept.owner_code(found.owner) if found is not None else NO_OWNER)
        if zone_in_force is not None:
            # Tallies are views into the state's own columns.
            zone = zone_of(state.target(position))
            zone_in_force[position] = found is not None and found.resource == zone
    if zone_owner is not None:
        for position, owner in (zone_owners or {}).items():
            zone_owner[position] = kept.owner_code(owner) + 1 if owner is not None else 0
    kept.zones_changed()


class DedicationState(FamilyState):
    """Seed 004's plan state: an owner code per target and who each code stands for,
    the targets the plan dedicated (implicit dedication), counts per target under a name
    (VMs of account A3, VMs at all, a zone's owner), named ledgers beside the targets (a
    pool's used space) and what a fallback allowed a unit (a shared host)."""

    def __init__(
        self,
        owner: NDArray[np.intp],
        size: int,
        owners: list[Owner],
        tallies: dict[str, NDArray[np.int32]],
        ledgers: dict[str, FloatArray],
        dedicated: list[tuple[int, Owner]],
        allowed: set[tuple[str, str]],
        released: list[tuple[int, Owner]] | None = None,
    ) -> None:
        self._owner = owner
        self._size = size
        # Who each owner code stands for: the spec's, then those a plan makes.
        self.owners = owners
        self._codes = {o: c for c, o in enumerate(owners)}
        self._tallies = tallies
        self._ledgers = ledgers
        # Targets a plan dedicated (implicit dedication), in order, with their owner.
        self.dedicated = dedicated
        # Hosts whose implicit dedication ended as their owner's last VM there left (a
        # live world's release), in order, with the owner they had.
        self.released = released if released is not None else []
        self._allowed = allowed  # (unit, what a fallback allowed it)
        # Masks that depend on the owners alone (the hosts an account's dedications
        # cover, those nobody owns), kept until an owner changes: most units change
        # none, and a unit of its own workload would otherwise pay a pass for each.
        self.masks: dict[Any, BoolArray] = {}
        # Whether any target's zone is dedicated, and any such dedication in force (the
        # zone columns' verdicts), until the zone columns change.
        self._zone_flags: tuple[bool, bool] | None = None

    @classmethod
    def start(cls, plan: PlanView) -> Self:
        column, owners = _spec_owners(plan.index)
        owner = np.full(max(plan.size, 8), NO_OWNER, dtype=np.intp)
        owner[: column.size] = column
        return cls(owner, plan.size, list(owners), {}, {}, [], set())

    def copy(self) -> Self:
        return type(self)(
            self._owner.copy(),
            self._size,
            list(self.owners),
            {k: v.copy() for k, v in self._tallies.items()},
            {k: v.copy() for k, v in self._ledgers.items()},
            list(self.dedicated),
            set(self._allowed),
            list(self.released),
        )

    def grown(self, position: int, target: Target) -> None:
        self._size = position + 1
        self._owner = _room(self._owner, self._size)
        self._owner[position] = NO_OWNER  # a created target is nobody's
        self.masks.clear()
        self._zone_flags = None

    def taken_in(self, position: int, target: Target) -> None:
        self.grown(position, target)
        if target.dedication is not None:
            self._owner[position] = self.owner_code(target.dedication.owner)

    @property
    def owner(self) -> NDArray[np.intp]:
        """Each target's owner code, -1 for none."""
        return self._owner[: self._size]

    def set_owner(self, position: int, owner: int) -> None:
        self._owner[position] = owner
        self.masks.clear()

    def owner_code(self, owner: Owner) -> int:
        """The code of an owner, given one if it has none yet."""
        code = self._codes.get(owner)
        if code is None:
            code = self._codes[owner] = len(self.owners)
            self.owners.append(owner)
        return code

    def dedicate(self, position: int, owner: Owner) -> None:
        """A plan gives a target to an owner (implicit dedication)."""
        self._owner[position] = self.owner_code(owner)
        self.dedicated.append((position, owner))
        self.masks.clear()

    def keep_mask(self, key: Any, mask: BoolArray) -> BoolArray:
        """Keep a mask derived from the owners (read-only) until an owner changes."""
        mask.flags.writeable = False
        self.masks[key] = mask
        return mask

    def zone_flags(self, state: PlanView, zones: ZoneDedications) -> tuple[bool, bool]:
        """Whether any target's zone is dedicated, and whether any such dedication is in
        force there (nothing nearer dedicates the target)."""
        flags = self._zone_flags
        if flags is None:
            owner, in_force = zone_columns(state, zones)
            flags = self._zone_flags = (bool(owner.any()), bool(in_force.any()))
        return flags

    def zones_changed(self) -> None:
        """The zone columns were written to (a running cloud's dedication changed)."""
        self._zone_flags = None

    def tally(self, name: str) -> Counts:
        """A count per target under a name, kept by the filter that names it as units
        land (and by a running cloud as they leave)."""
        found = self._tallies.get(name)
        if found is None:
            found = self._tallies[name] = np.zeros(max(self._size, 8), dtype=np.int32)
        elif found.size < self._size:
            found = self._tallies[name] = _room(found, self._size)
        return found[: self._size]

    def count(self, name: str, positions: int | NDArray[np.intp], delta: int = 1) -> None:
        found = self._tallies.get(name)
        if found is None or found.size < self._size:
            self.tally(name)
            found = self._tallies[name]
        if isinstance(positions, int):
            found[positions] += delta  # one unit: no ufunc.at set-up
        else:
            np.add.at(found, positions, delta)

    def ledger(self, name: str, size: int, start: float = 0.0) -> FloatArray:
        """A named array of `size` numbers kept beside the targets (a storage pool's used
        space, its owner code), created with `start` on first use."""
        found = self._ledgers.get(name)
        if found is None:
            found = self._ledgers[name] = np.full(size, start, dtype=np.float64)
        return found

    def allow(self, unit: str, what: str) -> None:
        """A fallback lets `unit` go where the family keeps it from by default (the
        preferred implicit mode: a shared host)."""
        self._allowed.add((unit, what))

    def allowed(self, unit: str | None, what: str) -> bool:
        return unit is not None and (unit, what) in self._allowed

    @property
    def allows_any(self) -> bool:
        """Whether a fallback allowed any unit anything (the verdicts then differ per
        unit judged)."""
        return bool(self._allowed)


def zone_columns(state: PlanView, zones: ZoneDedications) -> tuple[Counts, Counts]:
    """Per target, 1 + its zone's owner code (0: not dedicated) and whether that
    dedication is in force; read from the spec's targets the first time (once per plan
    state: forks copy them), kept by a running cloud afterwards (engine/cloud.py)."""
    kept = state.family_state(DedicationState)
    ready = kept.ledger(ZONES_READY, 1)
    owner, in_force = kept.tally(ZONE_OWNER), kept.tally(ZONE_IN_FORCE)
    if ready[0]:
        return owner, in_force
    ready[0] = 1.0
    if zones:
        codes = {zone: kept.owner_code(o) + 1 for zone, o in zones}
        column = np.zeros(state.size, dtype=np.int32)
        here = np.zeros(state.size, dtype=np.int32)
        for i, target in enumerate(state.index.targets):
            zone = zone_of(target)
            if zone is not None and zone in codes:
                column[i] = codes[zone]
                found = target.dedication
                here[i] = found is not None and found.resource == zone
        owner[:] = column  # tallies are views into the state's own arrays
        in_force[:] = here
        kept.zones_changed()
    return owner, in_force


def _zone_owner_of(tenant: Tenant, target: Target, world: World) -> tuple[Owner | None, bool]:
    """One target's zone dedication and whether it is in force, as the plan state keeps
    them, else as the spec gave them."""
    kept = world.family_state(DedicationState)
    if kept.ledger(ZONES_READY, 1)[0]:
        position = world.position(target)
        code = int(kept.tally(ZONE_OWNER)[position])
        owner = kept.owners[code - 1] if code > 0 else None
        return owner, bool(kept.tally(ZONE_IN_FORCE)[position])
    zone = zone_of(target)
    owner = dict(tenant.zones).get(zone) if zone is not None else None
    found = target.dedication
    return owner, owner is not None and found is not None and found.resource == zone


def _covered(tenant: Tenant, owners: Sequence[Owner], none: bool) -> BoolArray:
    """Per owner code, whether the tenant's account is covered; the last entry answers
    for code -1 (not dedicated)."""
    return np.array([*(tenant.covers(o) for o in owners), none], dtype=bool)


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


class ZoneFilter(_Filter):
    """A zone dedicated to a domain or an account is closed to every VM its dedication
    does not cover, whether or not the VM asks for dedication."""

    name = "zone-dedication"
    summary = (
        "in a zone dedicated to a domain or account that does not cover the VM's owner "
        "(the zone is closed to it, flagged or not)"
    )
    needs = Tenant
    # Only a zone's dedication decides, and no landing changes one (a fallback does, and
    # the loop then judges afresh).
    local = True

    def tracker(self, prepared: Tenant, state: PlanView) -> Tracker:
        return UNCHANGED

    def __init__(self) -> None:
        self._open: dict[tuple[Tenant, int], BoolArray] = {}
        self._zones: weakref.WeakKeyDictionary[IndexView, Codes] = weakref.WeakKeyDictionary()

    def prepare(self, workload: Workload) -> Tenant | None:
        return tenant_of(workload)

    def open_zones(self, prepared: Tenant, state: PlanView) -> BoolArray:
        kept = state.family_state(DedicationState)
        if not kept.zone_flags(state, prepared.zones)[0]:
            return _open_everywhere(state.size)  # no zone is dedicated
        zone_owner, _ = zone_columns(state, prepared.zones)
        owners = kept.owners
        key = (prepared, len(owners))
        usable = self._open.get(key)
        if usable is None:
            # Indexed by zone code: code 0 (no dedication) is open, code c is owner c - 1.
            usable = self._open[key] = np.roll(_covered(prepared, owners, True), 1)
        opened: BoolArray = np.take(usable, zone_owner)  # a third faster than usable[...]
        return opened

    def keep(self, prepared: Tenant, state: PlanView) -> BoolArray:
        return self.open_zones(prepared, state)

    def reason(self, workload: Workload, target: Target, position: int, state: PlanView) -> Reason:
        tenant = tenant_of(workload)
        assert tenant is not None
        zone_owner, _ = zone_columns(state, tenant.zones)
        owner = state.family_state(DedicationState).owners[int(zone_owner[position]) - 1]
        return _zone_reason(tenant, zone_of(target) or target.id, owner)

    def phrases(self, workload: Workload, positions: Codes, state: PlanView) -> Codes | None:
        # The words name the zone and its owner; a target in no zone names itself.
        tenant = tenant_of(workload)
        if tenant is None:
            return None
        zone_owner, _ = zone_columns(state, tenant.zones)
        zones = self._zone_codes(state.index)
        here = zones[positions]
        codes: Codes = np.where(
            here > 0,
            zone_owner[positions].astype(np.intp) * (int(zones.max(initial=0)) + 1) + here,
            -1 - positions,
        )
        return codes

    def _zone_codes(self, index: IndexView) -> Codes:
        """Per target of the index, a code of the zone `zone_of` finds (0: none)."""
        found = self._zones.get(index)
        if found is None:
            names: dict[str | None, int] = {None: 0}
            found = np.array(
                [names.setdefault(zone_of(t), len(names)) for t in index.targets], dtype=np.intp
            )
            self._zones[index] = found
        return found

    def judge(self, workload: Workload, target: Target, world: World) -> Reason | None:
        tenant = tenant_of(workload)
        if tenant is None:
            return None
        owner, _ = _zone_owner_of(tenant, target, world)
        if owner is None or tenant.covers(owner):
            return None
        return _zone_reason(tenant, zone_of(target) or target.id, owner)


@functools.lru_cache(maxsize=4)
def _open_everywhere(size: int) -> BoolArray:
    """An all-true mask, shared (read-only) by every unit of plans of this size."""
    mask = np.ones(size, dtype=bool)
    mask.flags.writeable = False
    return mask


def _zone_reason(tenant: Tenant, zone: str, owner: Owner) -> Reason:
    phrase = f"in zone {zone}, dedicated to {owner} and closed to {tenant.closed_to(owner)}"
    return Reason(ZoneFilter.name, f"is {phrase}", f"are {phrase}")


def zone_refusal(tenant: Tenant, zone: str, owner: Owner) -> str:
    """CloudStack's words for a deploy into a zone closed to its owner."""
    return f"zone {zone} is dedicated to {owner}: not available for {tenant.closed_to(owner)}"


# The key of the mask of hosts nobody owns among a DedicationState's masks (an account's
# is its Tenant.covering, a tuple).
_UNOWNED = "unowned"


class DedicationFilter(_Filter, Consumer):
    name = "dedication"
    summary = (
        "dedicated to someone the VM's account may not use, or (a request without the "
        "dedicated flag) dedicated at pod, cluster or host level"
    )
    needs = Tenant
    # The verdicts read the owners, which a landing never changes (its reserve counts
    # VMs, which `keep` does not read; implicit dedication is a fallback, after which the
    # loop judges afresh).
    local = True

    def tracker(self, prepared: Tenant, state: PlanView) -> Tracker | None:
        # What a fallback allowed one unit (the preferred mode's shared hosts) makes the
        # verdicts differ per unit judged: then each unit is judged in full.
        if state.family_state(DedicationState).allows_any:
            return None
        return UNCHANGED

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
        self._covered: dict[tuple[Tenant, int], BoolArray] = {}

    def prepare(self, workload: Workload) -> Tenant | None:
        return tenant_of(workload)

    def keep(self, prepared: Tenant, state: PlanView) -> BoolArray:
        dedication = state.family_state(DedicationState)
        masks = dedication.masks
        kept: BoolArray | None
        if prepared.dedicated:
            kept = masks.get(prepared.covering)
            if kept is None:
                covering = self._covering(prepared, dedication)[dedication.owner]
                kept = dedication.keep_mask(prepared.covering, covering)
            if dedication.allowed(state.judging, SHARED):
                kept = kept | (dedication.owner < 0)  # preferred mode, nothing dedicated left
            return kept
        if not dedication.zone_flags(state, prepared.zones)[1]:
            # No private zone: only hosts nobody owns, and no need to know whom the
            # request's account is covered by.
            kept = masks.get(_UNOWNED)
            if kept is None:
                kept = dedication.keep_mask(_UNOWNED, dedication.owner < 0)
            return kept
        owner = dedication.owner
        _, in_force = zone_columns(state, prepared.zones)
        kept = (owner < 0) | ((in_force > 0) & self._covering(prepared, dedication)[owner])
        return kept

    def _covering(self, tenant: Tenant, dedication: DedicationState) -> BoolArray:
        """Per owner code, whether the tenant's account is covered (the last entry, for
        code -1, False), as of the owners the plan state knows now."""
        owners = dedication.owners
        key = (tenant, len(owners))
        covered = self._covered.get(key)
        if covered is None:
            covered = self._covered[key] = _covered(tenant, tuple(owners), False)
        return covered

    def reserve(self, prepared: Tenant, state: Any, positions: int | NDArray[np.intp]) -> None:
        # Counts only: who owns a host is the dedications' (the spec's, the stored rows,
        # implicit ones included) and the fallback's, never read back from the VMs that
        # run there.
        kept = state.family_state(DedicationState)
        kept.count(prepared.tally, positions)
        kept.count(VMS, positions)

    def can_release(self, prepared: Tenant) -> bool:
        return True

    def release(self, prepared: Tenant, state: Any, position: int) -> None:
        kept = state.family_state(DedicationState)
        kept.count(prepared.tally, position, -1)
        kept.count(VMS, position, -1)
        if not prepared.dedicated or kept.tally(prepared.tally)[position] > 0:
            return
        # The last VM of its account on a host it holds by implicit dedication: the
        # host is nobody's again, as the whole plan's commit releases it (only VMs of
        # that account run on such a host: a shared request is never admitted there).
        code = int(kept.owner[position])
        owner = kept.owners[code] if code >= 0 else None
        if owner is not None and owner.implicit and owner.account == prepared.account:
            kept.set_owner(position, NO_OWNER)
            kept.released.append((position, owner))

    def implicit_at(self, tenant: Tenant, position: int) -> bool:
        setting = int(self.implicit[position]) if position < self.implicit.size else -1
        return tenant.implicit_enabled if setting < 0 else bool(setting)

    def reason(self, workload: Workload, target: Target, position: int, state: PlanView) -> Reason:
        tenant = tenant_of(workload)
        assert tenant is not None
        kept = state.family_state(DedicationState)
        code = int(kept.owner[position])
        owner = kept.owners[code] if code >= 0 else None
        empty = int(kept.tally(VMS)[position]) == 0
        return dedication_reason(tenant, target, owner, empty, self.implicit_at(tenant, position))

    def phrases(self, workload: Workload, positions: Codes, state: PlanView) -> Codes | None:
        # As dedication_reason words it: a host nobody owns by whether it is empty and
        # whether implicit dedication may take it; an owned one by its owner, unless the
        # request asks for dedication ("dedicated to another tenant", whoever it is).
        tenant = tenant_of(workload)
        if tenant is None:
            return None
        setting = self.implicit[positions]
        here = np.where(setting < 0, tenant.implicit_enabled, setting > 0)
        kept = state.family_state(DedicationState)
        empty = kept.tally(VMS)[positions] == 0
        owner = kept.owner[positions]
        owned = np.zeros_like(owner) if tenant.dedicated else owner + 1
        codes: Codes = np.where(owner >= 0, owned, -1 - (empty * 2 + here))
        return codes

    def judge(self, workload: Workload, target: Target, world: World) -> Reason | None:
        tenant = tenant_of(workload)
        if tenant is None:
            return None
        kept = world.family_state(DedicationState)
        position = world.position(target)
        code = int(kept.owner[position])
        owner = kept.owners[code] if code >= 0 else None
        private = False
        if owner is not None and not tenant.dedicated:
            _, private = _zone_owner_of(tenant, target, world)
        allowed = kept.allowed(world.judging, SHARED)
        if may_use(tenant, owner, private) or (owner is None and allowed):
            return None
        empty = int(kept.tally(VMS)[position]) == 0
        setting = target.properties.get(IMPLICIT_PROPERTY)
        here = tenant.implicit_enabled if setting is None else bool(setting.value)
        return dedication_reason(tenant, target, owner, empty, here)


POOL_USED = "pool-used"
POOL_OWNER = "pool-owner"
POOL_PRIVATE = "pool-private"  # 1 where a pool's dedication in force is its zone's


def pool_owners(storage: Storage, state: PlanView) -> FloatArray:
    """Each pool's owner code now (-1: shared), kept in the plan state so that a running
    cloud can change it (engine/cloud.py)."""
    kept = state.family_state(DedicationState)
    codes = kept.ledger(POOL_OWNER, len(storage.pools), float("nan"))
    if len(codes) and np.isnan(codes[0]):
        codes[:] = [kept.owner_code(o) if o is not None else -1 for o in storage.owners]
    return codes


def pool_private(storage: Storage, state: PlanView) -> FloatArray:
    """Each pool's 1 where the dedication in force on it is its zone's, kept as its
    owner code is."""
    flags = state.family_state(DedicationState).ledger(
        POOL_PRIVATE, len(storage.pools), float("nan")
    )
    if len(flags) and np.isnan(flags[0]):
        flags[:] = [float(p) for p in storage.private] or 0.0
    return flags


def pool_usable(tenant: Tenant, owner: Owner | None, private: bool = False) -> bool:
    """A shared pool serves every VM; a dedicated one only the VMs of the accounts it
    covers, as hosts do: those that ask for dedication, and in a private zone (the
    zone's dedication in force on the pool) every one."""
    return owner is None or (tenant.covers(owner) and (tenant.dedicated or private))


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
        self._targets = targets
        self._position: dict[str, int] | None = None
        self._reach: dict[int, tuple[Storage, list[NDArray[np.intp]]]] = {}

    def prepare(self, workload: Workload) -> Tenant | None:
        tenant = tenant_of(workload)
        return tenant if tenant is not None and tenant.storage and tenant.disk > 0 else None

    def reach(self, storage: Storage) -> list[NDArray[np.intp]]:
        found = self._reach.get(id(storage))
        if found is None or found[0] is not storage:
            if self._position is None:
                # Only a VM with a disk asks: a spec without storage keeps no map.
                self._position = {t.id: i for i, t in enumerate(self._targets)}
            position = self._position
            positions = [
                np.array(sorted(position[h] for h in hosts if h in position), np.intp)
                for hosts in storage.reach
            ]
            found = self._reach[id(storage)] = (storage, positions)
        return found[1]

    @staticmethod
    def usable(tenant: Tenant, state: PlanView) -> NDArray[np.bool_]:
        storage = tenant.storage
        assert storage is not None
        kept = state.family_state(DedicationState)
        used = kept.ledger(POOL_USED, len(storage.pools))
        codes = pool_owners(storage, state)
        private = pool_private(storage, state).tolist()
        owners = kept.owners
        capacity = np.array([p.capacity for p in storage.pools], dtype=np.float64)
        room = np.asarray(capacity - used >= tenant.disk, dtype=bool)
        allowed = [
            pool_usable(tenant, owners[int(c)] if c >= 0 else None, bool(private[i]))
            for i, c in enumerate(codes.tolist())
        ]
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
            used = state.family_state(DedicationState).ledger(POOL_USED, len(storage.pools))
            used[pool] += prepared.disk
            if state.judging is not None:
                state.detail(state.judging, "pool", storage.pools[pool].id)

    def reason(self, workload: Workload, target: Target, position: int, state: PlanView) -> Reason:
        tenant = tenant_of(workload)
        assert tenant is not None
        return _storage_reason(tenant)

    def phrases(self, workload: Workload, positions: Codes, state: PlanView) -> Codes:
        return np.zeros(positions.size, dtype=np.intp)  # one reason for the request

    def judge(self, workload: Workload, target: Target, world: World) -> Reason | None:
        tenant = tenant_of(workload)
        if tenant is None or tenant.storage is None or tenant.disk <= 0:
            return None
        storage = tenant.storage
        kept = world.family_state(DedicationState)
        used = kept.ledger(POOL_USED, len(storage.pools)).tolist()
        # The owner codes a running cloud keeps, else the owners the spec gave.
        codes = kept.ledger(POOL_OWNER, len(storage.pools), float("nan")).tolist()
        flags = kept.ledger(POOL_PRIVATE, len(storage.pools), float("nan")).tolist()
        for i, pool in enumerate(storage.pools):
            code = codes[i]
            if math.isnan(code):  # not kept yet
                owner, private = storage.owners[i], storage.private[i]
            else:
                owner = kept.owners[int(code)] if code >= 0 else None
                private = bool(flags[i]) if not math.isnan(flags[i]) else storage.private[i]
            reached = target.id in storage.reach[i] and pool.capacity - used[i] >= tenant.disk
            if reached and pool_usable(tenant, owner, private):
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
    local = True  # a landing VM changes the tallies of its own host only

    def prepare(self, workload: Workload) -> Tenant | None:
        tenant = tenant_of(workload)
        return tenant if tenant is not None and tenant.dedicated else None

    def score(self, prepared: Tenant) -> FloatArray:
        raise NotImplementedError("tenant-affinity reads the plan state: score_in")

    def score_in(self, prepared: Tenant, state: PlanView) -> FloatArray:
        # 2 where the account runs VMs, else 1 where none runs at all, else 0.
        kept = state.family_state(DedicationState)
        own = kept.tally(prepared.tally) > 0
        score = own.astype(np.float64)
        score += own | (kept.tally(VMS) == 0)
        return score

    def score_at(self, prepared: Tenant, state: PlanView, position: int) -> float:
        kept = state.family_state(DedicationState)
        if kept.tally(prepared.tally)[position] > 0:
            return 2.0
        return 1.0 if kept.tally(VMS)[position] == 0 else 0.0

    def judge(self, workload: Workload, target: Target) -> float:
        raise NotImplementedError("tenant-affinity reads the plan state: judge_in")

    def judge_in(self, workload: Workload, target: Target, world: World) -> float:
        tenant = tenant_of(workload)
        if tenant is None or not tenant.dedicated:
            return 0.0
        kept, position = world.family_state(DedicationState), world.position(target)
        if int(kept.tally(tenant.tally)[position]) > 0:
            return 2.0
        return 1.0 if int(kept.tally(VMS)[position]) == 0 else 0.0


class Dedication(Family):
    """Seed 004: dedicated zones, pods, clusters and hosts, and implicit dedication."""

    name = "dedication"
    seed = "004"
    filter_types: ClassVar[tuple[type[_Filter], ...]] = (
        ZoneFilter,
        DedicationFilter,
        StorageFilter,
    )
    scorer_types: ClassVar[tuple[type[Scorer], ...]] = (TenantAffinity,)

    def bind(self, index: IndexView) -> Bound:
        targets = tuple(index.targets)
        return Bound(
            filters=(ZoneFilter(), DedicationFilter(targets), StorageFilter(targets)),
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
        kept = state.family_state(DedicationState)
        override = kept.tally(IMPLICIT_OVERRIDE)
        setting = np.where(override == 1, 1, np.where(override == 2, 0, setting))
        enabled = np.where(setting < 0, tenant.implicit_enabled, setting > 0)
        free = state.free
        fits = np.ones(state.size, dtype=bool)
        for row, name in enumerate(state.resources):
            wanted = workload.resources.get(name, 0.0)
            if wanted:
                fits &= free[row] >= wanted
        candidates = np.flatnonzero(
            (kept.owner < 0) & (kept.tally(VMS) == 0) & state.up & fits & enabled
        )
        if (
            candidates.size == 0
            and tenant.implicit == "preferred"
            and not kept.allowed(unit, SHARED)
        ):
            # CloudStack's preferred mode: no dedicated host and none to take, so a shared
            # one (the VM runs as a shared one; nothing is dedicated).
            kept.allow(unit, SHARED)
            return Retry(f"{unit}: preferred mode falls back to shared hosts")
        if candidates.size == 0:
            return None  # the unit fails: `unplaced` records why
        position = int(candidates[0])
        owner = Owner(tenant.domain, tenant.account, implicit=True)
        kept.dedicate(position, owner)
        host = state.target(position).id
        state.annotate(
            unit,
            "implicit-dedication",
            f"{IMPLICIT_REASON}: nothing dedicated to {tenant.account} had room, so the "
            f"empty host {host} became account {tenant.account}'s",
        )
        state.event(
            Event(
                tenant.time,
                "placed",
                IMPLICIT_EVENT,
                host,
                {"account": tenant.account, "domain": tenant.domain, "for": unit},
            )
        )
        return Retry(f"host {host} dedicated to account {tenant.account} (implicit)")

    def unplaced(self, workload: Workload, unit: str, state: PlanView, summary: str) -> None:
        """Every request that fails records it, whatever its mode (flagged or not, strict,
        or preferred after falling back to shared hosts): `zone-closed` when every zone
        is closed to its owner, else `placement-failed`."""
        tenant = tenant_of(workload)
        if tenant is None:
            return
        closed = ~ZoneFilter().open_zones(tenant, state)
        kind = ZONE_CLOSED_EVENT if closed.size and bool(closed.all()) else PLACEMENT_FAILED
        details = {"account": tenant.account, "offering": tenant.offering, "why": summary}
        state.event(Event(tenant.time, "placed", kind, unit, details))


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
