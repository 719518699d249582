"""One pipeline for every policy family: filters produce masks, scorers add up, and the
selector takes the best. Nomad's feasibility stack and kube-scheduler's framework have
the same shape; the families and their order come from policy/registry.py.

Static filters and scorers are computed once per workload over the index's columns.
Targets created during a plan are not in those columns: each family judges them one at
a time (its `judge`, the same rule the reference uses), once per workload and created
target, so a plan that creates nothing pays nothing for the possibility.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from placed.engine.index import TargetIndex
from placed.engine.state import PlanState
from placed.model import Target, Workload
from placed.policy.base import (
    BoolArray,
    Consumer,
    Family,
    Filter,
    FloatArray,
    Reason,
    Scorer,
    State,
)
from placed.policy.registry import FAMILIES


class StateWorld:
    """policy.base.World over a plan state: one target's surroundings, in plain Python."""

    def __init__(
        self, state: PlanState, kept: Callable[[Workload], Sequence[Target]] | None = None
    ) -> None:
        self.state = state
        self._kept = kept

    def statically_kept(self, workload: Workload) -> Sequence[Target]:
        if self._kept is None:
            raise TypeError(
                "this World was made without the static filters' verdicts "
                "(StateWorld(state, kept=pipeline.kept_by(...)))"
            )
        return self._kept(workload)

    def position(self, target: Target) -> int:
        position = self.state.position(target.id)
        assert position is not None, f"{target.id} is not in this plan"
        return position

    def is_up(self, target: Target) -> bool:
        return bool(self.state.up[self.position(target)])

    def free(self, target: Target) -> Mapping[str, float]:
        return self.state.free_at(self.position(target))

    def placed(self, group: str) -> Sequence[tuple[str, Target]]:
        state = self.state
        return [(unit, state.target(state.units[unit][1])) for unit in state.placed(group)]

    @property
    def judging(self) -> str | None:
        return self.state.judging

    def where(self, unit: str) -> Target | None:
        position = self.state.where(unit)
        return self.state.target(position) if position is not None else None

    def created_for(self, unit: str) -> Target | None:
        position = self.state.created_for(unit)
        return self.state.target(position) if position is not None else None

    def family_state(self, kind: type[State]) -> State:
        return self.state.family_state(kind)


@dataclass(slots=True)
class _Judged:
    """One created target as one workload sees it, judged by the static rules."""

    target: Target
    reasons: list[Reason | None]  # per static filter that checks something
    score: float


_NONE_CREATED = np.zeros(0, dtype=bool)
_NO_SCORES = np.zeros(0, dtype=np.float64)
_NONE_CREATED.flags.writeable = _NO_SCORES.flags.writeable = False


@dataclass(slots=True)
class CompiledRequest:
    """A workload prepared against one index: what every unit of it reuses."""

    workload: Workload
    prepared: list[Any]  # one entry per filter, in pipeline order; None: nothing to check
    static_masks: dict[int, BoolArray]  # filter position -> mask over the index
    static_keep: BoolArray
    score: FloatArray
    # (keep, prepared) of each filter that reads the plan state, and (reserve, prepared)
    # of each consumer: the per-unit loop calls these and nothing else.
    checks: list[tuple[Any, Any]] = field(default_factory=list)
    takes: list[tuple[Any, Any]] = field(default_factory=list)
    created: list[_Judged] = field(default_factory=list)  # when judged one by one
    # Scorers that read the plan state, scored per unit.
    dynamic: list[tuple[Scorer, Any]] = field(default_factory=list)
    created_seen: int = 0  # how many of the state's created targets are judged
    created_last: Target | None = None  # the last of them (a fork may differ)
    # The created targets' verdicts and scores as arrays, grown as targets are created
    # (each judged once), so that a unit pays numpy, not a Python pass, for them.
    # (Empty to start with, and read-only: a compiled request never writes to them.)
    created_keep: NDArray[np.bool_] = field(default_factory=lambda: _NONE_CREATED)
    created_score: FloatArray = field(default_factory=lambda: _NO_SCORES)
    # The filters behind `checks` with their parts, and every consumer behind `takes`:
    # what engine/block.py asks whether a block of units can skip the per-unit judging.
    stepwise: list[tuple[Filter, Any]] = field(default_factory=list)
    consumers: list[Filter] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class _CompilePlan:
    """The filters and scorers that a workload with requests of some kinds prepares:
    every other one has nothing to check for it. Each filter as (position, filter, its
    prepare and keep, static, its reserve if a consumer, whether it sees the static
    mask) and each scorer as (scorer, its prepare, static): bound once per set of kinds,
    as compile runs once per unit when every unit is a workload of its own."""

    filters: list[tuple[int, Filter, Any, Any, bool, Any, bool]]
    scorers: list[tuple[Scorer, Any, bool]]


@functools.lru_cache(maxsize=8)
def _shared(size: int, value: bool | float) -> NDArray[Any]:
    """A read-only array of `size` times `value` (all-true keep, all-zero score), shared
    by every request that has no static mask or score of its own."""
    found = np.full(size, value, dtype=bool if isinstance(value, bool) else np.float64)
    found.flags.writeable = False
    return found


class Pipeline:
    def __init__(self, index: TargetIndex, families: Sequence[Family] = FAMILIES) -> None:
        self.index = index
        self.families = tuple(families)
        bound = [family.bind(index) for family in self.families]
        self.filters: list[Filter] = [f for b in bound for f in b.filters]
        self.scorers: list[Scorer] = [s for b in bound for s in b.scorers]
        self._consumers = [isinstance(f, Consumer) for f in self.filters]
        self._filter_plan = [
            (f, f.needs, f.static, consumer)
            for f, consumer in zip(self.filters, self._consumers, strict=True)
        ]
        needs = [f.needs for f in self.filters] + [s.needs for s in self.scorers]
        self._kinds = {kind for kind in needs if kind is not None}
        # The filters that want the workload's static mask (Filter.with_static).
        self._sees_static = [type(f).with_static is not Filter.with_static for f in self.filters]
        self._plans: dict[frozenset[type], _CompilePlan] = {}

    def kept_by(self, request: CompiledRequest) -> Callable[[Workload], Sequence[Target]]:
        """StateWorld's `statically_kept` for the request's workload: the index's targets
        its static filters keep, from the masks compiled for it."""
        targets = self.index.targets
        found: list[Target] = []

        def kept(workload: Workload) -> Sequence[Target]:
            assert workload.name == request.workload.name, "asked of the request's workload"
            if not found:  # built on first use, once: the static masks never change
                found.extend(targets[p] for p in np.flatnonzero(request.static_keep).tolist())
            return found

        return kept

    def filter(self, name: str) -> Filter:
        for f in self.filters:
            if f.name == name:
                return f
        raise KeyError(name)

    def _plan_for(self, kinds: frozenset[type]) -> _CompilePlan:
        """What compile asks of a workload with requests of these kinds: the filters and
        scorers it prepares, the others having nothing to check for it (no constraints,
        no namespace, no tags), as kube-scheduler plugins skip themselves in PreFilter."""
        found = self._plans.get(kinds)
        if found is None:
            filters = [
                (
                    position,
                    f,
                    f.prepare,
                    f.keep,
                    static,
                    f.reserve if consumer else None,  # type: ignore[attr-defined]
                    self._sees_static[position],
                )
                for position, (f, needs, static, consumer) in enumerate(self._filter_plan)
                if needs is None or needs in kinds
            ]
            scorers = [
                (s, s.prepare, s.static)
                for s in self.scorers
                if s.needs is None or s.needs in kinds
            ]
            found = self._plans[kinds] = _CompilePlan(filters, scorers)
        return found

    def compile(self, workload: Workload) -> CompiledRequest:
        # When every unit is a workload of its own this runs once per unit: the loops
        # read what bind time fixed (each filter's needs, staticness, consumer) and what
        # the workload's kinds of request fixed, once per set of kinds.
        size = len(self.index)
        plan = self._plan_for(workload.kinds)
        prepared: list[Any] = [None] * len(self.filters)
        static_masks: dict[int, BoolArray] = {}
        # The static filters' masks ANDed; `owned` once it is an array of this request's
        # own (a single mask is shared, read-only, with the filter that made it).
        kept: BoolArray | None = None
        owned = False
        dynamic_filters: list[tuple[int, Filter, Any, bool]] = []
        takes: list[tuple[Any, Any]] = []
        consumers: list[Filter] = []
        for position, f, prepare, keep_of, static, reserve, sees in plan.filters:
            part = prepare(workload)
            if part is None:
                continue
            prepared[position] = part
            if static:
                mask = keep_of(part, _NO_STATE)
                static_masks[position] = mask
                if kept is None:
                    kept = mask
                elif owned:
                    np.logical_and(kept, mask, out=kept)
                else:
                    kept, owned = np.logical_and(kept, mask), True
            else:
                dynamic_filters.append((position, f, keep_of, sees))
            if reserve is not None:
                takes.append((reserve, part))
                consumers.append(f)
        keep = kept if kept is not None else _shared(size, True)
        if not owned and keep.flags.writeable:
            keep = keep.copy()  # a filter's own array: never shared writable
        checks: list[tuple[Any, Any]] = []
        stepwise: list[tuple[Filter, Any]] = []
        for position, f, keep_of, sees_static in dynamic_filters:
            if sees_static:
                prepared[position] = f.with_static(prepared[position], keep, self.index)
            checks.append((keep_of, prepared[position]))
            stepwise.append((f, prepared[position]))
        scores: list[FloatArray] = []
        dynamic: list[tuple[Scorer, Any]] = []
        for scorer, prepare_score, static_score in plan.scorers:
            part = prepare_score(workload)
            if part is None:
                continue
            if static_score:
                scores.append(scorer.score(part))
            else:
                dynamic.append((scorer, part))
        # A score is never written to once compiled, so one scorer's array is the sum.
        if len(scores) == 1:
            score = scores[0]
        elif not scores:
            score = _shared(size, 0.0)
        else:
            score = np.zeros(size, dtype=np.float64)
            for more in scores:
                score += more
        return CompiledRequest(
            workload,
            prepared,
            static_masks,
            keep,
            score,
            checks,
            takes,
            dynamic=dynamic,
            stepwise=stepwise,
            consumers=consumers,
        )

    def _created(self, request: CompiledRequest, state: PlanState) -> list[_Judged]:
        """The static verdicts on the state's created targets: each judged once per
        request. Created targets only grow during a plan; a fork that created others
        (the last one seen differs) is judged anew."""
        made = state.created
        seen = request.created_seen
        if seen and (seen > len(made) or request.created_last is not made[seen - 1].target):
            request.created.clear()
            request.created_keep = request.created_keep[:0]
            request.created_score = request.created_score[:0]
            seen = 0
        if seen == len(made):
            return request.created
        scorers = [
            s
            for s in self.scorers
            if s.static and (s.needs is None or request.workload.request(s.needs) is not None)
        ]
        fresh = made[seen:]
        request.created_seen, request.created_last = len(made), made[-1].target
        if not request.static_masks and not scorers:
            # Nothing static to ask of a created target (a Juju unit, say): every one
            # passes with score 0, at numpy's cost rather than a judgement each.
            request.created_keep = np.concatenate(
                [request.created_keep, np.ones(len(fresh), dtype=bool)]
            )
            request.created_score = np.concatenate([request.created_score, np.zeros(len(fresh))])
            return request.created
        world = StateWorld(state)
        judged = [
            _Judged(
                created.target,
                [
                    self.filters[p].judge(request.workload, created.target, world)
                    for p in request.static_masks
                ],
                float(sum(s.judge(request.workload, created.target) for s in scorers)),
            )
            for created in fresh
        ]
        request.created.extend(judged)
        request.created_keep = np.concatenate(
            [
                request.created_keep,
                np.array([all(r is None for r in j.reasons) for j in judged], dtype=bool),
            ]
        )
        request.created_score = np.concatenate(
            [request.created_score, np.array([j.score for j in judged], dtype=np.float64)]
        )
        return request.created

    def static_keep(self, request: CompiledRequest, state: PlanState) -> BoolArray:
        if not state.created:
            return request.static_keep
        self._created(request, state)
        return np.concatenate([request.static_keep, request.created_keep])

    def scores(self, request: CompiledRequest, state: PlanState) -> FloatArray:
        if not state.created:  # the usual case: nothing created, nothing to add
            score = request.score
        else:
            self._created(request, state)
            score = np.concatenate([request.score, request.created_score])
        for scorer, part in request.dynamic:
            score = score + scorer.score_in(part, state)
        return score

    def static_scores(self, request: CompiledRequest, state: PlanState) -> FloatArray:
        """What `scores` adds the dynamic scorers to (never to be written to)."""
        if not state.created:
            return request.score
        self._created(request, state)
        return np.concatenate([request.score, request.created_score])

    def feasible(self, request: CompiledRequest, state: PlanState) -> BoolArray:
        keep = request.static_keep if not state.created else self.static_keep(request, state)
        owned = False  # the first AND makes the unit's own array, the others write to it
        for check, part in request.checks:
            if owned:
                keep &= check(part, state)
            else:
                keep, owned = keep & check(part, state), True
        return keep

    def reserve(
        self, request: CompiledRequest, state: PlanState, positions: int | NDArray[np.intp]
    ) -> None:
        for take, part in request.takes:
            take(part, state, positions)

    def releasable(self, request: CompiledRequest) -> bool:
        """Whether a unit of `request` can leave a state in place (`release`)."""
        return all(
            isinstance(f, Consumer) and f.can_release(part)
            for f, (_, part) in zip(request.consumers, request.takes, strict=True)
        )

    def release(self, request: CompiledRequest, state: PlanState, position: int) -> None:
        """Give back what one unit of `request` took at `position`: every consumer's
        share (only when `releasable`)."""
        for f, (_, part) in zip(request.consumers, request.takes, strict=True):
            assert isinstance(f, Consumer)
            f.release(part, state, position)

    def masks(self, request: CompiledRequest, state: PlanState) -> list[BoolArray]:
        """Every filter's own mask, in pipeline order (for explanations, not the hot path)."""
        size = state.size
        created = self._created(request, state) if state.created else []
        masks = []
        static_order = {p: i for i, p in enumerate(request.static_masks)}
        for position, f in enumerate(self.filters):
            part = request.prepared[position]
            if part is None:
                masks.append(np.ones(size, dtype=bool))
            elif position in request.static_masks:
                mask = request.static_masks[position]
                if created:
                    i = static_order[position]
                    extra = np.array([j.reasons[i] is None for j in created], dtype=bool)
                    mask = np.concatenate([mask, extra])
                masks.append(mask)
            else:
                masks.append(f.keep(part, state))
        return masks

    def reason(
        self, request: CompiledRequest, filter_position: int, position: int, state: PlanState
    ) -> Reason:
        """Why filter `filter_position` rejects the target at `position`."""
        f = self.filters[filter_position]
        target = state.target(position)
        if position >= len(self.index) and f.static:
            # Created targets have no row in the static columns: ask the one-target rule.
            found = f.judge(request.workload, target, StateWorld(state))
            assert found is not None
            return found
        return f.reason(request.workload, target, position, state)


class _NoState:
    """Static filters never read the plan state; this makes that visible if one does."""

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(f"a static filter read the plan state ({name})")


_NO_STATE: Any = _NoState()
