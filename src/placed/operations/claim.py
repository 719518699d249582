"""A claim (POST /v1/workloads): every unit of a new workload is placed, or nothing is
stored and the refusal says why (the kube-style summary). A delta of the live world when
it can be one; else the general path plans the world with the workload in it."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from placed.engine.documents import only_workloads
from placed.engine.report import plan_document
from placed.operations import change_scope, cloudstack, placing, reach
from placed.operations.errors import Conflict, Invalid, Where
from placed.operations.replica import API_DOCUMENT, ReplicaWorld
from placed.operations.store import Store
from placed.spec.load import workload_errors
from placed.spec.schema import WorkloadSpec
from placed.store.claims import Actor
from placed.store.world import Snapshot, WorkloadRow


def read_spec(data: Any, prefix: str = "") -> WorkloadSpec:
    """A workload's body read by the spec's own reader, its errors pointing into the body
    (`prefix`: where the workload sits in it)."""
    try:
        return WorkloadSpec.model_validate(data)
    except ValidationError as error:
        # Worded as `placed validate` words a file's workload (spec/load.py).
        listed, more = workload_errors(error)
        count = len(listed) + more
        raise Invalid(
            f"the workload has {count} problem" + ("s" if count != 1 else ""),
            "invalid-spec",
            [Where(detail, pointer=prefix + pointer) for pointer, detail in listed],
        ) from None


def with_workload(snapshot: Snapshot, spec: WorkloadSpec, document: str | None) -> Snapshot:
    after = snapshot.copy()
    old = snapshot.workloads.get(spec.name)
    after.workload_specs[spec.name] = spec.model_dump(mode="json", exclude_defaults=True)
    mode = spec.mode or snapshot.default_mode(document)
    after.workloads[spec.name] = WorkloadRow(
        old.id if old else 0, old.generation if old else 0, document, spec.account, mode
    )
    return after


def answer(committed: placing.Committed, name: str) -> dict[str, Any]:
    shown = only_workloads(committed.prepared.result, {name})
    return {
        "revision": committed.revision,
        "conflicts": committed.conflicts,
        "changes": placing.moves_document(committed.prepared.moves),
        "incompatible": committed.prepared.data.get("incompatible", []),
        **plan_document(shown),
    }


def owned(spec: WorkloadSpec, actor: Actor, within: set[str] | None) -> WorkloadSpec:
    """The claim's spec owned as the caller's workloads are: a user's own account when
    it names none; refused when it names one out of the caller's reach."""
    account = reach.own_account(actor.role, actor.scope, spec.account, within, "/account")
    return spec if account == spec.account else spec.model_copy(update={"account": account})


def claim(
    engine: Store,
    spec: WorkloadSpec,
    actor: Actor,
    replica: ReplicaWorld | None = None,
    report: placing.Reporter = placing.silent,
) -> dict[str, Any]:
    fast = replica.claim(engine, spec, actor, report) if replica is not None else None
    if fast is not None:
        return fast

    def prepare(snapshot: Snapshot) -> placing.Prepared:
        if change_scope.hidden(actor, snapshot, spec.name):
            raise change_scope.name_taken(spec.name)
        if spec.name in snapshot.workloads:
            raise Conflict(f"workload {spec.name!r} exists: PUT changes it", "exists")
        prepared = placing.plan(
            snapshot,
            with_workload(snapshot, spec, API_DOCUMENT),
            focus=placing.Focus.one(spec.name),
        )
        unplaced = [o for o in prepared.result.unplaced if o.workload == spec.name]
        if unplaced:
            raise cloudstack.Unplaceable(
                Conflict(
                    f"{len(unplaced)} of the units cannot be placed: {unplaced[0].summary}",
                    "unplaceable",
                ),
                cloudstack.placement_failures(prepared.result.events, spec.name),
            )
        return prepared

    try:
        committed = placing.transact(engine, prepare, actor, report=report)
    except cloudstack.Unplaceable as refused:
        raise cloudstack.record_unplaceable(engine, refused, actor, report) from None
    return answer(committed, spec.name)
