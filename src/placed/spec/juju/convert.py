"""A Juju file as the equivalent native spec (`placed convert bundle.yaml`): its machines
as targets, what runs as `running`, and each service as a workload whose `to:` lists one
entry per unit as Juju resolved it (svc/N for "beside the Nth unit", `new` for a new
machine), with `juju_constraints` and `new_machines: true` (Juju's default placement).
Planning the native spec gives the same layout as planning the Juju file.

What the native form does not keep: the warnings of entries that fell back (they become
`new`, which is what the fallback does) and a service's series.
"""

from __future__ import annotations

from typing import Any

import yaml

from placed.model import Spec
from placed.policy.directives import Directed, UnitPlan


def _entry(plan: UnitPlan | None) -> str:
    if plan is None or plan.fallback:
        return "new"
    prefix = f"{plan.container}:" if plan.container else ""
    if plan.beside is not None:
        return f"{prefix}{plan.beside}"
    if plan.machine is not None:
        return f"{prefix}{plan.machine}"
    if plan.new:
        return f"{prefix}new"
    if plan.constraints is not None:
        return f"constraints: {plan.constraints}"
    return "new"


def native_document(spec: Spec) -> dict[str, Any]:
    inventory: list[dict[str, Any]] = []
    for target in spec.inventory.targets:
        location: dict[str, Any] = {"id": target.id, "kind": target.kind}
        if target.properties:
            location["properties"] = {
                name: prop.plain() for name, prop in target.properties.items()
            }
        inventory.append(location)
    # Machines the file's directives name but no status lists: Juju would use them as
    # they are, so the native spec declares them.
    known = {target.id for target in spec.inventory.targets}
    for workload in spec.workloads:
        directed = workload.request(Directed)
        for plan in directed.units.values() if directed is not None else ():
            if plan.machine is not None and plan.machine not in known:
                known.add(plan.machine)
                inventory.append({"id": plan.machine, "kind": "machine"})
    running = {unit.workload: 0 for unit in spec.running}
    for unit in spec.running:
        running[unit.workload] += 1
    workloads: list[dict[str, Any]] = []
    for workload in spec.workloads:
        found: dict[str, Any] = {
            "name": workload.name,
            "units": workload.units + running.get(workload.name, 0),
        }
        directed = workload.request(Directed)
        if directed is not None:
            units = [workload.unit_key(i) for i in range(workload.units)]
            planned = [i for i, unit in enumerate(units) if unit in directed.units]
            if planned:
                # The units before the last one with an entry need theirs spelt out.
                entries = [_entry(directed.units.get(unit)) for unit in units[: planned[-1] + 1]]
                # Units that run already take the first entries of a native `to:`.
                found["to"] = ["new"] * running.get(workload.name, 0) + entries
            if directed.constraints is not None:
                found["juju_constraints"] = str(directed.constraints)
            found["new_machines"] = directed.new_machines
        if workload.units == 0 and running.get(workload.name, 0) == 0:
            continue  # nothing to place and nothing running (a subordinate)
        workloads.append(found)
    document: dict[str, Any] = {"version": 1, "name": spec.name, "inventory": inventory}
    if spec.running:
        document["running"] = [{"unit": r.unit, "target": r.target} for r in spec.running]
    document["workloads"] = workloads
    return document


def dump_juju_native(document: dict[str, Any]) -> str:
    header = (
        "# The native placed spec of a Juju file, written by placed convert: planning it\n"
        "# gives the layout Juju would build.\n"
    )
    return header + yaml.safe_dump(
        document, sort_keys=False, allow_unicode=True, default_flow_style=None, width=100
    )
