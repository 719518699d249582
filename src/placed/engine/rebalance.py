"""What happens when targets go down or come up: which units move, where, and why.

mapping units are re-derived from scratch (ownership is a pure function of the unit and
the live targets, so only units of a lost target, or units that now rank a new target
first, can change), except under max_load, where the owners before the change are
repaired (engine/balance.py). allocation units stay where they are unless their target
is lost; only those are re-placed, into the capacity the others leave free.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

from placed.engine import loop
from placed.engine.outcomes import Outcome, Placement, PlanResult, Unplaced
from placed.engine.planner import Planner
from placed.engine.report import Explainer


class UnknownTargetError(ValueError):
    """A --down/--up name that is not in the inventory."""


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

    def to_dict(self) -> dict[str, Any]:
        return {
            "down": self.down,
            "up": self.up,
            "moves": [m.to_dict() for m in self.moves],
            "unplaced": self.after.to_dict()["unplaced"],
            "units": len(self.after.outcomes),
            "moved": len(self.moves),
        }


def expand(planner: Planner, names: list[str], flag: str) -> list[str]:
    """Target ids named by `names`; a location that is not a leaf names every target in it."""
    inventory = planner.spec.inventory
    known = [location.id for location in inventory.locations()]
    ids: list[str] = []
    for name in names:
        leaves = inventory.leaf_ids_under(name)
        if not leaves:
            close = difflib.get_close_matches(name, known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise UnknownTargetError(f"{flag} {name}: no target or location with that id{hint}")
        ids.extend(leaf for leaf in leaves if leaf not in ids)
    return ids


def simulate(planner: Planner, down: list[str], up: list[str]) -> Simulation:
    going_down = expand(planner, down, "--down")
    coming_up = expand(planner, up, "--up")
    both = sorted(set(going_down) & set(coming_up))
    if both:
        raise UnknownTargetError(f"{', '.join(both)} named by both --down and --up")

    before = planner.plan()
    state = planner.initial_state()
    position = planner.index.position
    for target_id in going_down:
        state.up[position[target_id]] = False
    for target_id in coming_up:
        state.up[position[target_id]] = True

    # What runs on live targets stays and holds its capacity: allocation and every units
    # load into the state as they are. Mapping units own nothing to load: their owners
    # are derived again (or, under max_load, repaired from `before`).
    kept = [
        outcome
        for outcome in before.placements
        if planner.workloads[outcome.workload].mode != "mapping"
        and state.up[position[outcome.target]]
    ]
    planner.load(state, kept)

    after = PlanResult(planner.spec, planner.families, warnings=before.warnings)
    context = loop.Context(
        planner.judge,
        state,
        after,
        previous=before.by_unit(),
        before=planner.initial_state(),
    )
    after.outcomes = loop.run(context, planner.spec.workloads)
    after.new_targets = list(state.created)
    explainer = Explainer(planner.spec, planner.families)
    moves = _moves(explainer, before.by_unit(), after.by_unit(), set(going_down), set(coming_up))
    return Simulation(going_down, coming_up, before, after, moves)


def _target(outcome: Outcome | None) -> str | None:
    return outcome.target if isinstance(outcome, Placement) else None


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
        workload = (old or new).workload  # type: ignore[union-attr]
        moves.append(Move(workload, unit, source, destination, "; ".join(causes)))
    return moves
