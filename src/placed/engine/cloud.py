"""One cloud in memory (seed 004): a spec's inventory, tenancy and dedications, on which a
script (and later the service) runs operations in sequence, each applying completely or
raising a `DedicationError` with a stable `kind` and changing nothing:

    cloud = Cloud(load_spec("examples/cloudstack-dedication.yaml"))
    cloud.dedicate(ROOT_ADMIN, "p1", "D1")
    vm = cloud.deploy(ROOT_ADMIN, account="A7", offering="dedicated-small")
    cloud.migrate(ROOT_ADMIN, vm.name, "H1b")
    cloud.stop(ROOT_ADMIN, vm.name); cloud.start(ROOT_ADMIN, vm.name)
    cloud.evacuate(ROOT_ADMIN, "H1a")          # maintenance: re-place its VMs

Dedication rules live in model/dedications.py; placement is the plan's own pipeline and
loop (the dedication filter, tenant affinity, implicit dedication as a fallback), run for
one VM at a time on the cloud's plan state. Every failed deploy, start, migration and
maintenance leaves an event (`placement-failed`, `zone-closed`, `migration-refused`,
`maintenance-failed`); event times come from the cloud's clock, by default the spec's
`settings.now` (None without it).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from placed.engine import loop
from placed.engine.outcomes import Placement, PlanResult
from placed.engine.planner import Planner
from placed.engine.state import PlanState
from placed.model import Spec, Workload
from placed.model.dedications import (
    INVALID_PARAMETER,
    MIGRATION_REFUSED,
    NO_CAPACITY,
    PERMISSION_DENIED,
    ZONE_CLOSED,
    Clock,
    Dedication,
    DedicationError,
    Dedications,
    Event,
    Offering,
    Owner,
    Topology,
    require_root,
)
from placed.model.tenancy import ROOT_ADMIN, Principal, Tenancy
from placed.policy.dedication import (
    IMPLICIT_OVERRIDE,
    PLACEMENT_FAILED,
    POOL_USED,
    VMS,
    ZONE,
    ZONE_CLOSED_EVENT,
    ZONE_IN_FORCE,
    ZONE_OWNER,
    ZONES_READY,
    DedicationState,
    Tenant,
    choose_pool,
    may_use,
    pool_owners,
    pool_private,
    zone_columns,
    zone_refusal,
)


@dataclass(frozen=True, slots=True)
class VM:
    name: str
    account: str
    offering: str
    host: str
    implicit: bool = False  # this deploy dedicated its host (implicit dedication)
    pool: str | None = None  # the storage pool its disk is on


@dataclass(frozen=True, slots=True)
class _Stopped:
    vm: VM  # as it last ran: its account, offering and last host
    workload: Workload = field(compare=False)


@dataclass
class _Running:
    vm: VM
    workload: Workload  # one unit: the VM
    position: int
    unit: str  # its unit in the plan state


class Cloud:
    def __init__(self, spec: Spec, clock: Clock | None = None) -> None:
        pools = spec.storage.pools if spec.storage is not None else ()
        planner = Planner(spec)
        self._start(
            spec,
            clock,
            planner,
            planner.initial_state(),
            Topology.of_roots(spec.inventory.roots, [(p.id, "pool", p.at) for p in pools]),
        )
        self.rules.events.extend(self.spec.events)
        workloads = {w.name: w for w in self.spec.workloads}
        self._run((unit.unit, workloads.get(unit.workload), unit.target) for unit in spec.running)
        # The zones each host is in, and who they are dedicated to, kept in the plan
        # state from here on (the policy reads the spec's only for a plan).
        self._dedication.ledger(ZONES_READY, 1)[0] = 1.0
        for root in self.spec.inventory.roots:
            self._sync_owners(root.id)

    @classmethod
    def over(
        cls,
        spec: Spec,
        planner: Planner,
        state: PlanState,
        topology: Topology,
        vms: Iterable[tuple[str, Workload, str]],
    ) -> Cloud:
        """The rules over a world already planned and kept (the service's live one):
        its planner, `state` (which the cloud then changes: pass a fork) holding the
        owners as a cloud keeps them, and only the VMs `vms` (unit, workload, host; in
        the order of the world's running units): what an evacuation of their host asks,
        in the time of its VMs, not of the world's."""
        cloud = cls.__new__(cls)
        cloud._start(spec, None, planner, state, topology)
        given = list(vms)
        if not cloud._dedication.ledger(ZONES_READY, 1)[0]:
            # No tenant was judged on this state yet: its zone columns are read as a
            # plan reads them (from the tenants' zone dedications), then kept.
            tenants = (w.request(Tenant) for _, w, _ in given)
            zone_columns(state, next((t.zones for t in tenants if t is not None), ()))
        cloud._run(given)
        return cloud

    def _start(
        self,
        spec: Spec,
        clock: Clock | None,
        planner: Planner,
        state: PlanState,
        topology: Topology,
    ) -> None:
        self.spec = spec
        now = spec.settings.now
        self.clock: Clock = clock if clock is not None else (lambda: now)
        self.tenancy: Tenancy = self.spec.tenancy or Tenancy()
        self.planner = planner
        self.state = state
        self.rules = Dedications(self.tenancy, topology, self._accounts_on, self.clock)
        self.rules.items.update({d.resource: d for d in self.spec.dedications})
        self.implicit_enabled = self.spec.settings.implicit_dedication
        self.offerings: dict[str, Offering] = {o.name: o for o in self.spec.offerings}
        self.vms: dict[str, _Running] = {}
        self.stopped: dict[str, _Stopped] = {}
        # How a policy put a VM where it last landed, when it says (an implicit
        # dedication: "the empty host H2 became account U14's").
        self.notes: dict[str, str] = {}
        self._serial = 0

    def _run(self, units: Iterable[tuple[str, Workload | None, str]]) -> None:
        """The VMs among `units` (those of a tenant's workload), as running."""
        for unit, workload, target in units:
            tenant = workload.request(Tenant) if workload is not None else None
            position = self.state.position(target)
            if workload is None or tenant is None or position is None:
                continue
            pool = self.state.details(unit).get("pool")
            vm = VM(unit, tenant.account, tenant.offering, target, pool=pool)
            one = Workload(unit, 1, "allocation", workload.resources, requests=(tenant,))
            self.vms[unit] = _Running(vm, one, position, unit)

    @property
    def _dedication(self) -> DedicationState:
        """Seed 004's state in the cloud's plan state (which a deploy replaces)."""
        return self.state.family_state(DedicationState)

    # -- reading ----------------------------------------------------------------------

    @property
    def events(self) -> list[Event]:
        return self.rules.events

    def _accounts_on(self, host: str) -> list[str]:
        return [r.vm.account for r in self.vms.values() if r.vm.host == host]

    def _hosts(self) -> list[str]:
        return [t.id for t in self.spec.inventory.targets]

    def list_dedications(
        self,
        principal: Principal = ROOT_ADMIN,
        kind: str | None = None,
        domain: str | None = None,
        account: str | None = None,
    ) -> list[Dedication]:
        return self.rules.list(principal, kind, domain, account)

    def where(self, vm: str) -> str:
        return self._vm(vm).vm.host

    def eligible(self, account: str, offering: str) -> list[str]:
        """The hosts such a request may use now, by dedication alone."""
        tenant = self._tenant(account, self._offering(offering))
        return [host for host in self._hosts() if self._may_use(tenant, host)]

    def _may_use(self, tenant: Tenant, host: str) -> bool:
        zone, owner = self._zone(host)
        if owner is not None and not tenant.covers(owner):
            return False
        found, _ = self.rules.owner(host)
        in_force = found is not None and found.resource == zone
        return may_use(tenant, found.owner if found is not None else None, in_force)

    def _zone(self, host: str) -> tuple[str | None, Owner | None]:
        """The zone a host is in and who it is dedicated to, if anyone."""
        topology = self.rules.topology
        zone = next((a for a in topology.ancestors(host) if topology.kinds[a] == ZONE), None)
        found = self.rules.items.get(zone) if zone is not None else None
        return zone, found.owner if found is not None else None

    # -- dedications ------------------------------------------------------------------

    def dedicate(
        self, principal: Principal, resource: str, domain: str, account: str | None = None
    ) -> Dedication:
        found = self.rules.dedicate(principal, resource, domain, account)
        self._sync_owners(resource)
        return found

    def release(self, principal: Principal, resource: str) -> Dedication:
        found = self.rules.release(principal, resource)
        self._sync_owners(resource)
        return found

    def update(
        self, principal: Principal, resource: str, domain: str, account: str | None = None
    ) -> Dedication:
        found = self.rules.update(principal, resource, domain, account)
        self._sync_owners(resource)
        return found

    def _sync_owners(self, resource: str) -> None:
        """The plan state's owner of each host at or below `resource`, after a change."""
        topology = self.rules.topology
        below = [resource, *topology.below(resource)]
        storage = self.spec.storage
        kept = self._dedication
        zone_owner, in_force = kept.tally(ZONE_OWNER), kept.tally(ZONE_IN_FORCE)
        for host in below:
            owner, _ = self.rules.owner(host)
            code = kept.owner_code(owner.owner) if owner else -1
            position = self.state.position(host)
            if position is not None:
                kept.set_owner(position, code)
                zone, zone_by = self._zone(host)
                # Tallies are views into the state's own columns.
                zone_owner[position] = kept.owner_code(zone_by) + 1 if zone_by else 0
                in_force[position] = owner is not None and owner.resource == zone
            pool = storage.index(host) if storage is not None else None
            if storage is not None and pool is not None:
                pool_owners(storage, self.state)[pool] = code
                private = owner is not None and owner.kind == ZONE
                pool_private(storage, self.state)[pool] = float(private)
        kept.zones_changed()

    # -- settings and offerings -------------------------------------------------------

    def set_implicit(self, principal: Principal, enabled: bool, zone: str | None = None) -> None:
        """implicit.dedication.enable, globally or for one zone (or any location)."""
        self._root(principal, "change implicit.dedication.enable")
        if zone is None:
            self.implicit_enabled = enabled
            return
        if zone not in self.rules.topology.kinds:
            raise DedicationError(INVALID_PARAMETER, f"no zone named {zone!r}")
        wanted = 1 if enabled else 2
        kept = self._dedication
        current = kept.tally(IMPLICIT_OVERRIDE)
        for host in [zone, *self.rules.topology.below(zone)]:
            position = self.state.position(host)
            if position is not None:
                kept.count(IMPLICIT_OVERRIDE, position, wanted - int(current[position]))

    def create_offering(self, principal: Principal, offering: Offering) -> Offering:
        if offering.dedicated:  # the seed: only a root admin offers dedication
            self._root(principal, "create dedicated service offerings")
        if offering.name in self.offerings:
            raise DedicationError(INVALID_PARAMETER, f"offering {offering.name} exists already")
        self.offerings[offering.name] = offering
        return offering

    @staticmethod
    def _root(principal: Principal, what: str) -> None:
        require_root(principal, what)

    # -- VMs --------------------------------------------------------------------------

    def _offering(self, name: str) -> Offering:
        found = self.offerings.get(name)
        if found is None:
            raise DedicationError(INVALID_PARAMETER, f"no offering named {name!r}")
        return found

    def _tenant(self, account: str, offering: Offering) -> Tenant:
        domain = self.tenancy.domain_of(account)
        if domain is None:
            raise DedicationError(INVALID_PARAMETER, f"no account named {account!r}")
        return Tenant(
            account=account,
            domain=domain,
            chain=tuple(self.tenancy.chain(domain)),
            dedicated=offering.dedicated,
            implicit="preferred" if offering.implicit == "preferred" else "strict",
            implicit_enabled=self.implicit_enabled,
            offering=offering.name,
            disk=offering.disk if self.spec.storage is not None else 0.0,
            storage=self.spec.storage,
            time=self.clock(),
        )

    def _may_act_for(self, principal: Principal, account: str) -> None:
        if principal.role == "root-admin":
            return
        if principal.role == "user" and principal.account == account:
            return
        domain = self.tenancy.domain_of(account)
        if (
            principal.role == "domain-admin"
            and domain is not None
            and principal.domain is not None
            and self.tenancy.within(domain, principal.domain)
        ):
            return
        raise DedicationError(
            PERMISSION_DENIED, f"{principal} may not deploy VMs for account {account}"
        )

    def _vm(self, name: str) -> _Running:
        found = self.vms.get(name)
        if found is None:
            raise DedicationError(INVALID_PARAMETER, f"no VM named {name!r}")
        return found

    def _workload(self, name: str, tenant: Tenant, offering: Offering) -> Workload:
        resources = {
            resource: amount
            for resource, amount in (("cpu", offering.cpu), ("memory", offering.memory))
            if amount and resource in self.state.resources
        }
        return Workload(name, 1, "allocation", resources, requests=(tenant,))

    def deploy(
        self,
        principal: Principal,
        account: str,
        offering: str,
        name: str | None = None,
        avoid: Iterable[str] = (),
        zone: str | None = None,
    ) -> VM:
        """Place one VM (in `zone` if given, as CloudStack's deployVirtualMachine is);
        on failure nothing changes but the failure's event."""
        self._may_act_for(principal, account)
        chosen = self._offering(offering)
        tenant = self._tenant(account, chosen)
        if name is None:
            self._serial += 1
            name = f"vm-{self._serial}"
        if name in self.vms or name in self.stopped:
            raise DedicationError(INVALID_PARAMETER, f"a VM named {name!r} exists already")
        return self._place(principal, name, tenant, chosen, avoid, zone, "deploy")

    def _place(
        self,
        principal: Principal,
        name: str,
        tenant: Tenant,
        chosen: Offering,
        avoid: Iterable[str],
        zone: str | None,
        operation: str,
        record: bool = True,
    ) -> VM:
        """Place one VM on a trial state and keep it if it lands; else record the failure
        (unless `record` is off: a start trying its last host only) and raise."""
        outside: list[str] = []
        if zone is not None:
            if self.rules.topology.kinds.get(zone) != ZONE:
                raise DedicationError(INVALID_PARAMETER, f"no zone named {zone!r}")
            _, owner = self._zone(next(iter(self._hosts_below(zone)), zone))
            if owner is not None and not tenant.covers(owner):
                # CloudStack refuses before it plans: "Zone ... not available for the
                # user account|domain".
                why = zone_refusal(tenant, zone, owner)
                details = {"account": tenant.account, "offering": tenant.offering, "why": why}
                self._failed(principal, ZONE_CLOSED_EVENT, name, operation, details)
                raise DedicationError(ZONE_CLOSED, f"{name}: {why}")
            inside = set(self._hosts_below(zone))
            outside = [host for host in self._hosts() if host not in inside]
        workload = self._workload(name, tenant, chosen)
        trial = self.state.fork()
        hidden = [*avoid, *outside]
        for host in hidden:
            position = trial.position(host)
            if position is not None:
                trial.up[position] = False
        before = len(trial.family_state(DedicationState).dedicated)
        events_before = len(trial.events)
        context = loop.Context(
            self.planner.judge, trial, PlanResult(self.spec, self.planner.families)
        )
        [outcome] = loop.Allocation().place(workload, context)
        new_events = trial.events[events_before:]
        if not isinstance(outcome, Placement):
            failure = next(
                (e for e in new_events if e.kind in (PLACEMENT_FAILED, ZONE_CLOSED_EVENT)), None
            )
            kind = PLACEMENT_FAILED if failure is None else failure.kind
            details = dict(failure.details) if failure is not None else {}
            if record:
                self._failed(principal, kind, name, operation, details)
            error = ZONE_CLOSED if kind == ZONE_CLOSED_EVENT else NO_CAPACITY
            # The trial takes the other zones' hosts down: say so, or "down" misleads.
            within = f" in zone {zone} (other zones' hosts count as down)" if zone else ""
            raise DedicationError(error, f"{name}{within}: {outcome.summary}")
        for host in hidden:
            position = trial.position(host)
            if position is not None:
                trial.up[position] = self.state.up[position]
        implicit = False
        for position, owner in trial.family_state(DedicationState).dedicated[before:]:
            host = trial.target_id(position)
            self.rules.items[host] = Dedication(host, "host", owner)
            implicit = True
        self.rules.events.extend(new_events)
        self.state = trial
        if outcome.note:
            self.notes[name] = outcome.note
        pool = trial.details(outcome.unit).get("pool")
        vm = VM(name, tenant.account, chosen.name, outcome.target, implicit, pool)
        self.vms[name] = _Running(vm, workload, trial.where(outcome.unit) or 0, outcome.unit)
        return vm

    def _failed(
        self,
        principal: Principal,
        kind: str,
        name: str,
        operation: str,
        details: dict[str, Any],
    ) -> None:
        self.rules.events.append(
            Event(self.clock(), str(principal), kind, name, {**details, "operation": operation})
        )

    def _hosts_below(self, location: str) -> list[str]:
        topology = self.rules.topology
        return [
            node
            for node in topology.below(location)
            if topology.is_leaf(node) and topology.kinds.get(node) != "pool"
        ]

    def stop(self, principal: Principal, name: str) -> VM:
        """The VM stops: it leaves its host (its capacity too) and keeps its name, account,
        offering and last host, to start again."""
        running = self._vm(name)
        self._may_act_for(principal, running.vm.account)
        self._take_off(running)
        del self.vms[name]
        self.stopped[name] = _Stopped(running.vm, running.workload)
        return running.vm

    def start(self, principal: Principal, name: str) -> VM:
        """A stopped VM starts under the rules in force now: on its last host if it may
        still use it and it has room (CloudStack's planDeployment tries the last host
        first), else wherever a deploy would go. On failure it stays stopped, and the
        failure is an event."""
        stopped = self.stopped.get(name)
        if stopped is None:
            raise DedicationError(
                INVALID_PARAMETER,
                f"no stopped VM named {name!r}" + (" (it runs)" if name in self.vms else ""),
            )
        self._may_act_for(principal, stopped.vm.account)
        chosen = self._offering(stopped.vm.offering)
        tenant = self._tenant(stopped.vm.account, chosen)
        last = stopped.vm.host
        trial = _Running(replace(stopped.vm, pool=None), stopped.workload, 0, name)
        if self.state.position(last) is not None and self._refusal(trial, last) is None:
            avoid = [host for host in self._hosts() if host != last]
            try:
                vm = self._place(principal, name, tenant, chosen, avoid, None, "start", False)
            except DedicationError:
                pass  # the last host was a preference: plan as a deploy would
            else:
                del self.stopped[name]
                return vm
        vm = self._place(principal, name, tenant, chosen, (), None, "start")
        del self.stopped[name]
        return vm

    def destroy(self, principal: Principal, name: str) -> VM:
        stopped = self.stopped.get(name)
        if stopped is not None:  # a stopped VM holds nothing: only its record goes
            self._may_act_for(principal, stopped.vm.account)
            del self.stopped[name]
            return stopped.vm
        running = self._vm(name)
        self._may_act_for(principal, running.vm.account)
        self._take_off(running)
        del self.vms[name]
        return running.vm

    def _take_off(self, running: _Running) -> None:
        state = self.state
        position = state.remove(running.unit)
        for row, resource in enumerate(state.resources):
            state.free[row, position] += running.workload.resources.get(resource, 0.0)
        tenant = running.workload.request(Tenant)
        if tenant is not None:
            kept = state.family_state(DedicationState)
            kept.count(tenant.tally, position, -1)
            kept.count(VMS, position, -1)
            pool = self._pool_of(running)
            if tenant.storage is not None and pool is not None:
                kept.ledger(POOL_USED, len(tenant.storage.pools))[pool] -= tenant.disk

    def _pool_of(self, running: _Running) -> int | None:
        storage = self.spec.storage
        name = running.vm.pool or self.state.details(running.unit).get("pool")
        return storage.index(name) if storage is not None and name is not None else None

    def _disk_pool(self, running: _Running, host: str) -> int | None:
        """Where the VM's disk is on `host`: where it was if the host reaches it, else a
        pool the host reaches that the VM may use with room (its disk moves with it)."""
        storage, tenant = self.spec.storage, running.workload.request(Tenant)
        pool = self._pool_of(running)
        if storage is None or tenant is None or pool is None:
            return pool
        if host in storage.reach[pool]:
            return pool
        return choose_pool(tenant, self.state, host)

    def _put_on(self, running: _Running, host: str) -> None:
        """On a host (a migration): its disk stays where it was if the host reaches that
        pool, and moves to one the host reaches otherwise."""
        state = self.state
        position = state.position(host)
        assert position is not None
        tenant = running.workload.request(Tenant)
        pool = self._disk_pool(running, host)
        state.place(running.unit, running.workload.name, position)
        if tenant is not None and tenant.storage is not None and pool is not None:
            without_disk = replace(tenant, disk=0.0)
            workload = replace(running.workload, requests=(without_disk,))
            self.planner.pipeline.reserve(self.planner.request(workload), state, position)
            kept = state.family_state(DedicationState)
            kept.ledger(POOL_USED, len(tenant.storage.pools))[pool] += tenant.disk
            running.vm = replace(running.vm, pool=tenant.storage.pools[pool].id)
        else:
            self.planner.pipeline.reserve(self.planner.request(running.workload), state, position)
        running.position = position
        running.vm = replace(running.vm, host=host)

    def migration_targets(self, name: str) -> list[str]:
        """The hosts VM `name` may move to now: its account may use them, and they have
        room."""
        running = self._vm(name)
        return [
            host
            for host in self._hosts()
            if host != running.vm.host and self._refusal(running, host) is None
        ]

    def _refusal(self, running: _Running, host: str) -> str | None:
        tenant = running.workload.request(Tenant)
        assert tenant is not None
        zone, closed_by = self._zone(host)
        if zone is not None and closed_by is not None and not tenant.covers(closed_by):
            return f"host {host}'s {zone_refusal(tenant, zone, closed_by)}"
        owner = self.owner_of(host)
        if not self._may_use(tenant, host):
            if owner is None:
                return f"host {host} is not dedicated to {tenant.account}'s domain chain"
            if tenant.dedicated:
                return f"host {host} is dedicated to {owner}, which {tenant.account} may not use"
            found, _ = self.rules.owner(host)
            by = f" ({found.kind} {found.resource})" if found is not None else ""
            return (
                f"host {host} is dedicated to {owner}{by}; {running.vm.name} is not a dedicated VM"
            )
        storage, pool = self.spec.storage, self._pool_of(running)
        if (
            storage is not None
            and pool is not None
            and host not in storage.reach[pool]
            and self._disk_pool(running, host) is None
        ):
            return (
                f"host {host} reaches neither storage pool {storage.pools[pool].id} (its "
                f"disk's) nor another that {running.vm.account} may use with room"
            )
        position = self.state.position(host)
        assert position is not None
        if not self.state.up[position]:
            return f"host {host} is down or in maintenance"
        for row, resource in enumerate(self.state.resources):
            wanted = running.workload.resources.get(resource, 0.0)
            if wanted and float(self.state.free[row, position]) < wanted:
                return f"host {host} has too little free {resource}"
        return None

    def migrate(self, principal: Principal, name: str, host: str) -> VM:
        self._root(principal, "migrate VMs")
        running = self._vm(name)
        if self.state.position(host) is None:
            raise DedicationError(INVALID_PARAMETER, f"no host named {host!r}")
        refusal = self._refusal(running, host)
        if refusal is not None:
            self.rules.events.append(
                Event(
                    self.clock(),
                    str(principal),
                    "migration-refused",
                    name,
                    {"to": host, "why": refusal},
                )
            )
            raise DedicationError(MIGRATION_REFUSED, f"{name} cannot move to {host}: {refusal}")
        self._take_off(running)
        self._put_on(running, host)
        return running.vm

    def evacuate(self, principal: Principal, host: str) -> dict[str, str]:
        """Maintenance: the host goes down and each of its VMs is placed again under the
        same rules (elsewhere). Raises, changing nothing, if one cannot move."""
        self._root(principal, "put hosts into maintenance")
        position = self.state.position(host)
        if position is None:
            raise DedicationError(INVALID_PARAMETER, f"no host named {host!r}")
        saved_state, saved_vms = self.state.fork(), dict(self.vms)
        saved_items, saved_events = dict(self.rules.items), list(self.rules.events)
        moved: dict[str, str] = {}
        name = ""
        try:
            self.state.up[position] = False
            for name in [n for n, r in self.vms.items() if r.vm.host == host]:
                running = self.vms.pop(name)
                self._take_off(running)
                vm = self.deploy(ROOT_ADMIN, running.vm.account, running.vm.offering, name)
                moved[name] = vm.host
        except DedicationError as error:
            self.state, self.vms = saved_state, saved_vms
            self.rules.items.clear()
            self.rules.items.update(saved_items)
            # Nothing moved, so no move is recorded; the failure itself is.
            self.rules.events[:] = saved_events
            self.rules.events.append(
                Event(
                    self.clock(),
                    str(principal),
                    "maintenance-failed",
                    host,
                    {"vm": name, "error": error.kind, "why": error.message},
                )
            )
            raise
        return moved

    def taken_since(self, held: dict[str, Dedication]) -> list[Dedication] | None:
        """The hosts VMs took by implicit dedication since the rules held `held` (a copy
        of `rules.items`); None when anything else changed in them."""
        if any(resource not in self.rules.items for resource in held):
            return None
        taken = [d for r, d in self.rules.items.items() if held.get(r) is not d]
        return taken if all(d.owner.implicit for d in taken) else None

    def owner_of(self, host: str) -> Owner | None:
        found, _ = self.rules.owner(host)
        return found.owner if found is not None else None

    def free(self, host: str) -> dict[str, float]:
        position = self.state.position(host)
        assert position is not None
        return {r: float(self.state.free[i, position]) for i, r in enumerate(self.state.resources)}

    def vms_on(self, host: str) -> list[VM]:
        return [r.vm for r in self.vms.values() if r.vm.host == host]
