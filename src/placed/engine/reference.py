"""The reference oracle: the same policies, one target at a time, in plain Python, written
as the seeds' pseudo-code reads. Tests hold the fast path to it; the benchmark measures
against it. Nothing in the product calls it.

It runs the same loop as the planner (engine/loop.py: the order of workloads and units,
what stays after a change, fallbacks) with its own judge: every filter's and scorer's
one-target `judge`, in registry order, and selection by Python integers ("highest score,
then highest rendezvous weight"). The bounded-load assignment is Gale and Shapley, one
proposal at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from placed.engine import loop
from placed.engine.explain import Rejection, filtered_counts, summarize
from placed.engine.index import TargetIndex
from placed.engine.outcomes import Placement, PlanResult, Unplaced
from placed.engine.pipeline import Pipeline, StateWorld
from placed.engine.selection import U64, rendezvous_weight, stable_hashes
from placed.engine.state import PlanState
from placed.model import Spec, Target, Workload
from placed.policy.base import BoolArray, Consumer, Family, FloatArray, Reason, State, World
from placed.policy.registry import FAMILIES

Positions = NDArray[np.intp]


@dataclass(frozen=True, slots=True)
class ReferenceOutcome:
    workload: str
    unit: str
    target: str | None
    score: float | None
    summary: str | None


def _asks(workload: Workload, needs: type | None) -> bool:
    return needs is None or workload.request(needs) is not None


class _Snapshot:
    """policy.base.World over the plan state as plain Python values, read once per unit
    (a unit's judgement reads every target, and nothing changes while it does)."""

    def __init__(
        self, state: PlanState, kept: Callable[[Workload, World], Sequence[Target]]
    ) -> None:
        self._state = state
        self._kept = kept
        self._up: list[bool] = state.up.tolist()
        self._free: list[list[float]] = state.free.T.tolist()
        self._placed: dict[str, list[tuple[str, Target]]] = {}
        self._positions = state.index.position

    def position(self, target: Target) -> int:
        found = self._positions.get(target.id)
        if found is None:
            found = self._state.position(target.id)
            assert found is not None, f"{target.id} is not in this plan"
        return found

    def is_up(self, target: Target) -> bool:
        return self._up[self.position(target)]

    def free(self, target: Target) -> Mapping[str, float]:
        return dict(zip(self._state.resources, self._free[self.position(target)], strict=True))

    def placed(self, group: str) -> Sequence[tuple[str, Target]]:
        found = self._placed.get(group)
        if found is None:
            found = self._placed[group] = list(StateWorld(self._state).placed(group))
        return found

    @property
    def judging(self) -> str | None:
        return self._state.judging

    def where(self, unit: str) -> Target | None:
        return StateWorld(self._state).where(unit)

    def created_for(self, unit: str) -> Target | None:
        return StateWorld(self._state).created_for(unit)

    def family_state(self, kind: type[State]) -> State:
        return self._state.family_state(kind)

    def statically_kept(self, workload: Workload) -> Sequence[Target]:
        return self._kept(workload, self)


class ReferenceJudge:
    """loop.Judge, one target at a time."""

    def __init__(self, index: TargetIndex, families: Sequence[Family] = FAMILIES) -> None:
        # Bound only to reach each family's filters and scorers, whose one-target `judge`
        # reads no columns: an index without targets makes binding cost nothing.
        pipeline = Pipeline(TargetIndex((), index.resources), families)
        self.families = pipeline.families
        self.filters = pipeline.filters
        self.scorers = pipeline.scorers
        self._scores: tuple[Workload, FloatArray] | None = None
        self._index = index
        self._kept: dict[str, tuple[Workload, list[Target]]] = {}

    def statically_kept(self, workload: Workload, world: World) -> Sequence[Target]:
        """The inventory's targets that every static filter's `judge` keeps for the
        workload, judged once per workload (their verdicts never change in a plan)."""
        found = self._kept.get(workload.name)
        if found is None or found[0] is not workload:
            rules = [f.judge for f in self.filters if f.static and _asks(workload, f.needs)]
            kept = [
                target
                for target in self._index.targets
                if all(rule(workload, target, world) is None for rule in rules)
            ]
            found = self._kept[workload.name] = (workload, kept)
        return found[1]

    def request(self, workload: Workload) -> Workload:
        return workload

    def judge(
        self, workload: Workload, target: Target, world: World
    ) -> tuple[Reason | None, float]:
        """(first failing rule or None, score) for one workload on one target."""
        for f in self.filters:
            reason = f.judge(workload, target, world)
            if reason is not None:
                return reason, 0.0
        return None, float(sum(s.judge_in(workload, target, world) for s in self.scorers))

    def _judge_all(
        self, workload: Workload, state: PlanState
    ) -> tuple[list[tuple[Reason | None, float]], list[Target]]:
        """`judge` on every target, written out: this loop is all the reference does."""
        world = _Snapshot(state, self.statically_kept)
        targets = list(state.targets())
        # A rule whose request the workload lacks passes every target (Filter.needs).
        rules = [f.judge for f in self.filters if _asks(workload, f.needs)]
        scores = [s.judge_in for s in self.scorers if _asks(workload, s.needs)]
        verdicts: list[tuple[Reason | None, float]] = []
        for target in targets:
            for rule in rules:
                reason = rule(workload, target, world)
                if reason is not None:
                    verdicts.append((reason, 0.0))
                    break
            else:
                score = 0.0
                for scored in scores:
                    score += scored(workload, target, world)
                verdicts.append((None, score))
        return verdicts, targets

    def feasible(self, request: Workload, state: PlanState) -> BoolArray:
        verdicts, _ = self._judge_all(request, state)
        # The loop asks for the scores right after, of the same unchanged state.
        self._scores = (request, np.array([score for _, score in verdicts], dtype=np.float64))
        return np.array([reason is None for reason, _ in verdicts], dtype=bool)

    def scores(self, request: Workload, state: PlanState) -> FloatArray:
        if self._scores is not None and self._scores[0] is request:
            found = self._scores[1]
            self._scores = None
            return found
        verdicts, _ = self._judge_all(request, state)
        return np.array([score for _, score in verdicts], dtype=np.float64)

    def reserve(self, request: Workload, state: PlanState, positions: int | Positions) -> None:
        # What a landing unit takes (capacity, a tenant's VM counts) is bookkeeping, not
        # judgement: the families' own reserve, as the pipeline calls it.
        for f in self.filters:
            if isinstance(f, Consumer) and _asks(request, f.needs):
                part = f.prepare(request)
                if part is not None:
                    f.reserve(part, state, positions)

    def choose(self, unit: str, top: Positions, state: PlanState) -> int:
        best = max(top.tolist(), key=lambda p: rendezvous_weight(unit, state.target_id(p)))
        return int(best)

    def choose_each(self, units: list[str], top: Positions, state: PlanState) -> Positions:
        slot = {int(p): i for i, p in enumerate(top.tolist())}
        return np.array([slot[self.choose(unit, top, state)] for unit in units], dtype=np.intp)

    def assign_bounded(
        self, units: list[str], top: Positions, cap: int, state: PlanState
    ) -> tuple[Positions, NDArray[np.bool_] | None]:
        """Gale and Shapley, one proposal at a time: a free unit proposes to the next
        target of its rendezvous ranking; a target over its cap turns away its lightest
        unit."""
        highest = [state.target_id(p) for p in top.tolist()]
        ranking = {
            unit: sorted(highest, key=lambda target_id: -rendezvous_weight(unit, target_id))
            for unit in units
        }
        held: dict[str, list[str]] = {target_id: [] for target_id in highest}
        proposals = dict.fromkeys(units, 0)
        free_units = list(reversed(units))
        while free_units:
            unit = free_units.pop()
            target_id = ranking[unit][proposals[unit]]
            proposals[unit] += 1
            held[target_id].append(unit)
            if len(held[target_id]) > cap:
                lightest = min(
                    held[target_id],
                    key=lambda u: (rendezvous_weight(u, target_id), -units.index(u)),
                )
                held[target_id].remove(lightest)
                free_units.append(lightest)
        owner = {unit: target_id for target_id, members in held.items() for unit in members}
        slot = {target_id: i for i, target_id in enumerate(highest)}
        return np.array([slot[owner[unit]] for unit in units], dtype=np.intp), None

    def repair(
        self,
        units: list[str],
        top: Positions,
        previous: Positions,
        joined: NDArray[np.bool_],
        cap: int,
        state: PlanState,
    ) -> Positions:
        raise NotImplementedError("the reference plans; it does not simulate changes")

    def unplaced(self, request: Workload, unit: str, state: PlanState) -> Unplaced:
        verdicts, _ = self._judge_all(request, state)
        rejections = [
            Rejection(position, reason)
            for position, (reason, _) in enumerate(verdicts)
            if reason is not None
        ]
        summary = summarize(state.size, state.size - len(rejections), rejections)
        return Unplaced(request.name, unit, summary, filtered_counts(rejections))

    def unit_hashes(self, units: list[str]) -> U64:
        return stable_hashes(units)

    def block(
        self, request: Workload, workload: Workload, units: list[str], state: PlanState
    ) -> list[Placement]:
        return []  # the oracle judges every unit on its own

    def follow(self, request: Workload, state: PlanState) -> None:
        return None


def reference_plan(
    spec: Spec, up: dict[str, bool] | None = None, families: Sequence[Family] = FAMILIES
) -> list[ReferenceOutcome]:
    index = TargetIndex.for_spec(spec)
    state = PlanState(index)
    for target_id, alive in (up or {}).items():
        state.up[index.position[target_id]] = alive
    reference = ReferenceJudge(index, families)
    # The units that already run, where they run, as the planner's initial state has them
    # (what they take is bookkeeping: the families' own reserve).
    workloads = {w.name: w for w in spec.workloads}
    for running in spec.running:
        position = state.position(running.target)
        if position is None:
            continue
        state.place(running.unit, running.workload, position)
        if running.workload in workloads:
            state.judging = running.unit
            reference.reserve(workloads[running.workload], state, position)
    state.judging = None
    result = PlanResult(spec, reference.families)
    context = loop.Context(reference, state, result)
    outcomes = loop.run(context, spec.workloads)
    return [
        ReferenceOutcome(o.workload, o.unit, o.target, o.score, None)
        if isinstance(o, Placement)
        else ReferenceOutcome(o.workload, o.unit, None, None, o.summary)
        for o in outcomes
    ]
