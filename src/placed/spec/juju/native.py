"""Juju placement in a native spec: a workload's `to:`, `juju_constraints` and
`new_machines`, and the spec's `running` units, read into the same `Directed` requests a
Juju file gives (policy/directives.py).

Entries follow the bundle style, with the inventory's own ids as machines: a target id,
WORKLOAD/N, a bare WORKLOAD (its units in turn), `new`, each optionally after `lxc:`,
`lxd:` or `kvm:`; and `zone=`, `maas=`, `constraints: ...`. Units without an entry are
placed by the other policies over existing targets (or get a new machine each, with
`new_machines: true`). Workloads are placed in spec order, except that a workload a
directive names comes before the workloads that name it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from placed.model import Running, Workload
from placed.spec.collect import Collector
from placed.spec.errors import quoted
from placed.spec.juju.directives import (
    Directive,
    DirectiveError,
    OnMachine,
    WithUnit,
    parse_entry,
)
from placed.spec.juju.files import (
    MAX_TOTAL_UNITS,
    Service,
    Status,
    bundle_plans,
    constraints_of,
    container_base,
    first_machine,
    unit_number,
)
from placed.spec.schema import RunningSpec, WorkloadSpec
from placed.spec.source import Path

_CONTAINER = re.compile(r"^(lxc|lxd|kvm):(.+)$")


def running_units(
    specs: Sequence[RunningSpec], target_ids: set[str], out: Collector
) -> tuple[Running, ...]:
    found: list[Running] = []
    seen: set[str] = set()
    for index, spec in enumerate(specs):
        where: Path = ("running", index)
        name, _, number = spec.unit.rpartition("/")
        # ASCII digits only, as the schema's pattern says (str.isdigit takes any script's).
        if not name or not (number.isascii() and number.isdigit()):
            out.add(f"{quoted(spec.unit)} is not a unit name: write WORKLOAD/N", (*where, "unit"))
            continue
        if spec.unit in seen:
            out.add(f"{spec.unit} is listed twice", (*where, "unit"))
            continue
        if spec.target not in target_ids:
            out.add(f"no target {quoted(spec.target)} in the inventory", (*where, "target"))
            continue
        seen.add(spec.unit)
        found.append(Running(name, spec.unit, spec.target))
    return tuple(found)


def _entry(value: object, target_ids: set[str]) -> Directive:
    """One native entry: an inventory id is a machine, whatever its spelling."""
    if isinstance(value, str | int) and not isinstance(value, bool):
        text = str(value).strip()
        matched = _CONTAINER.match(text)
        kind, rest = (matched.group(1), matched.group(2)) if matched else (None, text)
        if rest in target_ids:
            return OnMachine(rest, kind)  # type: ignore[arg-type]
    return parse_entry(value, "bundle")


def directed_workloads(
    specs: Sequence[WorkloadSpec],
    workloads: list[Workload],
    target_ids: set[str],
    running: tuple[Running, ...],
    out: Collector,
) -> list[Workload]:
    """The workloads with their directives read, each unit numbered after those that run,
    in an order where every workload a directive names comes first."""
    runs: dict[str, list[str]] = {}
    for unit in running:
        runs.setdefault(unit.workload, []).append(unit.unit)
    if not runs and not any(
        s.to is not None or s.juju_constraints or s.new_machines for s in specs
    ):
        return workloads
    status = Status(units={name: dict.fromkeys(units) for name, units in runs.items()})
    services: dict[str, Service] = {}
    for index, (spec, workload) in enumerate(zip(specs, workloads, strict=True)):
        path: Path = ("workloads", index)
        existing = sorted(runs.get(workload.name, []), key=unit_number)
        entries: list[tuple[Directive, Path]] = []
        listed = spec.to if isinstance(spec.to, list) else [] if spec.to is None else [spec.to]
        for i, value in enumerate(listed):
            where = (*path, "to", i) if isinstance(spec.to, list) else (*path, "to")
            try:
                entry = _entry(value, target_ids)
            except DirectiveError as bad:
                out.add(f"{workload.name}: to entry {quoted(value)}: {bad.message}", where)
                continue
            if isinstance(entry, OnMachine) and entry.machine not in target_ids:
                out.add(
                    f"{workload.name}: to entry {quoted(value)}: no target "
                    f"{quoted(entry.machine)} in the inventory",
                    where,
                )
                continue
            entries.append((entry, where))
        directed = spec.to is not None or spec.juju_constraints or spec.new_machines
        if directed and workload.mode != "allocation":
            out.add(
                f"to:, juju_constraints and new_machines place allocation units; this "
                f"workload is in {workload.mode} mode",
                path,
            )
        services[workload.name] = Service(
            name=workload.name,
            path=path,
            units=max(0, workload.units - len(existing)),
            existing=existing,
            entries=entries,
            has_to=spec.to is not None,
            constraints=constraints_of(spec.juju_constraints, (*path, "juju_constraints"), out),
            subordinate=False,
            series=None,
        )
    made = sum(services[s.name].units for s in specs if s.new_machines and s.name in services)
    if made > MAX_TOTAL_UNITS:
        out.add(
            f"new_machines workloads ask for {made:,} units together, each with a machine "
            f"of its own; placed makes at most {MAX_TOTAL_UNITS:,}",
            ("workloads",),
        )
    machine_ids = sorted(target_ids)
    result: dict[str, Workload] = {}
    for spec, workload in zip(specs, workloads, strict=True):
        service = services[workload.name]
        changed = replace(workload, units=service.units, first=service.first)
        if spec.to is not None or spec.juju_constraints or spec.new_machines:
            plans = bundle_plans(service, services, None, status, out, positions=False)
            request = replace(
                plans,
                new_machines=spec.new_machines,
                style="native",
                first_machine=first_machine(machine_ids),
                container_base=container_base(machine_ids),
            )
            changed = replace(changed, requests=(*workload.requests, request))
        result[workload.name] = changed
    return [result[name] for name in _order(specs, services, out)]


def _order(
    specs: Sequence[WorkloadSpec], services: dict[str, Service], out: Collector
) -> list[str]:
    """Spec order, except that a workload a directive names comes first."""
    needs = {
        name: [e.service for e, _ in service.entries if isinstance(e, WithUnit)]
        for name, service in services.items()
    }
    order: list[str] = []
    state: dict[str, str] = {}
    for spec in specs:
        if state.get(spec.name):
            continue
        # Depth first without recursion: a chain of directives may be long.
        stack: list[tuple[str, int]] = [(spec.name, 0)]
        state[spec.name] = "visiting"
        while stack:
            name, next_need = stack[-1]
            wanted = [other for other in needs.get(name, []) if other in services]
            if next_need < len(wanted):
                stack[-1] = (name, next_need + 1)
                other = wanted[next_need]
                if state.get(other) == "visiting":
                    chain = [n for n, _ in stack]
                    loop = " -> ".join((*chain[chain.index(other) :], other))
                    out.add(
                        f"{name}: directives form a cycle ({loop})",
                        (*services[name].path, "to"),
                    )
                elif state.get(other) is None:
                    state[other] = "visiting"
                    stack.append((other, 0))
                continue
            stack.pop()
            state[name] = "done"
            order.append(name)
    return order
