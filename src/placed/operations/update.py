"""A workload changed (PUT /v1/workloads/{name}) at the generation its caller read: a
stale one is refused with the current generation, never retried for the caller. Units
move only as the new spec needs."""

from __future__ import annotations

from typing import Any

from placed.operations import placing, reach
from placed.operations.claim import answer, with_workload
from placed.operations.errors import Conflict, NotFound, Where
from placed.operations.replica import ReplicaWorld
from placed.operations.store import Store
from placed.spec.schema import WorkloadSpec
from placed.store.claims import Actor
from placed.store.world import Snapshot


def update(
    engine: Store,
    name: str,
    asked: WorkloadSpec,
    generation: int,
    actor: Actor,
    report: placing.Reporter = placing.silent,
    replica: ReplicaWorld | None = None,
) -> dict[str, Any]:
    """Workload `name` made `asked` at `generation`, owned as `actor`'s workloads are."""
    within = reach.reach_of(engine, actor)
    spec = owned_spec(name, asked, actor, within)
    if replica is not None:
        # A delta on the live world when only the count changes (operations/replica.py).
        fast = replica.rescale(engine, spec, generation, actor, report)
        if fast is not None:
            return fast

    def prepare(snapshot: Snapshot) -> placing.Prepared:
        row = snapshot.workloads.get(name)
        if row is None or (within is not None and row.account not in within):
            raise NotFound(f"no workload {name!r}")
        if row.generation != generation:
            raise Conflict(
                f"workload {name!r} is at generation {row.generation}, not "
                f"{generation}: read it again and redo the change",
                "stale-generation",
                extensions={"current_generation": row.generation},
            )
        return placing.plan(
            snapshot,
            with_workload(snapshot, spec, row.document),
            focus=placing.Focus.one(name, "/spec"),
        )

    return answer(placing.transact(engine, prepare, actor, report=report), name)


def owned_spec(
    name: str, spec: WorkloadSpec, actor: Actor, within: set[str] | None
) -> WorkloadSpec:
    """The PUT's spec owned as the caller's workloads are, and of the path's workload."""
    account = reach.own_account(actor.role, actor.scope, spec.account, within, "/spec/account")
    if account != spec.account:
        spec = spec.model_copy(update={"account": account})
    if spec.name != name:
        # The path and the body are each well-formed, and disagree.
        raise Conflict(
            f"the spec names {spec.name!r}, the path {name!r}",
            "conflicting-request",
            [Where("must be the workload of the path", pointer="/spec/name")],
        )
    return spec
