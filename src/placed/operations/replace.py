"""A workload's units that no longer fit where they run, placed again (POST
/v1/workloads/{name}/replace): each moves where the plan puts it now; one that fits nowhere
else stays, and says why."""

from __future__ import annotations

import dataclasses
from typing import Any

from placed.operations import placing, reach
from placed.operations.errors import NotFound
from placed.operations.store import Store
from placed.store.claims import Actor
from placed.store.world import Snapshot


def replace(
    engine: Store,
    name: str,
    actor: Actor,
    dry_run: bool = False,
    report: placing.Reporter = placing.silent,
) -> dict[str, Any]:
    """Move the workload's allocation units that no longer fit where they run to where
    the plan puts them now; a unit that fits nowhere else stays (and says why)."""
    within = reach.reach_of(engine, actor)

    def prepare(snapshot: Snapshot) -> placing.Prepared:
        row = snapshot.workloads.get(name)
        if row is None or (within is not None and row.account not in within):
            raise NotFound(f"no workload {name!r}")
        prepared = placing.plan(snapshot, snapshot.copy())
        misfits = {m["unit"]: m for m in prepared.data["incompatible"] if m["workload"] == name}
        stayed: list[dict[str, Any]] = []
        moving = list(misfits)
        while moving:
            prepared = placing.plan(snapshot, snapshot.copy(), {name: moving})
            nowhere = {o.unit: o.summary for o in prepared.result.unplaced if o.unit in misfits}
            if not nowhere:
                break
            # Placed again elsewhere or not at all: a unit with no other place keeps the
            # one it has (no outage for a rule), and the others are planned without it.
            stayed.extend({**misfits[unit], "summary": nowhere[unit]} for unit in nowhere)
            moving = [unit for unit in moving if unit not in nowhere]
            if not moving:
                prepared = placing.plan(snapshot, snapshot.copy())
        prepared.moves = [
            dataclasses.replace(
                move,
                why=f"replaced: {move.source} no longer fits ({misfits[move.unit]['rule']}: "
                f"{misfits[move.unit]['why']}); now on {move.destination}: {move.why}",
                details={"rule": misfits[move.unit]["rule"]},
            )
            if move.unit in misfits and move.destination is not None
            else move
            for move in prepared.moves
        ]
        prepared.data["stayed"] = stayed
        return prepared

    committed = placing.transact(engine, prepare, actor, dry_run=dry_run, report=report)
    return {
        "workload": name,
        "revision": committed.revision,
        "dry_run": dry_run,
        "changes": placing.moves_document(committed.prepared.moves),
        "stayed": committed.prepared.data.get("stayed", []),
        "incompatible": committed.prepared.data.get("incompatible", []),
    }
