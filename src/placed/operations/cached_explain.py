"""One unit explained on the replica's world in memory (operations/replica.py): what
GET /v1/units/{unit} answers, without reading the whole world, loading it as a spec and
building its index again for each unit asked about (seconds on 10,000 targets).

The general path (units.py) plans the world as it is with the unit's workload placed
again: the spec of the world read with that workload's placements left out. That spec
differs from the cached one only in what runs. The workload's own units do not run, so
it asks for all of them, numbered from 0; every other allocation workload asks for the
units it has beyond those that run, numbered after them (the loader's rule for
`running:`, spec/juju/native.py, whose `unit_number` is read here); the claims the cache
took since it was built are workloads of their own whose units all run. The inventory,
dedications and resource names are the cached world's, so the plan runs on the cached
index and families (`Planner.sharing`), from a state of its own that the units which run
take, as the general path's planner starts; the cached state is not touched.

The cached world declines (None: the general path answers) a world with a Juju
directive (`to:`, juju_constraints, new_machines), whose loader reads each directive
with the units that run and may order the workloads anew, and a cache whose workloads
are not the store's, in its order, or whose resource names the world's workloads no
longer give.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from placed.collector import without_cycle_collection
from placed.engine.planner import Planner
from placed.engine.trace import UnknownUnitError, trace, trace_document
from placed.model import Spec
from placed.model.spec import Running
from placed.operations.replica import Cached
from placed.policy.capacity import resource_names
from placed.spec.juju.files import unit_number
from placed.store.world import Snapshot

# A workload's keys that make the loader read directives with the units that run.
_DIRECTED = ("juju_constraints", "new_machines")


class Declined(LookupError):
    """The cached world cannot give this explanation: the general path does."""


def unit_world(cached: Cached, workload: str) -> Spec | None:
    """The spec the general path plans to explain a unit of `workload`, from the cached
    world; None when only the general path can build it."""
    snapshot = cached.snapshot
    specs = snapshot.workload_specs
    models = cached.spec.workloads
    if len(models) != len(snapshot.workloads) or any(
        model.name != name for model, name in zip(models, snapshot.workloads, strict=True)
    ):
        return None
    if any(
        spec.get("to") is not None or any(spec.get(key) for key in _DIRECTED)
        for spec in specs.values()
    ):
        return None
    running = _running_without(snapshot, workload)
    runs: dict[str, list[str]] = {}
    for entry in running:
        runs.setdefault(entry.workload, []).append(entry.unit)
    planned = []
    for model in models:
        if model.mode == "allocation":
            existing = runs.get(model.name, [])
            units = max(0, int(specs[model.name].get("units", 1)) - len(existing))
            first = max((unit_number(unit) for unit in existing), default=-1) + 1
            if (model.units, model.first) != (units, first):
                model = dataclasses.replace(model, units=units, first=first)
        planned.append(model)
    world = cached.spec
    if resource_names(world.inventory.targets, planned) != cached.planner.index.resources:
        return None
    return dataclasses.replace(world, workloads=tuple(planned), running=running)


def _running_without(snapshot: Snapshot, workload: str) -> tuple[Running, ...]:
    """The world's `running:` with `workload`'s placements left out, as the spec loader
    reads it (each unit's workload is its name's)."""
    placements = dict(snapshot.placements)
    for name, (_, owner) in snapshot.units.items():
        if owner == workload:
            placements.pop(name, None)
    entries = dataclasses.replace(snapshot, placements=placements).running()
    return tuple(
        Running(entry["unit"].rpartition("/")[0], entry["unit"], entry["target"])
        for entry in entries
    )


def explanation(cached: Cached, workload: str, planned: str) -> dict[str, Any] | None:
    """`placed explain`'s document of the unit the replay of `workload` calls `planned`
    (unit_description.planned_name), as the general path gives it, or None when the workload no
    longer has that unit; Declined when the cached world cannot say."""
    spec = unit_world(cached, workload)
    if spec is None:
        raise Declined(workload)
    planner = Planner.sharing(cached.planner, spec)
    # A verdict per target makes records in no reference cycle; a collection of the
    # oldest generation would walk the whole cached world (a tenth of a second or more).
    with without_cycle_collection():
        try:
            # Brief: the plan stops once the unit is judged (nothing later changes how
            # it was), and no lint, which the document does not show.
            return trace_document(trace(planner, planned, brief=True))
        except UnknownUnitError:
            return None  # a unit its workload no longer has (it is being removed)
