"""Plan on the rows and commit the outcome: the one path every change takes.

A change reads the world (store/world.py), says what it becomes (store/merge.py for
applied documents, an admin state for down and up), plans it with the same engine
functions as the CLI (`Planner.plan`, `simulate`), and commits the difference
(store/definitions.py, store/claims.py) in one transaction: `transact` hands the plan
to operations/transactions.py, which plans again on fresh rows when someone else
changed them first, and plans its last try under the revision row's lock, so a claim is
refused only when nothing fits, never because others were faster.
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from placed.collector import without_cycle_collection
from placed.engine import fit
from placed.engine.outcomes import Placement, PlanResult
from placed.engine.planner import Planner
from placed.engine.rebalance import Simulation
from placed.engine.report import Explainer
from placed.engine.state import PlanState
from placed.model import Spec, Target
from placed.operations import audit, change_scope, pointers, transactions
from placed.operations.errors import Conflict, Contended, Invalid, SpecPlace
from placed.operations.store import Store
from placed.policy.dedication import tenant_of
from placed.spec import SpecError
from placed.spec.load import load_spec_data
from placed.store.claims import MOVED, PLACED, REMOVED, UNPLACED, Actor, Extra, Move
from placed.store.events import Recorded
from placed.store.world import Snapshot, TargetRow

WORLD = "store"  # the world's name in a problem about it
INCOMPATIBLE = "unit.incompatible"
FEWER_UNITS = "its workload has fewer units, or its target no longer takes it"


@dataclass
class Prepared:
    """A change, planned: the world after it, and what to write."""

    after: Snapshot
    spec: Spec
    planner: Planner
    result: PlanResult
    moves: list[Move]
    used: dict[str, dict[str, float]]
    extra: list[Extra] = field(default_factory=list)
    simulation: Simulation | None = None
    data: dict[str, Any] = field(default_factory=dict)  # what the change's caller needs
    # The targets the plan made (Juju's new machines), each with the workload it was
    # made for: the scope rule counts them as that workload's.
    made_for: dict[str, str] = field(default_factory=dict)
    # The only workloads `after` may define otherwise than the world before it: a live
    # world's delta knows them, and the writer, the scope rule and the audit trail then
    # compare those alone (None: every workload).
    workloads: frozenset[str] | None = None

    @property
    def waiting(self) -> int:
        """Units the world after it leaves waiting for room."""
        return len(self.result.unplaced)


@dataclass
class Committed:
    prepared: Prepared
    revision: int
    events: list[Recorded]
    conflicts: int


@dataclass(frozen=True)
class Focus:
    """Where the request's body holds the workloads it carries (name -> JSON pointer), and
    how to find a pointer's line and column in the body (a YAML file's): a problem of such
    a workload in the world is reported against the body, not against the world document
    the request never sent."""

    workloads: Mapping[str, str]
    locate: Callable[[str], tuple[int, int] | None] | None = None
    # The pointers are the workloads as wholes (a Juju file's applications): the world's
    # pointer inside one names no key of the body, so the problem points at the whole.
    whole: bool = False

    @classmethod
    def one(cls, name: str, pointer: str = "") -> Focus:
        return cls({name: pointer})


_WORLD_WORKLOAD = re.compile(r"/workloads/(\d+)(?=/|$)")


def world_spec(snapshot: Snapshot, focus: Focus | None = None) -> Spec:
    """The snapshot as the engine's spec, read through the spec's own schema, its targets
    in the order they were stored (their rows' ids): a target added later comes after
    every other, wherever the tree holds it, so that a live world takes it in by
    appending it to its columns (positions and topology codes of the others stay). A
    world applied from one file stores its targets in the file's order: the same order
    a plan of the file has."""
    document = snapshot.document(WORLD)
    try:
        spec = load_spec_data(document, WORLD)
    except SpecError as error:
        names = list(snapshot.workloads)
        errors = [
            _owned(e, names, document, snapshot, focus)
            for e in pointers.spec_places(error, document)[:50]
        ]
        count = len(error.problems)
        # The problems are the errors' (each with its pointer), as a spec's are: the
        # detail counts them rather than saying each twice.
        raise Invalid(
            f"the change would leave a world placed cannot plan: {count} problem"
            + ("s" if count != 1 else ""),
            "invalid-world",
            errors,
        ) from None
    return stored_order(spec, snapshot)


def stored_order(spec: Spec, snapshot: Snapshot) -> Spec:
    """`spec` with its inventory's targets in the order of their rows' ids; those not
    stored yet (id 0) last, in the order the store will give them ids (the snapshot's,
    store/definitions.py)."""
    targets = spec.inventory.targets
    rows = snapshot.targets
    rank = {name: k for k, name in enumerate(rows)}
    last = len(targets)

    def stored_id(position: int) -> tuple[int, int]:
        name = targets[position].id
        row = rows.get(name)
        return (row.id if row is not None and row.id else 1 << 62, rank.get(name, position))

    order = sorted(range(last), key=stored_id)
    if order == list(range(last)):
        return spec
    inventory = dataclasses.replace(spec.inventory, targets=tuple(targets[p] for p in order))
    return dataclasses.replace(spec, inventory=inventory)


def _owned(
    error: SpecPlace,
    names: list[str],
    document: Mapping[str, Any],
    snapshot: Snapshot,
    focus: Focus | None,
) -> SpecPlace:
    """`error` naming the document that defined what it is about (a workload, or a location
    or target of the inventory). A workload the request carries is pointed at in its body
    (`focus`); one stored before keeps the world document's pointer, which is no place in
    any file its caller has, so its detail names it."""
    parts = str(error.pointer).split("/")[1:]
    if len(parts) >= 2 and parts[0] == "workloads" and parts[1].isdigit():
        index = int(parts[1])
        if index >= len(names):
            return error
        defined_by = snapshot.workloads[names[index]].document
        owned = replace(error, defined_by=defined_by, owned=True)
        found = _refocused(owned, names, focus) if focus is not None else owned
        if found is owned:
            of = f" of document {defined_by!r}" if defined_by is not None else ""
            found = replace(found, detail=f"workload {names[index]!r}{of}: {error.detail}")
        return found
    owner: str | None = None
    node: Any = document
    for part in parts:
        if isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        elif isinstance(node, dict):
            node = node.get(part)
        else:
            break
        if isinstance(node, dict) and str(node.get("id")) in snapshot.node_documents:
            owner = snapshot.node_documents[str(node["id"])]
    return replace(error, defined_by=owner, owned=True) if owner is not None else error


def _refocused(error: SpecPlace, names: list[str], focus: Focus) -> SpecPlace:
    found = _WORLD_WORKLOAD.match(str(error.pointer))
    if found is None or int(found[1]) >= len(names):
        return error
    carried = focus.workloads.get(names[int(found[1])])
    if carried is None:
        return error  # a workload the request did not send: the world's pointer stays
    pointer = carried if focus.whole else carried + str(error.pointer)[found.end() :]
    where = focus.locate(pointer) if focus.locate is not None else None
    if where is None:
        return replace(error, pointer=pointer)
    return replace(error, pointer=pointer, line=where[0], column=where[1])


def usage(planner: Planner, state: PlanState, after: Snapshot) -> dict[str, dict[str, float]]:
    """What each target uses once the plan is done: its capacity less what is free, for
    the resources it has."""
    free = state.free
    position = planner.index.position
    rows = {name: row for row, name in enumerate(planner.index.resources)}
    used: dict[str, dict[str, float]] = {}
    for name, target in after.targets.items():
        at = position.get(name)
        if at is None:
            continue
        used[name] = {
            resource: max(0.0, amount - float(free[rows[resource], at]))
            for resource, amount in target.capacity.items()
            if resource in rows
        }
    return used


def plan(
    before: Snapshot,
    after: Snapshot,
    again: Mapping[str, list[str]] | None = None,
    focus: Focus | None = None,
) -> Prepared:
    """Plan `after` from scratch (what runs stays; mapping and every-mode units are
    derived again) and diff it against `before`. The change is re-evaluated in the same
    plan (SERVICE.md, "Changes re-evaluate"): an every-mode unit its target no longer
    takes is removed with the rule that rejects it, a unit that stays on its target but
    runs there differently (an edge cluster's namespace) is moved in place, and an
    allocation unit that no longer fits stays, with a `unit.incompatible` event naming
    the rule. `again`: units (by workload) to place again (`replace`)."""
    spec = world_spec(after, focus)
    planner = Planner(spec)
    misfits: list[fit.Misfit] = []
    leaving = frozenset(unit for units in (again or {}).values() for unit in units)
    state = planner.initial_state(leaving, fit.collector(planner, misfits))
    result = planner.plan(state, again=again)
    explainer = Explainer(spec, planner.families, [c.target for c in state.created])
    final: dict[str, tuple[str, str | None, str]] = {}
    for running in spec.running:
        how = "runs there" if running.unit in before.placements else "runs there (running:)"
        final[running.unit] = (running.workload, running.target, how)
    for outcome in result.outcomes:
        if isinstance(outcome, Placement):
            final[outcome.unit] = (outcome.workload, outcome.target, explainer.reason(outcome))
        else:
            final[outcome.unit] = (outcome.workload, None, outcome.summary)
    made_for = _keep_created(after, state)
    implicit_dedications(after, planner, result, final)
    earlier = _Earlier(before)
    moves = [explained(move, planner, state) for move in diff(before, final)]
    moves.extend(_redeployed(before, after, final, planner, earlier))
    used = usage(planner, state, after)
    _within_capacity(after, used)
    prepared = Prepared(after, spec, planner, result, moves, used, made_for=made_for)
    fresh = _new_misfits(misfits, earlier)
    prepared.extra.extend(
        Extra(
            INCOMPATIBLE,
            misfit.unit,
            target=misfit.target,
            workload=misfit.workload,
            account=after.workloads[misfit.workload].account
            if misfit.workload in after.workloads
            else None,
            details={**misfit.to_dict(), "stays": True},
        )
        for misfit in fresh
    )
    told = set(fresh)
    prepared.data["incompatible"] = [{**m.to_dict(), "new": m in told} for m in misfits]
    return prepared


def implicit_entry(resource: str, domain: str, account: str | None) -> dict[str, Any]:
    """A host given to an account by implicit dedication, as a `dedications:` entry (the
    rows' form: store/world.py)."""
    return {"resource": resource, "domain": domain, "account": account, "implicit": True}


def implicit_dedications(
    after: Snapshot,
    planner: Planner,
    result: PlanResult,
    final: Mapping[str, tuple[str, str | None, str]],
) -> None:
    """The implicit dedications `after` holds once the plan is done, as rows: those the
    plan made (an empty host an account's dedicated VM took), and those a dedicated VM of
    the owner's account still runs on; one whose host's last such VM left is released.
    Neither the setting nor a location's says otherwise: turning implicit dedication off
    stops new ones, and a host keeps its dedication until its VMs leave, as CloudStack's
    does."""
    held: dict[str, set[str]] = defaultdict(set)  # host -> accounts of dedicated VMs there
    for workload_name, target, _ in final.values():
        workload = planner.workloads.get(workload_name) if target is not None else None
        tenant = tenant_of(workload) if workload is not None else None
        if target is not None and tenant is not None and tenant.dedicated:
            held[target].add(tenant.account)
    kept = [
        entry
        for entry in after.dedications
        if not entry.get("implicit") or entry.get("account") in held.get(entry["resource"], ())
    ]
    present = {entry["resource"] for entry in kept}
    for made in result.dedications_created:
        if made.implicit and made.resource not in present and made.account in held[made.resource]:
            kept.append(implicit_entry(made.resource, made.domain, made.account))
            present.add(made.resource)
    if kept != after.dedications:
        after.dedications = kept


def _within_capacity(after: Snapshot, used: Mapping[str, Mapping[str, float]]) -> None:
    """A change that leaves a target's units using more than its capacity (a capacity
    cut, a workload's units grown in place) is refused: allocation units never move by
    themselves, and the rows' `CHECK (used <= capacity)` could not hold them."""
    for name, resources in sorted(used.items()):
        capacity = after.targets[name].capacity
        for resource, amount in sorted(resources.items()):
            if amount > capacity.get(resource, amount) + 1e-9:
                raise Conflict(
                    f"{name}'s units would use {amount:g} {resource}, more than its "
                    f"capacity of {capacity[resource]:g}: units stay where they run, so "
                    f"move or remove some first (placed target drain {name}, placed "
                    "replace)",
                    "capacity-in-use",
                )


class _Earlier:
    """The world before the change, as the engine reads it: built only when a
    comparison needs it (most changes never do)."""

    def __init__(self, before: Snapshot) -> None:
        self.before = before
        self._planner: Planner | None = None

    @property
    def planner(self) -> Planner:
        if self._planner is None:
            self._planner = Planner(world_spec(self.before))
        return self._planner


def explained(move: Move, planner: Planner, state: PlanState) -> Move:
    """An every-mode unit removed from a target that is still there: say which rule of
    its workload that target now fails (the agbot cancels the agreement)."""
    if move.kind != REMOVED or move.source is None:
        return move
    workload = planner.workloads.get(move.workload)
    position = state.position(move.source)
    if workload is None or workload.mode != "every" or position is None:
        return move
    reason = fit.rejection(planner, workload, position, state)
    if reason is None:
        return move
    why = f"{move.source} no longer takes it: {reason.filter}: {reason.text}"
    return dataclasses.replace(move, why=why, details={"rule": reason.filter})


def _describe(
    planner: Planner, targets: dict[str, Target], workload: str, target: str
) -> dict[str, Any]:
    """How a unit runs on its target, as the families describe it (a namespace)."""
    found = planner.workloads.get(workload)
    where = targets.get(target)
    if found is None or where is None:
        return {}
    out: dict[str, Any] = {}
    for family in planner.families:
        out.update(family.describe(found, where))
    return out


def _redeployed(
    before: Snapshot,
    after: Snapshot,
    final: dict[str, tuple[str, str | None, str]],
    planner: Planner,
    earlier: _Earlier,
) -> list[Move]:
    """Units that stay on their target while what the target runs changes: Open
    Horizon's cluster-scoped agent takes a policy's new cluster_namespace, so the service
    is deployed again there, in the new namespace."""
    changed_workloads = {
        name
        for name, spec in after.workload_specs.items()
        if name in before.workload_specs and before.workload_specs[name] != spec
    }
    changed_nodes = {
        name for name, node in after.nodes.items() if before.nodes.get(name, node) != node
    }
    moves: list[Move] = []
    if not changed_workloads and not changed_nodes:
        return moves
    targets_now = {t.id: t for t in planner.spec.inventory.targets}
    targets_then: dict[str, Target] | None = None
    for unit, (workload, destination, _) in final.items():
        if destination is None or before.placements.get(unit) != destination:
            continue
        if workload not in changed_workloads and destination not in changed_nodes:
            continue
        if targets_then is None:
            targets_then = {t.id: t for t in earlier.planner.spec.inventory.targets}
        was = _describe(earlier.planner, targets_then, workload, destination)
        now = _describe(planner, targets_now, workload, destination)
        if was == now:
            continue
        what = ", ".join(
            f"{key} {_plain(was.get(key))} -> {_plain(now.get(key))}"
            for key in sorted({*was, *now})
            if was.get(key) != now.get(key)
        )
        why = f"stays on {destination}, deployed again there: {what}"
        details = {"before": was, "after": now}
        moves.append(Move(workload, unit, destination, destination, why, MOVED, details))
    return moves


def _plain(value: Any) -> str:
    return "-" if value is None else str(value)


def _new_misfits(found: list[fit.Misfit], earlier: _Earlier) -> list[fit.Misfit]:
    """The misfits this change made: those that did not already misfit for the same
    rule before it (each is told once, not on every later change)."""
    if not found:
        return []
    old = {
        (m.unit, m.target, m.rule)
        for m in fit.misfits(earlier.planner, {m.workload for m in found})
    }
    return [m for m in found if (m.unit, m.target, m.rule) not in old]


def _keep_created(after: Snapshot, state: PlanState) -> dict[str, str]:
    """The targets a plan made (Juju's new machines and containers) become targets of
    the world, belonging to the document of the workload they were made for; the
    answer: each made target's workload."""
    made_for: dict[str, str] = {}
    for made in state.created:
        target = made.target
        made_for[target.id] = made.unit.rpartition("/")[0]
        workload = after.workloads.get(made_for[target.id])
        document = workload.document if workload is not None else None
        own: dict[str, Any] = {"kind": target.kind}
        if target.properties:
            own["properties"] = {name: p.plain() for name, p in target.properties.items()}
        after.nodes[target.id] = own
        after.parents[target.id] = None
        after.node_documents[target.id] = document
        after.targets[target.id] = TargetRow(0, 0, "up", document, {}, {})
    return made_for


def stored_names(
    before: Snapshot, final: dict[str, tuple[str, str | None, str]]
) -> dict[str, tuple[str, str | None, str]]:
    """`final` with the units a plan numbered anew under the names of the stored units
    it left out, lowest number first, per allocation workload. The world's spec gives a
    plan only the units that run, and a plan numbers the rest after the highest of them
    (as Juju numbers a service's added units): a workload whose unit 0 waits while 1 to
    4 run would otherwise lose unit 0 and gain unit 12 on every change, in the events
    and the history, for a unit that never moved."""
    new: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for unit, (workload, _, _) in final.items():
        ordinal = unit.rpartition("/")[2]
        if unit not in before.units and ordinal.isdigit():
            new[workload].append((int(ordinal), unit))
    if not new:
        return final
    left: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for unit, (_, workload) in before.units.items():
        row = before.workloads.get(workload)
        ordinal = unit.rpartition("/")[2]
        if (
            workload in new
            and unit not in final
            and ordinal.isdigit()
            and row is not None
            and row.mode == "allocation"
        ):
            left[workload].append((int(ordinal), unit))
    if not left:
        return final
    renamed = dict(final)
    for workload, names in left.items():
        for (_, planned), (_, stored) in zip(sorted(new[workload]), sorted(names), strict=False):
            renamed[stored] = renamed.pop(planned)
    return renamed


def diff(before: Snapshot, final: dict[str, tuple[str, str | None, str]]) -> list[Move]:
    moves: list[Move] = []
    final = stored_names(before, final)
    for unit, (workload, destination, why) in final.items():
        source = before.placements.get(unit)
        exists = unit in before.units
        if exists and source == destination:
            continue
        kind = UNPLACED if destination is None else PLACED if source is None else MOVED
        moves.append(Move(workload, unit, source, destination, why, kind))
    for unit, (_, workload) in before.units.items():
        if unit not in final:
            why = "its workload is gone" if workload not in final_workloads(final) else FEWER_UNITS
            moves.append(Move(workload, unit, before.placements.get(unit), None, why, REMOVED))
    return moves


def final_workloads(final: dict[str, tuple[str, str | None, str]]) -> set[str]:
    return {workload for workload, _, _ in final.values()}


def simulated(
    before: Snapshot, after: Snapshot, simulation: Simulation, planner: Planner
) -> Prepared:
    """The moves of a simulation (targets down or up) as a change to commit: each unit
    from where the store has it to where the simulation leaves it. The simulation's own
    moves compare two plans, and its first plan, made from scratch, may place a unit the
    store holds pending (room an earlier change's order did not find): committed as
    they were, the target's usage would count a unit the store never put there, and the
    check of where each unit was would find the change stale on every try."""
    state = simulation.state
    assert state is not None
    if after is before:
        after = before.copy()  # its implicit dedications may change below
    said = {move.unit: move.why for move in simulation.moves}
    outcomes = simulation.after.by_unit()
    explainer = Explainer(planner.spec, planner.families, [c.target for c in state.created])
    final: dict[str, tuple[str, str | None, str]] = {}
    for unit, (workload, position) in state.units.items():
        why = said.get(unit)
        if why is None:
            outcome = outcomes.get(unit)
            why = explainer.reason(outcome) if isinstance(outcome, Placement) else "runs there"
        final[unit] = (workload, state.target_id(position), why)
    # Mapping units hold nothing in the state (their owners are derived): their
    # outcomes say where they are.
    for outcome in simulation.after.outcomes:
        if outcome.unit in final:
            continue
        if isinstance(outcome, Placement):
            why = said.get(outcome.unit) or explainer.reason(outcome)
            final[outcome.unit] = (outcome.workload, outcome.target, why)
        else:
            final[outcome.unit] = (outcome.workload, None, said.get(outcome.unit, outcome.summary))
    # A unit moved onto a machine the simulation made (Juju's new machines): the machine
    # becomes a target of the world, as a plan's do, or its placement would name none.
    made_for = _keep_created(after, state)
    implicit_dedications(after, planner, simulation.after, final)
    return Prepared(
        after,
        planner.spec,
        planner,
        simulation.after,
        diff(before, final),
        usage(planner, state, after),
        simulation=simulation,
        made_for=made_for,
    )


class Reporter(Protocol):
    """Told of each change's end: the conflicts retried, the events committed, the
    seconds it took, whether it gave up, and (a whole world planned) its unplaced units
    by the filter that rejected the most targets."""

    def __call__(
        self,
        conflicts: int,
        rows: Sequence[Recorded],
        seconds: float,
        gave_up: bool,
        unplaced: Mapping[str, int] | None = None,
    ) -> None: ...


def silent(
    conflicts: int,
    rows: Sequence[Recorded],
    seconds: float,
    gave_up: bool,
    unplaced: Mapping[str, int] | None = None,
) -> None:
    pass


def unplaced_by_filter(result: PlanResult) -> dict[str, int]:
    """The plan's unplaced units, each counted under the filter that rejected the most
    targets for it (`none` when none did: nothing to place it on at all)."""
    found: dict[str, int] = {}
    for outcome in result.unplaced:
        rejected = outcome.filtered
        name = max(rejected, key=lambda f: (rejected[f], f)) if rejected else "none"
        found[name] = found.get(name, 0) + 1
    return found


def transact(
    engine: Store,
    prepare: Callable[[Snapshot], Prepared],
    actor: Actor,
    dry_run: bool = False,
    expected_revision: int | None = None,
    report: Reporter = silent,
    guard: transactions.Guard | None = None,
) -> Committed:
    """Plan with `prepare` on a snapshot and commit what it says, trying again on fresh
    rows when someone else changed them first (operations/transactions.py). Whatever
    `prepare` says, a change that touches anything out of `actor`'s scope is a 403 and
    commits nothing (operations/change_scope.py)."""

    def checked(snapshot: Snapshot) -> Prepared:
        prepared = prepare(snapshot)
        change_scope.check(actor, snapshot, prepared.after, prepared.made_for)
        return prepared

    started = time.perf_counter()
    # The whole world is read, planned and written as rows here: millions of objects at
    # 10,000 targets, and past each allocation threshold the cycle collector would walk
    # all of them (a third of applying 10,000 targets, measured).
    with without_cycle_collection():
        try:
            written = transactions.transact(
                engine, checked, _trail, actor, dry_run, expected_revision, guard
            )
        except Contended as error:
            report(error.conflicts, [], time.perf_counter() - started, True)
            raise
    if written.committed:
        seconds = time.perf_counter() - started
        unplaced = unplaced_by_filter(written.change.result)
        report(written.conflicts, written.rows, seconds, False, unplaced)
    return Committed(written.change, written.revision, written.rows, written.conflicts)


def _trail(before: Snapshot, prepared: Prepared) -> list[Extra]:
    """The change's audit events (operations/audit.py), those it records itself left out."""
    return audit.events(
        before, prepared.after, prepared.made_for, prepared.extra, prepared.workloads
    )


def moves_document(moves: Sequence[Move]) -> list[dict[str, Any]]:
    return [move.to_dict() for move in moves]
