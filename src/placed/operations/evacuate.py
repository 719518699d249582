"""A host put into maintenance with its VMs moved away (POST
/v1/targets/{name}/evacuate): CloudStack's migrateAway, judged by the dedication rules
(`Cloud.evacuate`). When a VM finds no place none moves: one `migration.refused` event.
A delta of the live world when it can be one (replica.py: `EVACUATE`)."""

from __future__ import annotations

import dataclasses
from typing import Any

from placed.engine.planner import Planner
from placed.engine.rebalance import simulate
from placed.model.dedications import (
    PERMISSION_DENIED,
    DedicationError,
)
from placed.operations import cloudstack, placing
from placed.operations.errors import NotFound
from placed.operations.replica import EVACUATE, ReplicaWorld, Retargeting
from placed.operations.store import Store
from placed.store.claims import MOVED, Actor, Extra, Move
from placed.store.world import Snapshot

MAINTENANCE = "maintenance"


def evacuate(
    engine: Store,
    name: str,
    reason: str,
    principal: str,
    actor: Actor,
    report: placing.Reporter = placing.silent,
    replica: ReplicaWorld | None = None,
) -> dict[str, Any]:
    if replica is not None:
        asked = Retargeting(((name, MAINTENANCE),), reason, EVACUATE)
        fast = replica.retarget(engine, asked, actor, report)
        if fast is not None:
            return {
                "target": name,
                "admin_state": MAINTENANCE,
                "changed": name in fast["changed"],
                "revision": fast["revision"],
                "moves": fast["moves"],
            }

    def prepare(snapshot: Snapshot) -> placing.Prepared:
        row = snapshot.targets.get(name)
        if row is None:
            raise NotFound(f"no target {name!r}")
        cloud = cloudstack.cloud_of(snapshot)
        who = cloudstack.principal_of(cloud, principal)
        held = dict(cloud.rules.items)
        try:
            moved = cloud.evacuate(who, name)
        except DedicationError as error:
            if error.kind == PERMISSION_DENIED:
                raise cloudstack.problem(error) from None
            failed = cloud.events[-1].details.get("vm") if cloud.events else None
            details = {"operation": MAINTENANCE, "vm": failed or None}
            raise cloudstack.Refusal(error, name, name, None, details) from None
        # The VMs move as the rules placed them; whatever else ran there moves as a
        # target going down moves it (`placed simulate --down`).
        middle = snapshot.copy()
        middle.placements.update(moved)
        # The hosts the VMs took by implicit dedication are theirs, as a deploy's are:
        # rows of the world from here on (they would run on hosts no one owns, where the
        # next tenant's VM may land beside them).
        middle.dedications = middle.dedications + [
            placing.implicit_entry(d.resource, d.owner.domain, d.owner.account)
            for d in cloud.taken_since(held) or ()
        ]
        after = middle.copy()
        after.targets[name] = dataclasses.replace(row, admin_state=MAINTENANCE)
        planner = Planner(placing.world_spec(middle))
        # Diffed against `middle`: the VMs' moves are the rules' own, prepended below.
        prepared = placing.simulated(middle, after, simulate(planner, [name], []), planner)
        why = {vm: cloudstack.evacuated_why(name, cloud, vm) for vm in moved}
        prepared.moves = [
            Move(snapshot.units[vm][1], vm, name, host, why[vm], MOVED)
            for vm, host in moved.items()
        ] + prepared.moves
        changed = row.admin_state != MAINTENANCE
        if changed:
            prepared.extra.append(
                Extra(
                    "target.maintenance",
                    name,
                    target=name,
                    details={"reason": reason, "moves": len(prepared.moves)},
                )
            )
        prepared.data["changed"] = changed
        return prepared

    try:
        committed = placing.transact(engine, prepare, actor, report=report)
    except cloudstack.Refusal as refusal:
        raise cloudstack.record(engine, refusal, actor, report) from None
    return {
        "target": name,
        "admin_state": MAINTENANCE,
        "changed": committed.prepared.data["changed"],
        "revision": committed.revision,
        "moves": placing.moves_document(committed.prepared.moves),
    }
