"""Targets drained for maintenance (POST /v1/targets/{name}/drain, /v1/targets:drain), as
CloudStack's PrepareForMaintenance: the hosts take nothing new, every allocation unit on
them is placed again by one plan (its pipeline holds the dedication rules, tenant affinity
and implicit dedication), and a unit that finds no place stays where it is with a
`migration.refused` event, while the others move. A delta of the live world when it can
be one."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Sequence
from typing import Any

from placed.model.dedications import (
    NO_CAPACITY,
)
from placed.operations import cloudstack, placing, target_states
from placed.operations.replica import ReplicaWorld, Retargeting
from placed.operations.store import Store
from placed.store.claims import Actor, Extra
from placed.store.world import Snapshot

MAINTENANCE = "maintenance"
DRAIN = "drain"

MAX_DRAIN = 1000  # targets in one drain, as POST /v1/targets:batch takes


def drain(
    engine: Store,
    names: Sequence[str],
    reason: str,
    actor: Actor,
    dry_run: bool = False,
    expected_revision: int | None = None,
    report: placing.Reporter = placing.silent,
    replica: ReplicaWorld | None = None,
) -> dict[str, Any]:
    """Drain every target of `names` at once, in one plan and one transaction: all go
    into maintenance before anything is placed again, so a unit leaving one never lands
    on another (as CloudStack would have it, had it several hosts in maintenance). With
    `replica`, a delta on its live world when it can be one (every unit finds another
    place) and no revision is expected."""
    wanted = list(dict.fromkeys(names))  # each once, in order
    if replica is not None and not dry_run and expected_revision is None:
        asked = Retargeting(tuple((name, MAINTENANCE) for name in wanted), reason, DRAIN)
        fast = replica.retarget(engine, asked, actor, report)
        if fast is not None:
            done = set(fast["changed"])
            return {
                "targets": [
                    {"target": name, "admin_state": MAINTENANCE, "changed": name in done}
                    for name in wanted
                ],
                "dry_run": False,
                "revision": fast["revision"],
                "moves": fast["moves"],
                "refused": [],
            }

    def prepare(snapshot: Snapshot) -> placing.Prepared:
        rows = target_states.rows_of(snapshot, wanted)
        draining = set(wanted)
        after = snapshot.copy()
        for name, row in rows.items():
            after.targets[name] = dataclasses.replace(row, admin_state=MAINTENANCE)
        # The allocation units that run there (mapping and every-mode units follow the
        # targets' state in any plan).
        units: dict[str, list[str]] = {}
        for running in snapshot.running():
            if running["target"] in draining:
                workload = snapshot.units[running["unit"]][1]
                units.setdefault(workload, []).append(running["unit"])
        refused: dict[str, str] = {}
        while True:
            again = {
                workload: [unit for unit in found if unit not in refused]
                for workload, found in units.items()
            }
            again = {workload: found for workload, found in again.items() if found}
            prepared = placing.plan(snapshot, after.copy(), again)
            moving = {unit for found in again.values() for unit in found}
            nowhere = {o.unit: o.summary for o in prepared.result.unplaced if o.unit in moving}
            if not nowhere:
                break
            # A unit with no other place stays (its host in maintenance); the others are
            # planned again without it, so none takes a place it would have freed.
            refused.update(nowhere)
        prepared.moves = [
            dataclasses.replace(
                move,
                why=f"{move.source} is drained (maintenance): placed again under the same "
                f"rules; now on {move.destination}: {move.why}",
            )
            if move.source in draining and move.destination not in (None, move.source)
            else move
            for move in prepared.moves
        ]
        accounts = {n: w.account for n, w in snapshot.workloads.items()}
        stays = {unit: snapshot.placements[unit] for unit in refused}
        refusals = [
            Extra(
                cloudstack.MIGRATION_REFUSED_EVENT,
                unit,
                target=stays[unit],
                workload=snapshot.units[unit][1],
                account=accounts.get(snapshot.units[unit][1]),
                details={
                    "operation": DRAIN,
                    "from": stays[unit],
                    "error": NO_CAPACITY,
                    "why": f"{unit} stays on {stays[unit]}: no other target takes it: {summary}",
                },
            )
            for unit, summary in refused.items()
        ]
        changed = [name for name in wanted if rows[name].admin_state != MAINTENANCE]
        staying = Counter(stays.values())
        several = len(wanted) > 1
        head = [
            Extra(
                "target.maintenance",
                name,
                target=name,
                details={
                    "reason": reason,
                    "operation": DRAIN,
                    "moves": len(prepared.moves),
                    "refused": staying[name],
                    **({"batch": True} if several else {}),
                },
            )
            for name in changed
        ]
        prepared.extra[:0] = [*head, *refusals]
        prepared.data["changed"] = changed
        prepared.data["refused"] = [
            {
                "unit": unit,
                "workload": snapshot.units[unit][1],
                "target": stays[unit],
                "why": summary,
            }
            for unit, summary in refused.items()
        ]
        return prepared

    committed = placing.transact(
        engine,
        prepare,
        actor,
        dry_run=dry_run,
        expected_revision=expected_revision,
        report=report,
    )
    changed = set(committed.prepared.data["changed"])
    return {
        "targets": [
            {"target": name, "admin_state": MAINTENANCE, "changed": name in changed}
            for name in wanted
        ],
        "dry_run": dry_run,
        "revision": committed.revision,
        "moves": placing.moves_document(committed.prepared.moves),
        "refused": committed.prepared.data["refused"],
    }
