"""A VM migrated to another host (POST /v1/units/{unit}/migrate): CloudStack's
migrateVirtualMachine, judged by the dedication rules (`Cloud.migrate`) on the world read,
as `placed simulate --migrate` judges it on a spec. A host the VM's account may not use is
refused ("migration of a VM to a resource not owned by the account must fail") with one
`migration.refused` event and nothing else. A delta of the live world when it can be one
(replica.py: `Migrating`)."""

from __future__ import annotations

import dataclasses
from typing import Any

from placed.model.dedications import (
    MIGRATION_REFUSED,
    DedicationError,
)
from placed.operations import cloudstack, placing
from placed.operations.errors import NotFound
from placed.operations.replica import Migrating, ReplicaWorld
from placed.operations.store import Store
from placed.store.claims import Actor
from placed.store.world import Snapshot


def migrate(
    engine: Store,
    unit: str,
    target: str,
    principal: str,
    actor: Actor,
    report: placing.Reporter = placing.silent,
    replica: ReplicaWorld | None = None,
) -> dict[str, Any]:
    if replica is not None:
        fast = replica.migrate(engine, Migrating(unit, target), actor, report)
        if fast is not None:
            [move] = fast["moves"]
            return {
                "unit": unit,
                "from": move["from"],
                "to": target,
                "revision": fast["revision"],
                "changes": fast["moves"],
                # Every unit fit before, the VM fits where it went, and no other
                # workload reads where it runs (the delta's conditions).
                "incompatible": [],
            }

    def prepare(snapshot: Snapshot) -> placing.Prepared:
        if unit not in snapshot.units:
            raise NotFound(f"no unit {unit!r}")
        cloud = cloudstack.cloud_of(snapshot)
        who = cloudstack.principal_of(cloud, principal)
        source = snapshot.placements.get(unit)
        workload = snapshot.units[unit][1]
        try:
            cloud.migrate(who, unit, target)
        except DedicationError as error:
            if error.kind == MIGRATION_REFUSED:
                details = {"operation": "migrate", "from": source, "to": target}
                owner = snapshot.workloads.get(workload)
                account = owner.account if owner is not None else None
                raise cloudstack.Refusal(error, unit, target, workload, details, account) from None
            raise cloudstack.problem(error) from None
        after = snapshot.copy()
        after.placements[unit] = target
        prepared = placing.plan(snapshot, after)
        why = f"migrated from {source} to {target} as asked"
        prepared.moves = [
            dataclasses.replace(move, why=why) if move.unit == unit else move
            for move in prepared.moves
        ]
        prepared.data.update({"unit": unit, "from": source, "to": target})
        return prepared

    try:
        committed = placing.transact(engine, prepare, actor, report=report)
    except cloudstack.Refusal as refusal:
        raise cloudstack.record(engine, refusal, actor, report) from None
    return {
        **committed.prepared.data,
        "revision": committed.revision,
        "changes": placing.moves_document(committed.prepared.moves),
    }
