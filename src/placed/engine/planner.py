"""The planner: binds the registry's families to a spec's index and runs the loop with
the fast judge (the pipeline, and rendezvous selection over arrays)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from placed.collector import without_cycle_collection
from placed.engine import balance, block, heap, loop
from placed.engine.block import Following
from placed.engine.explain import counted_rejections, filtered_counted, summarize_counted
from placed.engine.index import TargetIndex
from placed.engine.outcomes import Outcome, Placement, PlanResult, Unplaced
from placed.engine.pipeline import CompiledRequest, Pipeline
from placed.engine.report import Explainer
from placed.engine.selection import U64, break_tie, stable_hash64, stable_hashes
from placed.engine.state import PlanState
from placed.model import Spec, Workload
from placed.model.spec import Running
from placed.policy.base import Family
from placed.policy.lint import lint
from placed.policy.registry import FAMILIES

# Re-exported: callers have always found the outcome records here.
__all__ = ["Outcome", "Placement", "PlanResult", "Planner", "Unplaced"]

Positions = NDArray[np.intp]
_COMPILED_KEPT = 16
# Told of each running unit just before it lands in the initial state (engine/fit.py
# judges it there): the unit, its workload, its target's position, the state so far.
Landing = Callable[[Running, Workload, int, PlanState], None]


class FastJudge:
    """loop.Judge over the pipeline: numpy masks, numpy selection."""

    def __init__(self, pipeline: Pipeline) -> None:
        self.pipeline = pipeline
        self.families = pipeline.families
        self._compiled: OrderedDict[str, CompiledRequest] = OrderedDict()
        self._unit_hashes: tuple[list[str], U64] | None = None
        # The pipeline's own methods, not wrappers: these run once per unit.
        self.feasible = pipeline.feasible
        self.scores = pipeline.scores
        self.reserve = pipeline.reserve

    def request(self, workload: Workload) -> CompiledRequest:
        compiled = self._compiled.get(workload.name)
        if compiled is None or compiled.workload is not workload:
            compiled = self._compiled[workload.name] = self.pipeline.compile(workload)
            # A compiled request holds several arrays over all targets; keeping one per
            # workload would cost gigabytes for ten thousand workloads on ten thousand
            # targets, and a workload's units are placed together anyway.
            if len(self._compiled) > _COMPILED_KEPT:
                self._compiled.popitem(last=False)
        else:
            self._compiled.move_to_end(workload.name)
        return compiled

    def choose(self, unit: str, top: Positions, state: PlanState) -> int:
        return break_tie(stable_hash64(unit), top, state.premixed_hashes)

    def unit_hashes(self, units: list[str]) -> U64:
        return self._hashes(units)

    def _hashes(self, units: list[str]) -> U64:
        if self._unit_hashes is None or self._unit_hashes[0] is not units:
            self._unit_hashes = (units, stable_hashes(units))
        return self._unit_hashes[1]

    def choose_each(self, units: list[str], top: Positions, state: PlanState) -> Positions:
        chosen, _ = balance.first_choices(self._hashes(units), state.hashes[top])
        return chosen

    def assign_bounded(
        self, units: list[str], top: Positions, cap: int, state: PlanState
    ) -> tuple[Positions, NDArray[np.bool_] | None]:
        return balance.stable_assignment_passes(self._hashes(units), state.hashes[top], cap)

    def repair(
        self,
        units: list[str],
        top: Positions,
        previous: Positions,
        joined: NDArray[np.bool_],
        cap: int,
        state: PlanState,
    ) -> Positions:
        return balance.repair(self._hashes(units), state.hashes[top], previous, joined, cap)

    def block(
        self, request: CompiledRequest, workload: Workload, units: list[str], state: PlanState
    ) -> list[Placement]:
        if len(units) < 2:
            return []  # one unit: the loop judges it for less than a block's set-up costs
        follow = block.trackers(request, state)
        if follow is None:
            return []
        return block.place(self.pipeline, request, workload, units, state, follow)

    def follow(self, request: CompiledRequest, state: PlanState) -> Following | None:
        return block.following(self.pipeline, request, state)

    def unplaced(self, request: CompiledRequest, unit: str, state: PlanState) -> Unplaced:
        available, charged = counted_rejections(self.pipeline, request, state)
        return Unplaced(
            request.workload.name,
            unit,
            summarize_counted(state.size, available, charged),
            filtered_counted(charged),
        )


class Planner:
    def __init__(self, spec: Spec, families: Sequence[Family] = FAMILIES) -> None:
        self.spec = spec
        self.index = TargetIndex.for_spec(spec)
        self.pipeline = Pipeline(self.index, families)
        self.families = self.pipeline.families
        self.judge = FastJudge(self.pipeline)
        self.workloads = {w.name: w for w in spec.workloads}
        heap.give_back(len(self.index))  # what the build's temporaries left in the heap

    @classmethod
    def sharing(cls, planner: Planner, spec: Spec) -> Planner:
        """A planner of `spec` on `planner`'s index and bound families, which are built
        once per inventory: for a spec with the same inventory, dedications and resource
        names, whose workloads and running units differ (the caller checks that). Its
        judge is its own: the compiled requests it keeps are of `spec`'s workloads."""
        made = cls.__new__(cls)
        made.spec = spec
        made.index = planner.index
        made.pipeline = planner.pipeline
        made.families = planner.families
        made.judge = FastJudge(planner.pipeline)
        made.workloads = {w.name: w for w in spec.workloads}
        return made

    @classmethod
    def on(cls, spec: Spec, index: TargetIndex, families: Sequence[Family] = FAMILIES) -> Planner:
        """A planner of `spec` on `index` rather than on one made of its inventory: an
        index a live world extended (`TargetIndex.extended`) as its inventory grew, which
        holds the inventory's targets in the order the world stored them."""
        made = cls.__new__(cls)
        made.spec = spec
        made.index = index
        made.pipeline = Pipeline(index, families)
        made.families = made.pipeline.families
        made.judge = FastJudge(made.pipeline)
        made.workloads = {w.name: w for w in spec.workloads}
        return made

    def request(self, workload: Workload) -> CompiledRequest:
        return self.judge.request(workload)

    def initial_state(
        self, leaving: frozenset[str] = frozenset(), landing: Landing | None = None
    ) -> PlanState:
        """The state a plan starts from: the units that already run in their places (but
        those `leaving`: in a what-if, units whose target failed; a unit asked to move)."""
        state = PlanState(self.index)
        for running in self.spec.running:
            if running.unit in leaving:
                continue
            position = state.position(running.target)
            if position is None:
                continue  # the reader checked; a target it dropped is no place to start
            workload = self.workloads.get(running.workload)
            if workload is not None and landing is not None:
                state.judging = running.unit
                landing(running, workload, position, state)
            state.place(running.unit, running.workload, position)
            if workload is not None:
                state.judging = running.unit  # what it takes is recorded as its own
                self.pipeline.reserve(self.request(workload), state, position)
        state.judging = None
        return state

    def plan(
        self,
        state: PlanState | None = None,
        progress: loop.Progress | None = None,
        again: Mapping[str, list[str]] | None = None,
    ) -> PlanResult:
        """Plan every workload on `state`. `again`: units (by workload) that ran and are
        to be placed again under their own names (left out of `state`)."""
        state = state if state is not None else self.initial_state()
        result = PlanResult(self.spec, self.families, warnings=lint(self.spec, self.families))
        context = loop.Context(
            self.judge, state, result, again=dict(again or {}), progress=progress
        )
        with without_cycle_collection():
            result.outcomes = loop.run(context, self.spec.workloads)
        result.new_targets = list(state.created)
        return result

    def load(self, state: PlanState, placements: Iterable[Placement]) -> None:
        """Put what already runs into `state`: each placement takes its place and its
        capacity, as if the plan had just made it."""
        for placement in placements:
            position = state.position(placement.target)
            if position is None:
                raise KeyError(f"{placement.unit} runs on {placement.target}, not in this plan")
            request = self.request(self.workloads[placement.workload])
            state.place(placement.unit, placement.workload, position)
            self.pipeline.reserve(request, state, position)

    def reason(self, placement: Placement) -> str:
        return Explainer(self.spec, self.families).reason(placement)

    def describe(self, placement: Placement) -> dict[str, Any]:
        return Explainer(self.spec, self.families).describe(placement)
