"""Seed 000: Juju placement directives (`to:`), as one filter and a fallback.

Each unit of a directed workload has a plan read from its `to:` entry: a machine, the
machine (or container) that holds another unit ("hulk smash"), a new container there, a
new machine, or nothing (default placement). The filter keeps the one target the plan
names, reading the plan state (where the other unit landed, what was created for this
unit); when the plan asks for something that does not exist yet, it keeps nothing and the
family's fallback creates it (a machine numbered as Juju would, a container named
`1/lxc/0`), after which the unit is judged again and lands there.

Default placement is a new machine per unit in a Juju file (Juju's behaviour) and the
normal pipeline over existing targets in a native spec, filtered by the Juju
constraints. A directive that cannot be honoured (the target unit has no machine yet)
falls back to default placement with a warning, never an error.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar, Self

import numpy as np

from placed.model import CONTAINER_KINDS, Notice, Property, Spec, TagRules, Target, Workload
from placed.model.juju_constraints import JujuConstraints
from placed.policy.base import (
    BoolArray,
    Bound,
    Codes,
    Created,
    Family,
    FamilyState,
    Filter,
    IndexView,
    PlanView,
    Reason,
    World,
)
from placed.policy.builtins import node_columns, node_properties
from placed.policy.expressions import parse_constraint
from placed.policy.expressions.evaluate import satisfied

MACHINE = "machine"
# Properties of a machine a bundle declares (made first, before any unit): that it is one,
# and the constraints it is declared with.
DECLARED = "juju.declared"
DECLARED_CONSTRAINTS = "juju.constraints"


class Numbering(FamilyState):
    """The family's plan state: the next number of each named sequence (new machines,
    containers per host and kind), each number handed out once."""

    def __init__(self, sequences: dict[str, int]) -> None:
        self._sequences = sequences

    @classmethod
    def start(cls, plan: PlanView) -> Self:
        return cls({})

    def copy(self) -> Self:
        return type(self)(dict(self._sequences))

    def next_number(self, sequence: str, start: int) -> int:
        """The next number of a sequence that begins at `start`."""
        number = max(start, self._sequences.get(sequence, start))
        self._sequences[sequence] = number + 1
        return number


@dataclass(frozen=True, slots=True)
class UnitPlan:
    """Where one unit is asked to go, read from its `to:` entry."""

    written: str  # the entry as the file has it ("lxc:wordpress=2"), for messages
    machine: str | None = None  # on this machine
    beside: str | None = None  # where this other unit is (its machine or container)
    new: bool = False  # on a new machine
    container: str | None = None  # in a new container of this kind, on that machine
    constraints: JujuConstraints | None = None  # this unit's own (or its zone=, maas=)
    # Known when the file was read: why the unit gets default placement instead.
    fallback: str = ""
    fallback_code: str = ""
    at: tuple[int, int] | None = None  # (line, column) of the entry in its file


@dataclass(frozen=True, slots=True)
class Directed:
    """A workload's placement directives, one plan per unit key; a unit without one gets
    default placement."""

    units: Mapping[str, UnitPlan]
    new_machines: bool  # default placement: a new machine per unit (a Juju file)
    constraints: JujuConstraints | None = None  # the service's
    series: str | None = None
    style: str = "deployer"
    first_machine: int = 0  # new machines are numbered from here
    # Next container number per "host/kind" (after those that exist already).
    container_base: Mapping[str, int] = field(default_factory=dict)
    extra: tuple[str, ...] = ()  # entries past the last unit
    notes: tuple[tuple[str, str], ...] = ()  # (code, message): what the reader could not tell


def directed_of(workload: Workload) -> Directed | None:
    found = workload.request(Directed)
    return found if isinstance(found, Directed) else None


def creates_targets(workload: Workload) -> bool:
    """Whether the workload's units get targets made for them when none fits (a Juju
    file's default placement: a new machine each), so that no existing target being
    compatible is no failure."""
    directed = directed_of(workload)
    return directed is not None and directed.new_machines


def host_of(target: Target) -> str:
    """The machine a target is on: itself, or the machine a container sits on."""
    if target.kind in CONTAINER_KINDS:
        for kind, location_id in target.ancestors:
            if kind == MACHINE:
                return location_id
        return target.id.split("/", 1)[0]
    return target.id


def constraint_terms(constraints: JujuConstraints) -> list[str]:
    """Juju constraints as constraint expressions over a target's properties: sizes are
    minimums, the rest equalities or memberships. Tags are the target's tags, zones its
    zone, maas-name its id."""
    terms: list[str] = []
    if constraints.arch:
        terms.append(f'arch == "{constraints.arch}"')
    for name, value in (
        ("cores", constraints.cores),
        ("cpu-power", constraints.cpu_power),
        ("mem", constraints.mem),
        ("root-disk", constraints.root_disk),
    ):
        if value is not None:
            terms.append(f"{name} >= {value}")
    for name, text in (
        ("instance-type", constraints.instance_type),
        ("virt-type", constraints.virt_type),
    ):
        if text:
            terms.append(f'{name} == "{text}"')
    if constraints.zones:
        terms.append(" || ".join(f'placed.zone == "{zone}"' for zone in constraints.zones))
    if constraints.maas_name:
        terms.append(f'placed.id == "{constraints.maas_name}"')
    return terms


def fits(constraints: JujuConstraints | None, target: Target) -> bool:
    """Whether one existing target meets Juju constraints (the one-target rule)."""
    if constraints is None:
        return True
    terms = constraint_terms(constraints)
    if terms and not satisfied(parse_constraint(terms), node_properties(target)):
        return False
    return set(constraints.tags_included) <= target.tags and not (
        set(constraints.tags_excluded) & target.tags
    )


# What a unit's plan resolves to in the plan state.
ANY = -1  # the normal pipeline (default placement in a native spec)
CREATE = -2  # a target to create for the unit (nothing is kept until it exists)


@dataclass(frozen=True, slots=True)
class Resolved:
    position: int  # a target position, ANY or CREATE
    plan: UnitPlan | None  # the plan followed; None: default placement
    host: str | None = None  # for a container: the machine it goes on


def unit_plan(directed: Directed, unit: str | None) -> UnitPlan | None:
    return directed.units.get(unit) if unit is not None else None


def constraints_for(directed: Directed, plan: UnitPlan | None) -> JujuConstraints | None:
    """A unit's own constraints, else its service's (the seed's third wordpress unit)."""
    if plan is not None and plan.constraints is not None:
        return plan.constraints
    return directed.constraints


def resolve(workload: Workload, directed: Directed, state: PlanView) -> Resolved:
    """Where the unit being judged goes, as far as the plan state tells. A directive that
    cannot be honoured now (its unit has no machine yet) reports a warning and falls back
    to default placement. Says how, for the placement's reason."""
    unit = state.judging
    resolved, note = _resolve(workload, directed, state, unit)
    if unit is not None:
        via = (
            "directive"
            if resolved.plan is not None and not resolved.plan.fallback
            else ("new-machine" if directed.new_machines else "policy")
        )
        state.annotate(unit, via, note)
    return resolved


def _resolve(
    workload: Workload, directed: Directed, state: PlanView, unit: str | None
) -> tuple[Resolved, str]:
    plan = unit_plan(directed, unit)
    if plan is not None and not plan.fallback:
        made = state.created_for(unit) if unit is not None else None
        written = f"to {plan.written}"
        if plan.beside is not None:
            position = state.where(plan.beside)
            if position is None:
                why = f"{plan.beside} has no machine yet"
                state.notice(
                    Notice(
                        "directive-fallback",
                        f"to {plan.written}: {why}, so it gets {_default(directed)}",
                        workload=workload.name,
                        unit=unit,
                    )
                )
                return _default_resolution(directed, state, unit), f"{written} fell back: {why}"
            there = state.target(position)
            if plan.container is None:
                # Hulk smash: the very machine (or container) that holds the other unit.
                return Resolved(
                    position, plan
                ), f"{written}: beside {plan.beside} on {_where(there)}"
            host = host_of(there)
            return (
                Resolved(made if made is not None else CREATE, plan, host),
                f"{written}: a new {plan.container} container on machine {host}, beside "
                f"{plan.beside}",
            )
        if plan.machine is not None:
            position = state.position(plan.machine)
            if plan.container is None and position is not None:
                added = " (added: it did not exist)" if position == made else ""
                return Resolved(position, plan), f"{written}: machine {plan.machine}{added}"
            what = (
                f"a new {plan.container} container on machine {plan.machine}"
                if plan.container
                else f"machine {plan.machine}, added"
            )
            return Resolved(made if made is not None else CREATE, plan, plan.machine), (
                f"{written}: {what}"
            )
        if plan.new:
            what = (
                f"a new {plan.container} container on a new machine"
                if plan.container
                else ("a new machine")
            )
            return Resolved(made if made is not None else CREATE, plan), f"{written}: {what}"
    resolved = _default_resolution(directed, state, unit, plan)
    if plan is not None and plan.fallback:
        return resolved, f"to {plan.written} fell back: {plan.fallback}"
    own = plan is not None and plan.constraints is not None
    constraints = constraints_for(directed, plan)
    whose = "its own" if own else "the service's"
    if not directed.new_machines:
        with_constraints = f" with {whose} constraints {constraints}" if constraints else ""
        return resolved, (f"to {plan.written}: " if own and plan else "") + (
            f"default placement{with_constraints}"
        )
    with_constraints = f" with {whose} constraints {constraints}" if constraints else ""
    lead = f"to {plan.written}: " if own and plan else "no to: entry: "
    return resolved, f"{lead}a new machine{with_constraints}"


def _where(target: Target) -> str:
    kind = "container" if target.kind in CONTAINER_KINDS else "machine"
    return f"{kind} {target.id}"


def _default(directed: Directed) -> str:
    return "a new machine" if directed.new_machines else "default placement"


def _default_resolution(
    directed: Directed, state: PlanView, unit: str | None, plan: UnitPlan | None = None
) -> Resolved:
    kept = plan if plan is not None and plan.constraints is not None else None
    if not directed.new_machines:
        return Resolved(ANY, kept)
    made = state.created_for(unit) if unit is not None else None
    # A plan that fell back keeps only its constraints, not its container (Juju gives a
    # plain new machine).
    if kept is not None and (kept.container or kept.beside or kept.machine):
        kept = UnitPlan(kept.written, constraints=kept.constraints)
    return Resolved(made if made is not None else CREATE, kept)


class _Columns:
    """Juju constraints over the index's targets, evaluated once per distinct set."""

    def __init__(self, targets: list[Target] | tuple[Target, ...]) -> None:
        self.size = len(targets)
        self.columns = node_columns(targets)
        self.tags: dict[str, list[int]] = {}
        for position, target in enumerate(targets):
            for tag in target.tags:
                self.tags.setdefault(tag, []).append(position)
        self._masks: dict[JujuConstraints, BoolArray] = {}
        # Per constraint set, the created targets judged so far: (how many, the last of
        # them, their verdicts).
        self._created: dict[JujuConstraints, tuple[int, Target | None, BoolArray]] = {}

    def mask(self, constraints: JujuConstraints) -> BoolArray:
        found = self._masks.get(constraints)
        if found is None:
            terms = constraint_terms(constraints)
            found = (
                self.columns.satisfied(parse_constraint(terms))
                if terms
                else np.ones(self.size, dtype=bool)
            )
            for tag in constraints.tags_included:
                has = np.zeros(self.size, dtype=bool)
                has[self.tags.get(tag, [])] = True
                found = found & has
            for tag in constraints.tags_excluded:
                found = found.copy()
                found[self.tags.get(tag, [])] = False
            self._masks[constraints] = found
        return found

    def mask_in(self, constraints: JujuConstraints, state: PlanView) -> BoolArray:
        """The mask over every target of the plan state: the index's from the columns,
        each created target judged once (a fork that created others, judged anew)."""
        base = self.mask(constraints)
        if state.size == base.size:
            return base
        count, last, verdicts = self._created.get(constraints, (0, None, np.zeros(0, bool)))
        if count and (
            count > state.size - base.size or state.target(base.size + count - 1) is not last
        ):
            count, verdicts = 0, np.zeros(0, bool)
        fresh = [state.target(p) for p in range(base.size + count, state.size)]
        verdicts = np.concatenate([verdicts, np.array([fits(constraints, t) for t in fresh], bool)])
        self._created[constraints] = (
            state.size - base.size,
            state.target(state.size - 1),
            verdicts,
        )
        return np.concatenate([base, verdicts])


class Directive(Filter):
    """A unit goes where its `to:` entry says, or by default placement."""

    name = "directive"
    summary = (
        "not where the unit's `to:` directive puts it (a machine, beside another unit, a "
        "new machine or container), or fails its Juju constraints"
    )
    needs = Directed

    def __init__(self, targets: list[Target] | tuple[Target, ...]) -> None:
        self.targets = targets
        self._columns: _Columns | None = None

    def columns(self) -> _Columns:
        if self._columns is None:
            self._columns = _Columns(self.targets)
        return self._columns

    def prepare(self, workload: Workload) -> tuple[Workload, Directed] | None:
        directed = directed_of(workload)
        return (workload, directed) if directed is not None else None

    def keep(self, prepared: tuple[Workload, Directed], state: PlanView) -> BoolArray:
        workload, directed = prepared
        if state.judging is None and directed.new_machines:
            # The workload as a whole (placed check): the existing machines its units
            # are directed to; the others get targets made for them.
            mask = np.zeros(state.size, dtype=bool)
            for plan in directed.units.values():
                position = state.position(plan.machine) if plan.machine else None
                if position is not None and plan.container is None and not plan.fallback:
                    mask[position] = True
            return mask
        resolved = resolve(workload, directed, state)
        if resolved.position == ANY:
            constraints = constraints_for(directed, resolved.plan)
            if constraints is None:
                return np.ones(state.size, dtype=bool)
            return self.columns().mask_in(constraints, state)
        mask = np.zeros(state.size, dtype=bool)
        if resolved.position >= 0:
            mask[resolved.position] = True
        return mask

    def reason(self, workload: Workload, target: Target, position: int, state: PlanView) -> Reason:
        directed = directed_of(workload)
        assert directed is not None
        return self._why(workload, directed, resolve(workload, directed, state), state)

    def phrases(self, workload: Workload, positions: Codes, state: PlanView) -> Codes:
        # The words name where the unit being judged goes, never the target rejected.
        return np.zeros(positions.size, dtype=np.intp)

    def _why(
        self, workload: Workload, directed: Directed, resolved: Resolved, state: PlanView
    ) -> Reason:
        unit = state.judging or workload.name
        plan = resolved.plan
        written = f"to {plan.written}" if plan is not None else "no directive"
        if resolved.position == ANY:
            constraints = constraints_for(directed, plan)
            return Reason(
                self.name,
                f"fails Juju constraints {constraints}",
                f"fail Juju constraints {constraints}",
            )
        if resolved.position == CREATE:
            what = (
                f"a new {plan.container} container"
                if plan and plan.container
                else ("a new machine")
            )
            return Reason(
                self.name,
                f"is not {what}, which {unit} asks for",
                f"are not {what}, which {unit} asks for",
                written,
            )
        there = state.target(resolved.position).id
        return Reason(
            self.name,
            f"is not {there}, where {unit} is directed",
            f"are not {there}, where {unit} is directed",
            written,
        )

    def judge(self, workload: Workload, target: Target, world: World) -> Reason | None:
        directed = directed_of(workload)
        if directed is None:
            return None
        unit = world.judging
        plan = unit_plan(directed, unit)
        made = world.created_for(unit) if unit is not None else None
        wanted: Target | None = None
        if plan is not None and not plan.fallback:
            if plan.beside is not None:
                holder = world.where(plan.beside)
                if holder is not None:
                    wanted = holder if plan.container is None else made
                    return _only(self.name, target, wanted, unit, plan)
            elif plan.machine is not None:
                if plan.container is None and target.id == plan.machine:
                    return None
                if plan.container is None:
                    return _only(self.name, target, made, unit, plan)
                return _only(self.name, target, made, unit, plan)
            elif plan.new:
                return _only(self.name, target, made, unit, plan)
        if directed.new_machines:
            return _only(self.name, target, made, unit, plan)
        constraints = constraints_for(directed, plan)
        if fits(constraints, target):
            return None
        return Reason(
            self.name,
            f"fails Juju constraints {constraints}",
            f"fail Juju constraints {constraints}",
        )


def _only(
    name: str, target: Target, wanted: Target | None, unit: str | None, plan: UnitPlan | None
) -> Reason | None:
    if wanted is not None and target.id == wanted.id:
        return None
    written = f"to {plan.written}" if plan is not None else "no directive"
    there = wanted.id if wanted is not None else "a target to create"
    return Reason(
        name,
        f"is not {there}, where {unit} is directed",
        f"are not {there}, where {unit} is directed",
        written,
    )


class Directives(Family):
    """Seed 000: Juju's per-unit placement directives and default placement."""

    name = "directives"
    seed = "000"
    filter_types: ClassVar[tuple[type[Filter], ...]] = (Directive,)

    def bind(self, index: IndexView) -> Bound:
        return Bound(filters=(Directive(tuple(index.targets)),))

    def lint(self, spec: Spec) -> list[Notice]:
        notices: list[Notice] = []
        for workload in spec.workloads:
            directed = directed_of(workload)
            if directed is None:
                continue
            for unit, plan in directed.units.items():
                if plan.fallback:
                    notices.append(
                        Notice(
                            plan.fallback_code or "directive-fallback",
                            f"to {plan.written}: {plan.fallback}, so it gets {_default(directed)}",
                            workload=workload.name,
                            unit=unit,
                        )
                    )
                if directed.style == "deployer" and plan.machine not in (None, "0"):
                    notices.append(
                        Notice(
                            "non-portable-machine",
                            f"to {plan.written} names machine {plan.machine}; only machine 0 "
                            "is portable across environments",
                            workload=workload.name,
                            unit=unit,
                        )
                    )
            notices.extend(
                Notice(code, message, workload=workload.name) for code, message in directed.notes
            )
            if directed.extra:
                notices.append(
                    Notice(
                        "extra-directives",
                        f"{workload.name} has {workload.units} unit"
                        f"{'s' if workload.units != 1 else ''} and more `to:` entries; "
                        f"ignored: {', '.join(directed.extra)}",
                        workload=workload.name,
                    )
                )
        return notices

    def fallback(
        self, workload: Workload, unit: str, state: PlanView, created: int
    ) -> Created | None:
        directed = directed_of(workload)
        if directed is None:
            return None
        resolved = resolve(workload, directed, state)
        if resolved.position != CREATE:
            return None
        plan = resolved.plan
        constraints = constraints_for(directed, plan)
        if plan is not None and plan.container is not None:
            host = resolved.host
            before: tuple[Target, ...] = ()
            if host is None:  # lxd:new: a new machine, and the container on it
                machine = _machine(self._machine_id(directed, state), constraints, directed)
                host, before = machine.id, (machine,)
            elif (on := state.position(host)) is None:  # a named machine not made yet
                before = (_machine(host, None, directed),)
            elif not state.up[on]:
                return None  # no container on a failed machine (a what-if's down host)
            container = _container(host, plan.container, directed, state)
            # bundlechanges gives a new container (and the new machine of lxd:new) the
            # application's constraints (handlers.go addNewMachine, addContainer).
            return Created(
                container, str(constraints or ""), via="directive", parent=host, before=before
            )
        if plan is not None and plan.machine is not None:
            # A machine a directive names that does not exist: placed adds it.
            return Created(_machine(plan.machine, None, directed), "", via="directive")
        machine = _machine(self._machine_id(directed, state), constraints, directed)
        via = "directive" if plan is not None and plan.new else "new-machine"
        return Created(machine, str(constraints or ""), via=via)

    @staticmethod
    def _machine_id(directed: Directed, state: PlanView) -> str:
        while True:
            numbering = state.family_state(Numbering)
            number = str(numbering.next_number(MACHINE, directed.first_machine))
            if state.position(number) is None:
                return number


def _machine(machine_id: str, constraints: JujuConstraints | None, directed: Directed) -> Target:
    """A machine made during the plan, carrying what it was made to satisfy."""
    properties: dict[str, Property] = {}
    tags: frozenset[str] = frozenset()
    if constraints is not None:
        for name, value in (
            ("arch", constraints.arch),
            ("instance-type", constraints.instance_type),
            ("virt-type", constraints.virt_type),
        ):
            if value:
                properties[name] = Property(name, value)
        for name, amount in (
            ("cores", constraints.cores),
            ("cpu-power", constraints.cpu_power),
            ("mem", constraints.mem),
            ("root-disk", constraints.root_disk),
        ):
            if amount is not None:
                properties[name] = Property(name, float(amount))
        tags = frozenset(constraints.tags_included)
    if directed.series:
        properties["series"] = Property("series", directed.series)
    return Target(machine_id, MACHINE, tags, properties, TagRules(), {}, True)


def _container(host: str, kind: str, directed: Directed, state: PlanView) -> Target:
    while True:
        number = state.family_state(Numbering).next_number(
            f"{host}/{kind}", directed.container_base.get(f"{host}/{kind}", 0)
        )
        container_id = f"{host}/{kind}/{number}"
        if state.position(container_id) is None:
            break
    return Target(
        container_id, kind, frozenset(), {}, TagRules(), {}, True, ancestors=((MACHINE, host),)
    )
