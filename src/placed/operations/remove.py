"""A workload removed with its units (DELETE /v1/workloads/{name}), at a generation when
its caller names one."""

from __future__ import annotations

from typing import Any

from placed.operations import placing, reach
from placed.operations.errors import Conflict, NotFound
from placed.operations.replica import ReplicaWorld
from placed.operations.store import Store
from placed.store.claims import Actor
from placed.store.world import Snapshot


def remove(
    engine: Store,
    name: str,
    generation: int | None,
    actor: Actor,
    report: placing.Reporter = placing.silent,
    replica: ReplicaWorld | None = None,
) -> dict[str, Any]:
    if replica is not None:
        # A delta on the live world, committed with the claims beside it, when it can be
        # one (operations/replica.py); the caller's reach is judged there on the cached world.
        fast = replica.remove(engine, name, generation, actor, report)
        if fast is not None:
            return fast
    within = reach.reach_of(engine, actor)

    def prepare(snapshot: Snapshot) -> placing.Prepared:
        row = snapshot.workloads.get(name)
        if row is None or (within is not None and row.account not in within):
            raise NotFound(f"no workload {name!r}")
        if generation is not None and row.generation != generation:
            raise Conflict(
                f"workload {name!r} is at generation {row.generation}, not {generation}",
                "stale-generation",
                extensions={"current_generation": row.generation},
            )
        after = snapshot.copy()
        del after.workloads[name]
        del after.workload_specs[name]
        return placing.plan(snapshot, after)

    committed = placing.transact(engine, prepare, actor, report=report)
    return {
        "revision": committed.revision,
        "changes": placing.moves_document(committed.prepared.moves),
    }
