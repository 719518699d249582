"""Juju's own files read as placed specs, unchanged: juju-deployer files (named
deployments, each with `services:`; the seed's `envExport:`), bundles (`applications:`
or `services:` with `machines:`), and what `juju status --format yaml` prints, for the
machines, containers and units that already exist.

Each service becomes an allocation workload whose units carry a `Directed` request (one
plan per unit, policy/directives.py); machines that exist become targets. Which entry
applies to which unit, and the order services are placed in, follow the tools:

- deployer: entry i is unit i's; a bare service name is the unit of that service with
  my own index, `svc=N` its N-th unit in numeric order; units without an entry get a new
  machine; services without `to:` are placed first, then those with one, each group by
  name (juju-deployer's order). Nested placement (a target that has its own `to:`) is an
  error, as the seed says.
- bundle: entry i is unit i's, a short list padded with its last entry; `svc/N` is the
  unit svc/N, a bare name hands out the target's units in order (a counter per target);
  declared machines are created first, in the natural order of their ids, and take the
  model's next numbers; applications are placed in name order, each after those it names.

Every problem of a file is reported at once, each at its line and column.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from placed.model import Inventory, Location, Property, Running, Settings, Spec, Workload
from placed.model.juju_constraints import ConstraintError, JujuConstraints, parse_constraints
from placed.policy.directives import DECLARED, DECLARED_CONSTRAINTS, Directed, UnitPlan
from placed.spec.collect import Collector
from placed.spec.errors import Problem, SourcePosition, SpecError, quoted
from placed.spec.juju.directives import (
    Directive,
    DirectiveError,
    NewMachine,
    OnMachine,
    ProviderPlacement,
    Style,
    UnitConstraints,
    WithUnit,
    parse_entry,
)
from placed.spec.source import Path, parse, read_bounded

MAX_UNITS = 100_000  # per service: a bundle of more is a mistake, not a deployment
# Per file: each unit of a Juju file may get a machine of its own, made during the plan,
# so the bound is that of a large model rather than of a spec's existing targets.
MAX_TOTAL_UNITS = 200_000


def juju_style(data: Any) -> Style | None:
    """Which Juju file `data` is, by its keys; None for anything else."""
    if not isinstance(data, dict) or "inventory" in data:
        return None
    if isinstance(data.get("applications"), dict):
        return "bundle"
    if isinstance(data.get("services"), dict):
        return "bundle" if "machines" in data else "deployer"
    if data and all(
        isinstance(value, dict) and ("services" in value or "inherits" in value)
        for value in data.values()
    ):
        return "deployer"
    return None


# Cheap signs in the text that a YAML file is a Juju file: its machine ids may be
# unquoted numbers, which a native spec refuses as keys.
_JUJU_TEXT = re.compile(
    r"^(?:applications|machines|services):"
    r"|^[^\s#][^:\n]*:[ \t]*\n(?:[ \t]*(?:#.*)?\n)*[ \t]+services:",
    re.MULTILINE,
)


def looks_like_juju_text(text: str) -> bool:
    return bool(_JUJU_TEXT.search(text[:65536])) and not re.search(
        r"^inventory:", text[:65536], re.MULTILINE
    )


class NotJuju(SpecError):
    """The text is not a Juju file (the automatic reader then tries a native spec)."""


@dataclass
class Status:
    """What already runs: machines (each with its containers) and units with the machine
    or container each is on (None: no machine yet)."""

    machines: dict[str, list[str]] = field(default_factory=dict)
    units: dict[str, dict[str, str | None]] = field(default_factory=dict)


def read_status(text: str, source: str) -> Status:
    """`juju status --format yaml`, unchanged (Juju 1.x says services, 2+ applications)."""
    documents = parse(text, source, any_keys=True)
    problems: list[Problem] = []
    status = Status()
    for data, sources in documents:
        out = Collector(sources, problems)
        if not isinstance(data, dict):
            out.add("expected the mapping `juju status --format yaml` prints", ())
            continue
        machines = data.get("machines") or {}
        if not isinstance(machines, dict):
            out.add("expected a mapping of machine ids", ("machines",))
            machines = {}
        for machine_id, body in machines.items():
            containers = (body or {}).get("containers") if isinstance(body, dict) else None
            status.machines[str(machine_id)] = [
                str(c) for c in (containers or {}) if isinstance(containers, dict)
            ]
        applications = data.get("applications", data.get("services")) or {}
        if not isinstance(applications, dict):
            out.add("expected a mapping of applications", ("applications",))
            applications = {}
        for name, body in applications.items():
            units = (body or {}).get("units") if isinstance(body, dict) else None
            found: dict[str, str | None] = {}
            for unit, where in (units or {}).items() if isinstance(units, dict) else ():
                machine = where.get("machine") if isinstance(where, dict) else None
                found[str(unit)] = str(machine) if machine is not None else None
            status.units[str(name)] = found
    if problems:
        raise SpecError(source, problems)
    return status


@dataclass
class Service:
    name: str
    path: Path
    units: int  # units to add
    existing: list[str]  # units that run already, in numeric order
    entries: list[tuple[Directive, Path]]
    has_to: bool
    constraints: JujuConstraints | None
    subordinate: bool
    series: str | None

    @property
    def first(self) -> int:
        """The number of the first unit to add: after every existing one."""
        return max((unit_number(u) for u in self.existing), default=-1) + 1

    def unit_names(self) -> list[str]:
        """Every unit, existing and to add, in numeric order."""
        return [*self.existing, *(f"{self.name}/{self.first + i}" for i in range(self.units))]


def unit_number(unit: str) -> int:
    tail = unit.rsplit("/", 1)[-1]
    return int(tail) if tail.isdigit() else -1


def _machine_sort_key(machine_id: str) -> tuple[int, str]:
    return (int(machine_id), "") if machine_id.isdigit() else (1 << 62, machine_id)


def read_juju(
    text: str, source: str, status: Status | None = None, style: Style | None = None
) -> list[Spec]:
    """The specs a Juju file describes (one per deployment of a deployer file)."""
    documents = parse(text, source, any_keys=True)
    problems: list[Problem] = []
    specs: list[Spec] = []
    for data, sources in documents:
        out = Collector(sources, problems)
        found = style or juju_style(data)
        if found == "bundle":
            spec = _bundle(data, source, status, out)
            if spec is not None:
                specs.append(spec)
        elif found == "deployer":
            specs.extend(_deployments(data, source, status, out))
        else:
            raise NotJuju(
                source,
                [
                    Problem(
                        "not a Juju file: expected a bundle (applications: or services: "
                        "with machines:) or a juju-deployer file (deployments with "
                        "services:)",
                        position=sources.value(()),
                    )
                ],
            )
    for spec in specs:
        total = sum(w.units for w in spec.workloads)
        if total > MAX_TOTAL_UNITS:
            problems.append(
                Problem(
                    f"{spec.name}: the services ask for {total:,} units together; placed "
                    f"plans at most {MAX_TOTAL_UNITS:,} per file"
                )
            )
    if problems:
        raise SpecError(source, problems)
    return specs


# -- reading the parts ---------------------------------------------------------------


def constraints_of(value: Any, path: Path, out: Collector) -> JujuConstraints | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        out.add(f'constraints are a string such as "cores=8 mem=16G", got {quoted(value)}', path)
        return None
    try:
        return parse_constraints(value)
    except ConstraintError as error:
        out.add_inside(f"invalid constraints: {error}", path, error.column - 1)
        return None


def _count(
    body: dict[str, Any], keys: tuple[str, ...], default: int, path: Path, out: Collector
) -> int:
    for key in keys:
        if key in body:
            value = body[key]
            if type(value) is not int or not 0 <= value <= MAX_UNITS:
                out.add(
                    f"{key} is a whole number from 0 to {MAX_UNITS:,}, got {quoted(value)}",
                    (*path, key),
                )
                return default
            return value
    return default


def _entries(
    value: Any, style: Style, name: str, path: Path, out: Collector
) -> list[tuple[Directive, Path]]:
    """The good entries of a `to:` (each with its place); every bad one is reported, and
    the good ones are still checked, so that all mistakes show at once."""
    listed = value if isinstance(value, list) else [value]
    found: list[tuple[Directive, Path]] = []
    for index, entry in enumerate(listed):
        where = (*path, index) if isinstance(value, list) else path
        try:
            found.append((parse_entry(entry, style), where))
        except DirectiveError as bad:
            text = bad.text or str(entry)
            out.add(f"{name}: to entry {quoted(text)}: {bad.message}", where)
    return found


def _services(
    apps: dict[str, Any], path: Path, style: Style, status: Status | None, out: Collector
) -> dict[str, Service]:
    services: dict[str, Service] = {}
    for name, body in apps.items():
        where = (*path, name)
        if body is None:
            body = {}
        if not isinstance(body, dict):
            out.add(f"a service is a mapping (charm, num_units, to...), got {quoted(body)}", where)
            continue
        existing = sorted((status.units.get(name, {}) if status else {}), key=unit_number)
        if style == "bundle":
            wanted = _count(body, ("num_units",), 0, where, out)
            subordinate = "num_units" not in body or wanted == 0 or body.get("subordinate") is True
        else:
            wanted = _count(body, ("num_units", "units"), 1, where, out)
            subordinate = body.get("subordinate") is True
        has_to = body.get("to") is not None
        series = body.get("series")
        services[name] = Service(
            name=name,
            path=where,
            units=max(0, wanted - len(existing)),
            existing=existing,
            entries=_entries(body.get("to"), style, name, (*where, "to"), out) if has_to else [],
            has_to=has_to,
            constraints=constraints_of(body.get("constraints"), (*where, "constraints"), out),
            subordinate=subordinate,
            series=str(series) if isinstance(series, str) else None,
        )
    return services


def _existing_inventory(status: Status | None, always: tuple[str, ...]) -> list[Location]:
    """Machines that exist (with their containers, as targets beside them)."""
    machines: dict[str, list[str]] = {machine: [] for machine in always}
    if status is not None:
        machines.update(status.machines)
    roots: list[Location] = []
    for machine_id in sorted(machines, key=_machine_sort_key):
        roots.append(Location(machine_id, "machine"))
        for container in machines[machine_id]:
            kind = container.split("/")[1] if container.count("/") == 2 else "lxd"
            roots.append(Location(container, kind))
    return roots


def first_machine(ids: list[str]) -> int:
    return max((int(m) for m in ids if m.isdigit()), default=-1) + 1


def container_base(ids: list[str]) -> dict[str, int]:
    base: dict[str, int] = {}
    for container in ids:
        parts = container.split("/")
        if len(parts) == 3 and parts[2].isdigit():
            key = f"{parts[0]}/{parts[1]}"
            base[key] = max(base.get(key, 0), int(parts[2]) + 1)
    return base


# -- juju-deployer -------------------------------------------------------------------


def _deployments(
    data: dict[str, Any], source: str, status: Status | None, out: Collector
) -> list[Spec]:
    if isinstance(data.get("services"), dict):  # one deployment, without a name
        return [s for s in [_deployment("", data, source, status, out, ())] if s is not None]
    specs = []
    for name in data:
        resolved = _inherited(name, data, (name,), out)
        spec = _deployment(name, resolved, source, status, out, (name,))
        if spec is not None:
            specs.append(spec)
    return specs


def _inherited(name: str, data: dict[str, Any], path: Path, out: Collector) -> dict[str, Any]:
    """A deployment with what it `inherits:` merged in (each service's keys override)."""
    chain: list[str] = []
    current: str | None = name
    while current is not None:
        if current in chain:
            out.add(f"inherits: {' -> '.join([*chain, current])} is a cycle", (*path, "inherits"))
            break
        chain.append(current)
        body = data.get(current)
        if not isinstance(body, dict):
            out.add(f"inherits: no deployment named {quoted(current)}", (*path, "inherits"))
            break
        parent = body.get("inherits")
        if isinstance(parent, list):
            parent = parent[0] if parent else None
        current = parent if isinstance(parent, str) else None
    merged: dict[str, Any] = {"services": {}}
    for part in reversed(chain):
        body = data.get(part)
        if not isinstance(body, dict):
            continue
        for key, value in body.items():
            if key == "services" and isinstance(value, dict):
                for service, config in value.items():
                    base = merged["services"].get(service) or {}
                    merged["services"][service] = (
                        {**base, **config} if isinstance(config, dict) else config
                    )
            elif key != "inherits":
                merged[key] = value
    return merged


def _deployment(
    name: str,
    body: dict[str, Any],
    source: str,
    status: Status | None,
    out: Collector,
    path: Path,
) -> Spec | None:
    apps = body.get("services")
    if not isinstance(apps, dict):
        out.add("a deployment needs services: (a mapping of services)", path)
        return None
    services = _services(apps, (*path, "services"), "deployer", status, out)
    series = body.get("series") if isinstance(body.get("series"), str) else None
    roots = _existing_inventory(status, ("0",))
    machine_ids = [r.id for r in roots if r.kind == "machine"]
    container_ids = [r.id for r in roots if r.kind != "machine"]
    workloads = []
    # juju-deployer places services without `to:` first, then the rest, each by name; a
    # target is never itself placed (nested placement is an error), so this is also an
    # order in which every target comes first.
    for service in sorted(services.values(), key=lambda s: (s.has_to, s.name)):
        if service.subordinate:
            continue
        directed = _deployer_plans(service, services, status, out)
        directed = replace(
            directed,
            series=service.series or series,
            first_machine=first_machine(machine_ids),
            container_base=container_base(container_ids),
        )
        workloads.append(_workload(service, directed))
    return _spec(roots, workloads, source, name or "deployment", status)


def _deployer_plans(
    service: Service, services: dict[str, Service], status: Status | None, out: Collector
) -> Directed:
    plans: dict[str, UnitPlan] = {}
    names = service.unit_names()
    extra: list[str] = []
    for index, (entry, where) in enumerate(service.entries):
        if index >= len(names):
            # No unit to place, but still a mistake to report (an unknown target...).
            extra.append(str(entry))
            _plan(service, entry, index, where, services, status, out, "deployer", {})
            continue
        unit = names[index]
        if unit in service.existing:
            continue  # it runs already
        plan = _at(
            _plan(service, entry, index, where, services, status, out, "deployer", {}), where, out
        )
        if plan is not None:
            plans[unit] = plan
    return Directed(plans, new_machines=True, constraints=service.constraints, extra=tuple(extra))


# -- bundles -------------------------------------------------------------------------


def _bundle(
    data: dict[str, Any], source: str, status: Status | None, out: Collector
) -> Spec | None:
    key = "applications" if isinstance(data.get("applications"), dict) else "services"
    apps = data[key]
    services = _services(apps, (key,), "bundle", status, out)
    declared_raw = data.get("machines") or {}
    if not isinstance(declared_raw, dict):
        out.add("machines: is a mapping of machine ids", ("machines",))
        declared_raw = {}
    roots = _existing_inventory(status, ())
    existing_ids = [r.id for r in roots if r.kind == "machine"]
    # Declared machines are created first, in the natural order of their ids, and take
    # the model's next numbers.
    declared: dict[str, str] = {}
    number = first_machine(existing_ids)
    named = [m for m in declared_raw if str(m).isdigit()]
    for bad in (m for m in declared_raw if not str(m).isdigit()):
        out.add(
            f"machine {quoted(bad)}: a bundle machine id is a number", ("machines", bad), key=True
        )
    for machine in sorted(named, key=int):
        body = declared_raw[machine] or {}
        where: Path = ("machines", machine)
        constraints = (
            constraints_of(body.get("constraints"), (*where, "constraints"), out)
            if isinstance(body, dict)
            else None
        )
        series = body.get("series") if isinstance(body, dict) else None
        if not isinstance(series, str) and isinstance(data.get("series"), str):
            series = data["series"]  # the bundle's default
        properties: dict[str, Property] = {DECLARED: Property(DECLARED, True)}
        if constraints is not None:
            properties[DECLARED_CONSTRAINTS] = Property(DECLARED_CONSTRAINTS, str(constraints))
        if isinstance(series, str):
            properties["series"] = Property("series", series)
        declared[str(machine)] = str(number)
        roots.append(Location(str(number), "machine", properties=properties))
        number += 1
    used: set[str] = set()
    for service in services.values():
        for entry, where in service.entries:
            if isinstance(entry, OnMachine):
                if entry.machine not in declared:
                    out.add(
                        f"{service.name}: to entry {quoted(str(entry))}: machine "
                        f"{entry.machine} is not declared under machines:",
                        where,
                    )
                used.add(entry.machine)
    for machine in declared:
        if machine not in used:
            out.add(
                f"machine {machine} is declared but no application is placed on it",
                ("machines", machine),
                key=True,
            )
    order = _bundle_order(services, out)
    default_series = data.get("series") if isinstance(data.get("series"), str) else None
    container_ids = [r.id for r in roots if r.kind not in ("machine",)]
    workloads = []
    for service in order:
        if service.subordinate:
            if service.has_to:
                out.add(
                    f"{service.name} is a subordinate (no num_units): it runs beside its "
                    "principal and takes no to:",
                    (*service.path, "to"),
                )
            continue
        directed = bundle_plans(service, services, declared, status, out)
        directed = replace(
            directed,
            series=service.series or default_series,
            first_machine=number,
            container_base=container_base(container_ids),
        )
        workloads.append(_workload(service, directed))
    return _spec(roots, workloads, source, "bundle", status)


def _bundle_order(services: dict[str, Service], out: Collector) -> list[Service]:
    """Name order, in passes: each application after every application it names."""
    needs = {
        name: {
            entry.service
            for entry, _ in service.entries
            if isinstance(entry, WithUnit) and entry.service in services
        }
        for name, service in services.items()
    }
    placed: list[str] = []
    remaining = sorted(services)
    while remaining:
        ready = [name for name in remaining if needs[name] <= set(placed)]
        if not ready:
            for name in remaining:
                service = services[name]
                loop = sorted(needs[name] & set(remaining))
                out.add(
                    f"{name}: its to: and {', '.join(loop)}'s form a cycle; each waits for "
                    "the other to be placed",
                    (*service.path, "to"),
                )
            break
        progressed = []
        for name in remaining:
            if needs[name] <= set(placed):
                placed.append(name)
                progressed.append(name)
        remaining = [name for name in remaining if name not in progressed]
    return [services[name] for name in placed]


def bundle_plans(
    service: Service,
    services: dict[str, Service],
    declared: Mapping[str, str] | None,
    status: Status | None,
    out: Collector,
) -> Directed:
    plans: dict[str, UnitPlan] = {}
    names = service.unit_names()
    entries = service.entries
    extra = [str(entry) for entry, _ in entries[len(names) :]]
    counters: dict[str, int] = {}
    # A short list is padded with its last entry when that entry can serve many units
    # (new, kind:new, a bare application name), as Juju does; a machine or an app/N
    # entry serves one, and the units after it get default placement.
    pads = bool(entries) and (
        isinstance(entries[-1][0], NewMachine)
        or (isinstance(entries[-1][0], WithUnit) and entries[-1][0].index is None)
    )
    for index, unit in enumerate(names):
        if index >= len(entries) and not pads:
            break
        entry, where = entries[min(index, len(entries) - 1)]
        if unit in service.existing:
            continue
        plan = _at(
            _plan(
                service, entry, index, where, services, status, out, "bundle", counters, declared
            ),
            where,
            out,
        )
        if plan is not None:
            plans[unit] = plan
    return Directed(
        plans,
        new_machines=True,
        constraints=service.constraints,
        style="bundle",
        extra=tuple(extra),
    )


# -- one entry -----------------------------------------------------------------------


def _at(plan: UnitPlan | None, where: Path, out: Collector) -> UnitPlan | None:
    """The plan with the line and column of its entry (for --portable's errors)."""
    position = out.sources.value(where)
    if plan is None or position is None:
        return plan
    return replace(plan, at=(position.line, position.column))


def _plan(
    service: Service,
    entry: Directive,
    index: int,
    where: Path,
    services: dict[str, Service],
    status: Status | None,
    out: Collector,
    style: Style,
    counters: dict[str, int],
    declared: Mapping[str, str] | None = None,
) -> UnitPlan | None:
    written = str(entry)
    if isinstance(entry, OnMachine):
        machine = entry.machine if declared is None else declared.get(entry.machine)
        if machine is None:
            return None  # reported with the machines section
        return UnitPlan(written, machine=machine, container=entry.container)
    if isinstance(entry, NewMachine):
        return UnitPlan(written, new=True, container=entry.container)
    if isinstance(entry, UnitConstraints):
        return UnitPlan(written, constraints=entry.constraints)
    if isinstance(entry, ProviderPlacement):
        # A unit's own constraint, which (like per-unit constraints) replaces the
        # service's for that unit.
        own = (
            JujuConstraints(zones=(entry.value,))
            if entry.kind == "zone"
            else JujuConstraints(maas_name=entry.value)
        )
        return UnitPlan(written, constraints=own)
    # Beside a unit of another service.
    name = f"{service.name}: to entry {quoted(written)}"
    if entry.service == service.name:
        out.add(f"{name}: a service cannot be placed beside itself (a cycle)", where)
        return None
    target = services.get(entry.service)
    running = status.units.get(entry.service) if status is not None else None
    if target is None and not running:
        known = ", ".join(sorted(services)) or "none"
        out.add(f"{name}: no service named {quoted(entry.service)} (services: {known})", where)
        return None
    if target is not None and target.subordinate:
        out.add(
            f"{name}: {entry.service} is a subordinate; it has no machine of its own to "
            "place beside",
            where,
        )
        return None
    if style == "deployer" and target is not None and target.has_to:
        targets = ", ".join(str(e) for e, _ in target.entries) or "its to:"
        out.add(
            f"{name}: nested placement: {entry.service} has its own to: ({targets}), and "
            f"juju-deployer places no unit beside a unit that is itself placed "
            f"({service.name} -> {entry.service} -> ...)",
            where,
        )
        return None
    units = target.unit_names() if target is not None else sorted(running or {}, key=unit_number)
    if style == "deployer":
        ordinal = entry.index if entry.index is not None else index
        if ordinal >= len(units):
            return UnitPlan(
                written,
                container=entry.container,
                fallback=f"{entry.service} has {len(units)} unit{'s' if len(units) != 1 else ''}, "
                f"none with index {ordinal}",
                fallback_code="fewer-target-units",
            )
        return UnitPlan(written, beside=units[ordinal], container=entry.container)
    if entry.index is not None:
        wanted = f"{entry.service}/{entry.index}"
        if wanted not in units:
            return UnitPlan(
                written,
                container=entry.container,
                fallback=f"{entry.service} has no unit {wanted}",
                fallback_code="fewer-target-units",
            )
        return UnitPlan(written, beside=wanted, container=entry.container)
    position = counters.get(entry.service, 0)
    counters[entry.service] = position + 1
    if position >= len(units):
        return UnitPlan(
            written,
            container=entry.container,
            fallback=f"{entry.service} has {len(units)} unit{'s' if len(units) != 1 else ''}, "
            f"all taken by earlier units of {service.name}",
            fallback_code="fewer-target-units",
        )
    return UnitPlan(written, beside=units[position], container=entry.container)


def _workload(service: Service, directed: Directed) -> Workload:
    return Workload(
        name=service.name,
        units=service.units,
        mode="allocation",
        requests=(directed,),
        first=service.first,
    )


def _spec(
    roots: list[Location],
    workloads: list[Workload],
    source: str,
    name: str,
    status: Status | None,
) -> Spec:
    known = {root.id for root in roots}
    running = tuple(
        Running(app, unit, machine)
        for app, units in (status.units.items() if status is not None else ())
        for unit, machine in sorted(units.items(), key=lambda pair: unit_number(pair[0]))
        if machine is not None and machine in known
    )
    return Spec(
        Inventory.from_roots(tuple(roots)), tuple(workloads), Settings(), source, name, running
    )


def non_portable(specs: list[Spec]) -> list[Problem]:
    """Directives that name a machine other than 0 (deployer style), as errors: what
    `placed validate --portable` refuses, as the charm store's validation would."""
    problems = []
    for spec in specs:
        for workload in spec.workloads:
            directed = workload.request(Directed)
            if directed is None or directed.style != "deployer":
                continue
            for unit, plan in directed.units.items():
                if plan.machine is not None and plan.machine != "0":
                    problems.append(
                        Problem(
                            f"{workload.name}: to entry {quoted(plan.written)} ({unit}) names "
                            f"machine {plan.machine}; only machine 0 is portable across "
                            "environments",
                            position=SourcePosition(*plan.at) if plan.at else None,
                        )
                    )
    return problems


def load_status(path: str) -> Status:
    """A `juju status --format yaml` file (raises SpecError)."""
    try:
        text = read_bounded(path, path)
    except FileNotFoundError:
        raise SpecError(path, [Problem("no such file")]) from None
    except OSError as error:
        raise SpecError(path, [Problem(f"cannot read: {error.strerror or error}")]) from None
    return read_status(text, path)
