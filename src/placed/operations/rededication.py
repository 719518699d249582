"""A dedication made, given another owner or released as a delta on the live world
(operations/replica.py): the rules (model/dedications.py) asked on the cached world, the
owner of each target at or below the resource set in the plan state, the rows and events
the general path writes for the change, and, once they are stored, the cached world's
spec, index and explainer carrying the new dedications.

A delta is what a whole plan finds only where the change moves nothing and leaves every
unit fitting where it runs, so it is one only where no tenant's VM runs at or below the
resource (it would run under another owner: the general path judges it) and the world
has no storage pool (a pool's owner follows its zone's). A zone's change also sets the
zone's owner beside each host in it, and every tenant's request carries the zones'
dedications (`Tenant.zones`, as spec/cloudstack.with_storage gives them). The replica
sends a world with a unit waiting for room (a host opened would take it) to the general
path before asking here. Anything else, and every refusal of the rules, goes to the
general path, which answers it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from placed.engine.index import TargetIndex
from placed.engine.outcomes import DedicationCreated
from placed.engine.report import Explainer
from placed.engine.state import PlanState
from placed.model import Spec, Workload
from placed.model.dedications import (
    Dedication,
    DedicationError,
    Dedications,
    Event,
    Owner,
    Topology,
)
from placed.model.tenancy import ROOT_ADMIN, Tenancy
from placed.operations import cloudstack
from placed.operations.change_scope import CHANGED, CREATED, DELETED, Touched
from placed.policy.dedication import (
    VMS,
    ZONE,
    DedicationState,
    Tenant,
    owners_changed,
    rededicate,
)
from placed.store import batch, events
from placed.store.claims import Actor
from placed.store.world import Snapshot

DEDICATE, UPDATE, RELEASE = "dedicate", "update", "release"


@dataclass(frozen=True, slots=True)
class Rededicating:
    """A root admin's dedication change: dedicate `resource` to `domain` (and
    `account`), give its dedication that owner instead, or release it; `principal`: the
    caller as the rules read it (`root-admin`, `domain-admin:D1`, `user:A7`)."""

    action: str
    resource: str
    principal: str
    domain: str | None = None
    account: str | None = None


@dataclass(frozen=True, slots=True)
class Rededicated:
    """What the rules decided: the dedication made, changed or released, their events,
    every dedication after the change as a read of the rows lists them, each location
    whose own dedication changes, and the dedication in force on each target at or below
    the resource, by position."""

    found: Dedication
    events: tuple[Event, ...]
    entries: list[dict[str, Any]]
    own: dict[str, Dedication | None]
    in_force: dict[int, Dedication | None]
    # A zone's own dedication changed: its owner beside each host in it, by position.
    zone_owners: dict[int, Owner | None] = field(default_factory=dict)

    def answer(self) -> dict[str, Any]:
        """The route's answer but for its revision, as the general path gives it: a
        change that moves nothing, every unit fitting."""
        return {
            "dedication": self.found.to_dict(),
            "was": next((e.details["was"] for e in self.events if "was" in e.details), None),
            "absorbed": [
                dict(e.details)
                for e in self.events
                if e.kind == "dedication-released" and e.subject != self.found.resource
            ],
            "changes": [],
            "incompatible": [],
        }

    def touched(self, before: Snapshot) -> list[Touched]:
        """The change's diff as the scope rule reads a whole plan's
        (change_scope.touched): each dedication made, changed or released."""
        old = {entry["resource"] for entry in before.dedications}
        return [
            Touched("dedication", resource, DELETED if now is None else CHANGED)
            if resource in old
            else Touched("dedication", resource, CREATED)
            for resource, now in self.own.items()
        ]


def judge(
    spec: Spec,
    snapshot: Snapshot,
    index: TargetIndex,
    state: PlanState,
    topology: Topology,
    asked: Rededicating,
) -> Rededicated | None:
    """The change as the rules make it on the cached world, or None when only the
    general path can take it (see the module's note)."""
    resource = asked.resource
    tenancy = spec.tenancy
    if resource not in snapshot.nodes or snapshot.storage or tenancy is None:
        return None
    who = tenancy.principal(asked.principal)
    if who is None:
        return None  # the general path refuses an unknown caller
    hosts = (
        [resource]
        if topology.is_leaf(resource)
        else [node for node in topology.below(resource) if topology.is_leaf(node)]
    )
    positions: dict[str, int] = {}
    for host in hosts:
        position = index.position.get(host)
        if position is None:
            return None
        positions[host] = position
    vms = state.family_state(DedicationState).tally(VMS)
    if any(vms[position] for position in positions.values()):
        return None
    now = spec.settings.now
    # No VM runs on these hosts: the rules ask about no others.
    rules = Dedications(tenancy, topology, lambda host: (), lambda: now)
    rules.items.update({d.resource: d for d in spec.dedications})
    try:
        if asked.action == DEDICATE:
            assert asked.domain is not None
            found = rules.dedicate(who, resource, asked.domain, asked.account)
        elif asked.action == UPDATE:
            assert asked.domain is not None
            found = rules.update(who, resource, asked.domain, asked.account)
        else:
            found = rules.release(who, resource)
    except DedicationError:
        return None  # the general path answers the rule's problem
    made = tuple(rules.events)
    own: dict[str, Dedication | None] = {resource: rules.items.get(resource)}
    for event in made:
        if event.kind == "dedication-released" and event.subject != resource:
            own[event.subject] = None  # absorbed into the wider one
    zone = own[resource] if topology.kinds.get(resource) == ZONE else None
    return Rededicated(
        found,
        made,
        _as_read(snapshot, own),
        own,
        {position: rules.owner(host)[0] for host, position in positions.items()},
        {position: zone.owner if zone is not None else None for position in positions.values()}
        if topology.kinds.get(resource) == ZONE
        else {},
    )


def _as_read(snapshot: Snapshot, own: Mapping[str, Dedication | None]) -> list[dict[str, Any]]:
    """The world's dedications with `own`'s changes, in the order a read of the rows
    gives them: outermost first, then as they were made (a changed owner keeps its row,
    a new dedication's row comes last)."""
    made = cloudstack.dedication_entries([d for d in own.values() if d is not None], snapshot)
    now = {entry["resource"]: entry for entry in made}
    kept = [
        now.pop(entry["resource"], entry)
        for entry in snapshot.dedications
        if entry["resource"] not in own or entry["resource"] in now
    ]
    entries = [*kept, *now.values()]
    entries.sort(key=lambda entry: snapshot.depth(entry["resource"]))
    return entries


def on_state(state: PlanState, decided: Rededicated) -> PlanState:
    """The plan state with the targets' new owners (a fork: `state` is the world the
    batch's earlier changes leave, which a failed commit keeps)."""
    after = state.fork()
    rededicate(after, decided.in_force, decided.zone_owners)
    return after


def rows(
    decided: Rededicated, before: Snapshot, actor: Actor
) -> tuple[list[batch.Rededication], list[events.Pending]]:
    """The dedication rows the change writes, and its events as the general path
    records them (cloudstack.dedication_events, with the caller)."""
    old = {entry["resource"] for entry in before.dedications}
    entries = {entry["resource"]: entry for entry in decided.entries}
    written: list[batch.Rededication] = []
    for resource, now in decided.own.items():
        if now is None:
            if resource in old:
                kind = str(before.nodes.get(resource, {}).get("kind", "host"))
                written.append(batch.Rededication(resource, kind, "", None, gone=True))
            continue
        entry = entries[resource]
        written.append(
            batch.Rededication(
                resource,
                now.kind,
                entry["domain"],
                entry.get("account"),
                bool(entry.get("implicit")),
                made=resource not in old,
            )
        )
    notes = [extra.pending(actor) for extra in cloudstack.dedication_events(decided.events)]
    return written, notes


def stored(
    spec: Spec,
    snapshot: Snapshot,
    index: TargetIndex,
    explainer: Explainer,
    topology: Topology,
    decided: Rededicated,
    number: int,
    workloads: dict[str, Workload],
) -> Spec:
    """The cached world once the change is stored at revision `number`: the snapshot's
    dedication rows and rules revision, and the spec whose locations and targets carry
    the new dedications (returned), which the index and the explainer read from now.
    The spec's dedications and their events are the rows applied as the loader applies
    them (spec/cloudstack.apply_dedications): a plan's document lists those events. A
    zone's change gives each tenant's request the zones' dedications anew, in
    `workloads` (the planner's, which the explainer shares) and in the spec."""
    snapshot.dedications = decided.entries
    snapshot.rules_revision = number
    path = [decided.found.resource]
    while (parent := snapshot.parents.get(path[-1])) is not None:
        path.append(parent)
    path.reverse()
    inventory = spec.inventory.rededicated(path, decided.own)
    rules = Dedications(
        spec.tenancy or Tenancy(), topology, lambda host: (), lambda: spec.settings.now
    )
    for entry in decided.entries:
        rules.dedicate(
            ROOT_ADMIN,
            entry["resource"],
            entry["domain"],
            entry.get("account"),
            bool(entry.get("implicit")),
        )
    dedications = tuple(rules.items.values())
    tenants = spec.workloads
    if decided.zone_owners:
        zones = tuple((d.resource, d.owner) for d in dedications if d.kind == ZONE)
        changed = _with_zones(workloads, zones)
        workloads.update(changed)
        tenants = tuple(changed.get(w.name, w) for w in spec.workloads)
    after = dataclasses.replace(
        spec,
        inventory=inventory,
        dedications=dedications,
        events=tuple(rules.events),
        workloads=tenants,
    )
    index.rededicated(inventory.targets)
    owners_changed(index)
    explainer.rededicated(after)
    return after


def _with_zones(
    workloads: Mapping[str, Workload], zones: tuple[tuple[str, Owner], ...]
) -> dict[str, Workload]:
    """Each tenant's VM whose request reads other zones' dedications, with these."""
    changed: dict[str, Workload] = {}
    for name, workload in workloads.items():
        tenant = workload.request(Tenant)
        if isinstance(tenant, Tenant) and tenant.zones != zones:
            request = dataclasses.replace(tenant, zones=zones)
            changed[name] = dataclasses.replace(
                workload,
                requests=tuple(request if r is tenant else r for r in workload.requests),
            )
    return changed


def implicit(snapshot: Snapshot, index: TargetIndex, made: DedicationCreated) -> Rededicated:
    """A host a claim's VM took by implicit dedication, as the rules hold it (seed 004:
    the empty host becomes the account's), to store in the cached world as any
    dedication's change is (`stored`)."""
    position = index.position[made.resource]
    owner = Owner(made.domain, made.account, implicit=True)
    found = Dedication(made.resource, index.targets[position].kind, owner)
    own: dict[str, Dedication | None] = {made.resource: found}
    return Rededicated(found, (), _as_read(snapshot, own), own, {position: found})


def implicit_row(made: DedicationCreated, index: TargetIndex) -> batch.Rededication:
    """Its row, as the general path writes an implicit dedication (a host nobody owned:
    no row there before)."""
    kind = index.targets[index.position[made.resource]].kind
    return batch.Rededication(
        made.resource, kind, made.domain, made.account, implicit=True, made=True
    )


def released_implicit(
    snapshot: Snapshot, index: TargetIndex, host: str, owner: Owner
) -> Rededicated:
    """A host's implicit dedication that its owner's last VM there took with it (seed
    004: the host is released when its last such VM leaves), to store in the cached
    world as any dedication's change is (`stored`)."""
    position = index.position[host]
    found = Dedication(host, index.targets[position].kind, owner)
    own: dict[str, Dedication | None] = {host: None}
    return Rededicated(found, (), _as_read(snapshot, own), own, {position: None})


def from_rows(
    spec: Spec,
    snapshot: Snapshot,
    index: TargetIndex,
    topology: Topology,
    entries: list[dict[str, Any]],
) -> list[Rededicated] | None:
    """The dedications another replica committed, read from the rows (`entries`: every
    one, as a world read lists them), as the changes that make the cached world's into
    them: one for each resource whose dedication differs, the outermost first, each as
    `judge` makes it (the owner in force on every host at or below it). None when only a
    whole read can take them: a world with no tenancy or with storage pools, or a
    resource the world does not hold."""
    old = {entry["resource"]: entry for entry in snapshot.dedications}
    new = {entry["resource"]: entry for entry in entries}
    changed = [r for r in (*old, *(r for r in new if r not in old)) if old.get(r) != new.get(r)]
    if not changed:
        return []
    tenancy = spec.tenancy
    if tenancy is None or snapshot.storage or any(r not in snapshot.nodes for r in changed):
        return None
    rules = Dedications(tenancy, topology, lambda host: (), lambda: spec.settings.now)
    try:
        for entry in entries:
            rules.dedicate(
                ROOT_ADMIN,
                entry["resource"],
                entry["domain"],
                entry.get("account"),
                bool(entry.get("implicit")),
            )
    except DedicationError:
        return None
    found: list[Rededicated] = []
    for resource in sorted(changed, key=snapshot.depth):
        hosts = (
            [resource]
            if topology.is_leaf(resource)
            else [node for node in topology.below(resource) if topology.is_leaf(node)]
        )
        positions = {host: index.position[host] for host in hosts if host in index.position}
        now = rules.items.get(resource)
        if now is None:
            was = old[resource]
            kind = index.targets[positions[resource]].kind if resource in positions else ""
            owner = Owner(was["domain"], was.get("account"), bool(was.get("implicit")))
            made = Dedication(resource, topology.kinds.get(resource, kind), owner)
        else:
            made = now
        zone = topology.kinds.get(resource) == ZONE
        found.append(
            Rededicated(
                made,
                (),
                entries,
                {resource: now},
                {position: rules.owner(host)[0] for host, position in positions.items()},
                {
                    position: now.owner if now is not None else None
                    for position in positions.values()
                }
                if zone
                else {},
            )
        )
    return found
