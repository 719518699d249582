"""Whether what runs still fits where it runs, after a change (SERVICE.md, "Changes
re-evaluate"): the agbot's re-evaluation of agreements when a policy changes.

A plan keeps allocation units where they run (`running:`) without judging them again.
Here each one is judged on its own target just before it lands in the plan state, in the
order the plan state is built, so it sees the units placed before it (capacity they
take, what `distinct` counts) and not itself. The judgement is the pipeline's own: a
static filter's mask at that target, and the one-target `judge` of the filters that read
the plan state (the rule the reference runs, held to the fast path by the tests); never
a second copy of a rule.

Two filters are left out: `status` (a target down or in maintenance is the controller's
and a drain's business, not a policy's) and `directive` (a Juju `to:` places the units a
plan adds, not those that run).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from placed.engine.pipeline import StateWorld
from placed.engine.planner import Landing, Planner
from placed.engine.state import PlanState
from placed.model import Workload
from placed.model.spec import Running
from placed.policy.base import Reason

NOT_POLICY = frozenset({"status", "directive"})


@dataclass(frozen=True, slots=True)
class Misfit:
    """A unit that runs on a target its workload's rules now reject."""

    workload: str
    unit: str
    target: str
    reason: Reason

    @property
    def rule(self) -> str:
        return self.reason.filter

    def to_dict(self) -> dict[str, str]:
        return {
            "workload": self.workload,
            "unit": self.unit,
            "target": self.target,
            "rule": self.rule,
            "why": self.reason.text,
        }


def rejection(
    planner: Planner,
    workload: Workload,
    position: int,
    state: PlanState,
    skip: Collection[str] = (),
) -> Reason | None:
    """The first filter, in pipeline order, that rejects the target at `position` for
    `workload` in `state`; None when every one keeps it."""
    request = planner.request(workload)
    target = state.target(position)
    world: StateWorld | None = None
    for number, rule in enumerate(planner.pipeline.filters):
        if request.prepared[number] is None or rule.name in skip:
            continue
        mask = request.static_masks.get(number)
        if mask is not None and position < mask.size:
            if not mask[position]:
                return rule.reason(workload, target, position, state)
            continue
        world = world or StateWorld(state, planner.pipeline.kept_by(request))
        found = rule.judge(workload, target, world)
        if found is not None:
            return found
    return None


def collector(planner: Planner, found: list[Misfit]) -> Landing:
    """A `Planner.initial_state` hook that judges each running unit before it lands and
    appends what no longer fits to `found`."""

    def landing(running: Running, workload: Workload, position: int, state: PlanState) -> None:
        if workload.mode != "allocation":
            return
        reason = rejection(planner, workload, position, state, NOT_POLICY)
        if reason is not None:
            found.append(Misfit(workload.name, running.unit, running.target, reason))

    return landing


def misfits(planner: Planner, only: Collection[str] | None = None) -> list[Misfit]:
    """The running units (of the workloads `only` names, else all) that no longer fit."""
    found: list[Misfit] = []
    planner.initial_state(landing=collector(planner, found))
    return [m for m in found if only is None or m.workload in only]
