"""What happens when targets go down or come up: which units move, where, and why.

mapping units are re-derived from scratch (ownership is a pure function of the unit and
the live targets, so only units of a lost target, or units that now rank a new target
first, can change), except under max_load, where the owners before the change are
repaired (engine/balance.py). allocation units stay where they are unless their target
is lost; only those are re-placed, into the capacity the others leave free.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any

from placed.engine import loop
from placed.engine.outcomes import Outcome, Placement, PlanResult, Unplaced
from placed.engine.planner import Planner
from placed.engine.report import Explainer, plan_document
from placed.engine.state import PlanState
from placed.model import CONTAINER_KINDS


class UnknownTargetError(ValueError):
    """A --down/--up name that is not in the inventory: `option` is the flag at fault."""

    def __init__(self, option: str, message: str) -> None:
        super().__init__(message)
        self.option = option


@dataclass(frozen=True, slots=True)
class Move:
    workload: str
    unit: str
    source: str | None
    destination: str | None
    why: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "workload": self.workload,
            "unit": self.unit,
            "from": self.source,
            "to": self.destination,
            "why": self.why,
        }


@dataclass
class Simulation:
    down: list[str]
    up: list[str]
    before: PlanResult
    after: PlanResult
    moves: list[Move]
    already_down: list[str] = field(default_factory=list)
    already_up: list[str] = field(default_factory=list)
    ran: int = 0  # units that already ran (running:) on targets that went down
    # The world after: where everything is and what each target has free (a service
    # commits its usage from here).
    state: PlanState | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "down": self.down,
            "up": self.up,
            "moves": [m.to_dict() for m in self.moves],
            "unplaced": plan_document(self.after)["unplaced"],
            "units": len(self.after.outcomes),
            "moved": len(self.moves),
        }


def expand(planner: Planner, names: list[str], flag: str, made: PlanState) -> list[str]:
    """Target ids named by `names`; a location that is not a leaf names every target in it,
    and a machine the plan made (Juju's new machines, in `made`) names itself and the
    containers on it."""
    inventory = planner.spec.inventory
    children: dict[str, list[str]] = {}
    for target in inventory.targets:
        if target.kind in CONTAINER_KINDS and target.id.count("/") >= 2:
            # A container that already runs (juju status) is named after its machine.
            children.setdefault(target.id.rsplit("/", 2)[0], []).append(target.id)
    for created in made.created:
        children.setdefault(created.target.id, [])
        if created.parent is not None:
            children.setdefault(created.parent, []).append(created.target.id)
    ids: list[str] = []
    named: set[str] = set()  # a zone's thousands of leaves: no scan of `ids` per leaf
    for name in names:
        leaves = inventory.leaf_ids_under(name)
        if name in children:
            leaves = [*leaves, *([] if name in leaves else [name]), *children[name]]
        if not leaves:
            known = [location.id for location in inventory.locations()] + list(children)
            close = difflib.get_close_matches(name, known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise UnknownTargetError(flag, f"{name}: no target or location with that id{hint}")
        for leaf in leaves:
            if leaf not in named:
                named.add(leaf)
                ids.append(leaf)
    return ids


def simulate(planner: Planner, down: list[str], up: list[str]) -> Simulation:
    planned = planner.initial_state()
    before = planner.plan(planned)
    going_down = expand(planner, down, "--down", planned)
    coming_up = expand(planner, up, "--up", planned)
    both = sorted(set(going_down) & set(coming_up))
    if both:
        raise UnknownTargetError("--up", f"{', '.join(both)} named by both --down and --up")

    # What already ran (a spec's running:, a juju status) on a target that goes down is
    # placed again, as the units of the plan are.
    lost_set = set(going_down)
    lost = [
        r for r in planner.spec.running if r.target in lost_set and r.workload in planner.workloads
    ]
    again: dict[str, list[str]] = {}
    for running in lost:
        if planner.workloads[running.workload].mode == "allocation":
            again.setdefault(running.workload, []).append(running.unit)

    # The world the plan left: the inventory, and the machines and containers it made.
    state = planner.initial_state(frozenset(u for units in again.values() for u in units))
    state.adopt_created(planned)
    was_up = state.up.copy()
    for target_id in going_down:
        state.up[_position(state, target_id)] = False
    for target_id in coming_up:
        state.up[_position(state, target_id)] = True
    state.forget_lost_creations()

    # What runs on live targets stays and holds its capacity: allocation and every units
    # load into the state as they are. Mapping units own nothing to load: their owners
    # are derived again (or, under max_load, repaired from `before`).
    kept = [
        outcome
        for outcome in before.placements
        if planner.workloads[outcome.workload].mode != "mapping"
        and state.up[_position(state, outcome.target)]
    ]
    planner.load(state, kept)

    after = PlanResult(planner.spec, planner.families, warnings=before.warnings)
    context = loop.Context(
        planner.judge,
        state,
        after,
        previous=before.by_unit(),
        before=planner.initial_state(),
        again=again,
    )
    after.outcomes = loop.run(context, planner.spec.workloads)
    after.new_targets = list(state.created)
    explainer = Explainer(planner.spec, planner.families, [c.target for c in state.created])
    was = {
        r.unit: Placement(r.workload, r.unit, r.target, 0.0, 1, 1, (), via="running")
        for r in lost
        if r.unit in set().union(*again.values())
    }
    moves = _moves(
        explainer, {**was, **before.by_unit()}, after.by_unit(), set(going_down), set(coming_up)
    )
    return Simulation(
        going_down,
        coming_up,
        before,
        after,
        moves,
        already_down=[t for t in going_down if not was_up[_position(state, t)]],
        already_up=[t for t in coming_up if was_up[_position(state, t)]],
        ran=len(was),
        state=state,
    )


def _position(state: PlanState, target_id: str) -> int:
    position = state.position(target_id)
    if position is None:  # expand() named only targets the state has
        raise KeyError(target_id)
    return position


def _target(outcome: Outcome | None) -> str | None:
    return outcome.target if isinstance(outcome, Placement) else None


def move_causes(
    explainer: Explainer,
    source: str | None,
    new: Outcome | None,
    went_down: set[str],
    came_up: set[str],
) -> list[str]:
    """Why a unit left `source` for where `new` put it, as `placed simulate` words it
    (the live world's delta words its moves so too, operations/replica.py)."""
    destination = _target(new)
    causes = []
    if source in went_down:
        causes.append(f"{source} is down")
    if destination in came_up:
        # `new` is a Placement here: an unplaced unit has no destination.
        if not isinstance(new, Placement) or new.choice == 1:
            causes.append(f"{destination} is up and ranks first")
        elif source is not None and source not in went_down:
            causes.append(f"{destination} is up and {source} is over the cap")
        else:
            causes.append(f"{destination} is up")
    if isinstance(new, Placement):
        causes.append(f"now on {destination}: {explainer.reason(new)}")
    elif isinstance(new, Unplaced):
        causes.append(new.summary)
    return causes


def _moves(
    explainer: Explainer,
    before: dict[str, Outcome],
    after: dict[str, Outcome],
    went_down: set[str],
    came_up: set[str],
) -> list[Move]:
    moves = []
    for unit in [*before, *(u for u in after if u not in before)]:
        old, new = before.get(unit), after.get(unit)
        source, destination = _target(old), _target(new)
        if source == destination:
            continue
        causes = move_causes(explainer, source, new, went_down, came_up)
        workload = (old or new).workload  # type: ignore[union-attr]
        moves.append(Move(workload, unit, source, destination, "; ".join(causes)))
    return moves
