"""One loop for every mode: workloads in order, each placed by its mode's strategy.

A plan, a simulation (`placed simulate`) and the reference oracle all run this loop. What
differs is the **judge**: the pipeline (numpy over columns, with rendezvous selection
over arrays) or the reference (every rule one target at a time, as the seeds'
pseudo-code reads). The strategies own the bookkeeping that must be the same for both:
which units stay after a change, what lands in the plan state, when a fallback is
asked, how an unplaced unit is reported.

- allocation: one unit at a time; each consumes capacity and lands in the plan state,
  so later units see it (capacity, `distinct`). Nothing feasible: the families'
  fallbacks may create a target or change the state, and the unit is judged again.
- mapping: units consume nothing, so one judgement serves every unit of a workload and
  only the rendezvous ranking differs; `max_load` makes it a stable assignment under a
  cap (engine/balance.py), and after a change a repair of the previous owners.
- every: one unit on every compatible target.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from placed.engine import balance
from placed.engine.block import Following
from placed.engine.outcomes import DedicationCreated, Outcome, Placement, PlanResult, Unplaced
from placed.engine.selection import U64, top_and_feasible, top_candidates
from placed.engine.state import PlanState
from placed.model import CONTAINER_KINDS, Workload
from placed.policy.base import BoolArray, Created, Family, FloatArray, Retry
from placed.policy.dedication import DedicationState

Progress = Callable[[int, int], None]
Positions = NDArray[np.intp]
# A reason names at most this many targets a unit ranked above the one it got.
_NAMED = 5


class Judge(Protocol):
    """How a unit's candidates are judged and chosen: the pipeline or the reference."""

    families: tuple[Family, ...]

    def request(self, workload: Workload) -> Any: ...

    def feasible(self, request: Any, state: PlanState) -> BoolArray: ...

    def scores(self, request: Any, state: PlanState) -> FloatArray: ...

    def reserve(self, request: Any, state: PlanState, positions: int | Positions) -> None: ...

    def choose(self, unit: str, top: Positions, state: PlanState) -> int:
        """The position, among the top-scoring `top`, that the unit goes to."""
        ...

    def choose_each(self, units: list[str], top: Positions, state: PlanState) -> Positions:
        """Plain mapping: for each unit, an index into `top`."""
        ...

    def assign_bounded(
        self, units: list[str], top: Positions, cap: int, state: PlanState
    ) -> tuple[Positions, NDArray[np.bool_] | None]:
        """max_load: each unit's index into `top`, and (if known) which units a full
        target sent past their first choice."""
        ...

    def repair(
        self,
        units: list[str],
        top: Positions,
        previous: Positions,
        joined: NDArray[np.bool_],
        cap: int,
        state: PlanState,
    ) -> Positions: ...

    def unplaced(self, request: Any, unit: str, state: PlanState) -> Unplaced: ...

    def block(
        self, request: Any, workload: Workload, units: list[str], state: PlanState
    ) -> list[Placement]:
        """Allocation: place the leading `units` together where that provably gives what
        one at a time gives (engine/block.py); the placements made, [] for none."""
        ...

    def follow(self, request: Any, state: PlanState) -> Following | None:
        """Allocation: verdicts kept across a workload's units, for those judged one at a
        time (None: judge each unit in full)."""
        ...

    def unit_hashes(self, units: list[str]) -> U64: ...


@dataclass
class Context:
    judge: Judge
    state: PlanState
    result: PlanResult
    # A simulation: the outcomes before the change, and the state before it.
    previous: dict[str, Outcome] = field(default_factory=dict)
    before: PlanState | None = None
    # Units that ran (a spec's running:) on targets a simulation took down: placed again,
    # before the workload's own units.
    again: dict[str, list[str]] = field(default_factory=dict)
    progress: Progress | None = None
    done: int = 0
    total: int = 0
    # `placed explain`: the unit to watch, and the state it was judged in when reached.
    watch: str | None = None
    seen: PlanState | None = None
    # Stop once the watched unit is judged: what comes after it cannot change how it was
    # judged, and an explanation reads nothing else (`trace(..., brief=True)`).
    until_watched: bool = False
    # The verdicts kept across the units of the allocation workload being placed.
    following: Following | None = None

    def look(self, unit: str | None = None, workload: Workload | None = None) -> None:
        """Keep a copy of the state if the watched unit is about to be judged (a unit of
        a mapping or every workload: all are judged in the state before the first)."""
        if self.watch is None or self.seen is not None:
            return
        if unit == self.watch or (
            workload is not None and self.watch.startswith(f"{workload.name}/")
        ):
            self.seen = self.state.fork()
            # As the unit is judged: a rule that differs per unit (a `to:` entry) reads it.
            self.seen.judging = unit


class Strategy(ABC):
    @abstractmethod
    def place(self, workload: Workload, context: Context) -> list[Outcome]: ...


def tied_names(top: Positions, state: PlanState) -> tuple[str, ...]:
    """The names a placement gives of the tied top-scoring targets: read for the first
    few positions only, however many tie."""
    if top.size <= 1:
        return ()
    named = top[: _NAMED + 1].tolist()
    ids = state.index.ids
    if max(named) < len(ids):
        # Targets of the index (no created one): one lookup for all, as a tuple.
        found: tuple[str, ...] = itemgetter(*named)(ids)
        return found
    return tuple(state.target_id(p) for p in named)


def _placement(
    workload: Workload,
    unit: str,
    position: int,
    feasible: int,
    top: Positions,
    score: FloatArray,
    state: PlanState,
    via: str = "policy",
) -> Placement:
    target = state.target(position)
    note = ""
    noted = state.note(unit)
    if noted is not None:
        via = via if via != "policy" else noted[0]
        note = noted[1]
    return Placement(
        workload.name,
        unit,
        target.id,
        float(score[position]),
        feasible,
        state.size,
        tied_names(top, state),
        via=via,
        container=target.kind if target.kind in CONTAINER_KINDS else None,
        note=note,
        details=tuple(state.details(unit).items()),
    )


def _all_unplaced(
    context: Context, workload: Workload, request: Any, keys: list[str]
) -> list[Outcome]:
    if not keys:
        return []
    failed = context.judge.unplaced(request, keys[0], context.state)
    for key in keys:
        _report(context.judge.families, workload, key, context.state, failed.summary)
    return [Unplaced(failed.workload, key, failed.summary, failed.filtered) for key in keys]


def _stays(previous: dict[str, Outcome], key: str, state: PlanState) -> bool:
    """Whether a simulation keeps the unit where it is rather than placing it again."""
    return isinstance(previous.get(key), Placement) and key in state.units


class Allocation(Strategy):
    def place(self, workload: Workload, context: Context) -> list[Outcome]:
        judge, state = context.judge, context.state
        request = judge.request(workload)
        outcomes: list[Outcome] = []
        failed: Unplaced | None = None
        previous, watching = context.previous, context.watch is not None
        keys = [
            *context.again.get(workload.name, ()),
            *(workload.unit_key(i) for i in range(workload.units)),
        ]
        start = 0
        early: dict[str, Outcome] = {}
        if not previous and not watching:
            # Not in a simulation (a unit that stays is not placed again) nor while a unit
            # is watched (its state is copied just before it is judged).
            outcomes.extend(judge.block(request, workload, keys, state))
            start = len(outcomes)
            if start and context.progress is not None:
                context.progress(context.done + start, context.total)
        elif not watching:
            # A simulation: the units that stay are not placed again, and they change
            # nothing in the state, so the others go in blocks in their order, as the
            # loop would place them around those that stay (a drain's hundred units).
            fresh = [key for key in keys if not _stays(previous, key, state)]
            early = {o.unit: o for o in judge.block(request, workload, fresh, state)}
        elif context.until_watched and context.watch in keys:
            # The units before the watched one in blocks, as a plan places them (the
            # state block placement leaves is the one the loop would): the watched unit
            # is then judged on its own, its state copied first.
            before = keys[: keys.index(context.watch)]
            outcomes.extend(judge.block(request, workload, before, state))
            start = len(outcomes)
        # Verdicts kept across units pay off from the second unit judged on.
        judged = len(keys) - start - len(early)
        context.following = judge.follow(request, state) if judged > 1 else None
        for count, key in enumerate(keys[start:], start):
            if context.until_watched and context.seen is not None:
                break
            if key in early:
                outcomes.append(early[key])
                continue
            if previous and _stays(previous, key, state):
                outcomes.append(previous[key])  # a simulation: it stays where it is
                continue
            if watching:
                context.look(key)
            if failed is not None:
                # Nothing changed since a unit of this workload failed with no fallback,
                # so it fails for the same reasons: explain once, reuse the summary.
                outcomes.append(Unplaced(workload.name, key, failed.summary, failed.filtered))
                _report(judge.families, workload, key, state, failed.summary)
                continue
            outcome, fell_back = self._one(workload, request, key, context)
            if isinstance(outcome, Unplaced) and not fell_back:
                failed = outcome
            outcomes.append(outcome)
            if context.progress is not None and count % 256 == 255:
                context.progress(context.done + count + 1, context.total)
        context.following = None
        return outcomes

    @staticmethod
    def _one(workload: Workload, request: Any, key: str, context: Context) -> tuple[Outcome, bool]:
        """(where the unit went, whether a fallback was tried)."""
        state = context.state
        state.judging = key
        try:
            return Allocation._judged(workload, request, key, context)
        finally:
            state.judging = None

    @staticmethod
    def _judged(
        workload: Workload, request: Any, key: str, context: Context
    ) -> tuple[Outcome, bool]:
        judge, state = context.judge, context.state
        via = "policy"
        fell_back = False
        while True:
            following = context.following
            if following is not None and following.size != state.size:
                following = context.following = None  # a target was created
            ranked = following.ranked(state) if following is not None else None
            if ranked is not None:
                keep, score, top = ranked
                feasible = int(np.count_nonzero(keep))
            else:
                keep = (
                    following.feasible(state)
                    if following is not None
                    else judge.feasible(request, state)
                )
                score = judge.scores(request, state)
                top, feasible = top_and_feasible(keep, score)
            if top.size:
                position = judge.choose(key, top, state)
                if following is not None:
                    following.land(position)
                state.place(key, workload.name, position)
                judge.reserve(request, state, position)
                placed = _placement(workload, key, position, feasible, top, score, state, via)
                return placed, fell_back
            if fell_back:
                break
            fell_back = True
            # A fallback may change the state anywhere (a dedication, a new target).
            context.following = None
            found = _fallback(judge.families, workload, key, state)
            if found is None:
                break
            if isinstance(found, Created):
                for first in found.before:
                    state.create(first, key, found.constraints)
                state.create(found.target, key, found.constraints, found.parent)
                via = found.via
            if context.watch == key and context.seen is not None:
                # The unit is judged again in what the fallback made (a host dedicated to
                # its account, a target created): `placed explain` shows that judgement,
                # the one its placement came from, not the one that failed.
                context.seen = state.fork()
                context.seen.judging = key
        failed = judge.unplaced(request, key, state)
        _report(judge.families, workload, key, state, failed.summary)
        return failed, fell_back


def _report(
    families: tuple[Family, ...], workload: Workload, key: str, state: PlanState, summary: str
) -> None:
    for family in families:
        family.unplaced(workload, key, state, summary)


def _fallback(
    families: tuple[Family, ...], workload: Workload, key: str, state: PlanState
) -> Created | Retry | None:
    for family in families:
        found = family.fallback(workload, key, state, len(state.created))
        if found is not None:
            return found
    return None


class Mapping(Strategy):
    def place(self, workload: Workload, context: Context) -> list[Outcome]:
        judge, state = context.judge, context.state
        context.look(workload=workload)
        keys = [workload.unit_key(i) for i in range(workload.units)]
        if context.until_watched:
            # Mapping units take nothing and change nothing of the state, so a workload
            # judged before the watched unit's cannot change how it is judged; and without
            # max_load each unit's owner is its own rendezvous choice, whatever the others'.
            if context.seen is None or context.watch not in keys:
                return []
            if workload.max_load is None:
                keys = [context.watch]
        request = judge.request(workload)
        keep = judge.feasible(request, state)
        score = judge.scores(request, state)
        top = top_candidates(keep, score)
        if top.size == 0:
            return _all_unplaced(context, workload, request, keys)
        if workload.max_load is None or top.size == 1:
            # One candidate: nothing to balance.
            chosen = (
                judge.choose_each(keys, top, state)
                if top.size > 1
                else np.zeros(len(keys), dtype=np.intp)
            )
            return self._placements(judge, workload, keys, keep, top, score, chosen, state)
        cap = balance.load_cap(len(keys), top.size, workload.max_load)
        passed: NDArray[np.bool_] | None = None
        if context.before is None:
            chosen, passed = judge.assign_bounded(keys, top, cap, state)
        else:
            chosen = self._repair(workload, request, keys, top, cap, context)
        return self._placements(judge, workload, keys, keep, top, score, chosen, state, cap, passed)

    @staticmethod
    def _repair(
        workload: Workload,
        request: Any,
        keys: list[str],
        top: Positions,
        cap: int,
        context: Context,
    ) -> Positions:
        """After a change: repair the owners before it rather than plan afresh, so that
        only units of lost targets, or units going to joining targets, move."""
        judge, state, before = context.judge, context.state, context.before
        assert before is not None
        old_top = top_candidates(judge.feasible(request, before), judge.scores(request, before))
        joined = ~np.isin(top, old_top)
        slot = {state.target_id(int(p)): i for i, p in enumerate(top.tolist())}
        previous = np.array(
            [
                slot.get(kept.target, balance.UNPLACED)
                if isinstance(kept := context.previous.get(key), Placement)
                else balance.UNPLACED
                for key in keys
            ],
            dtype=np.intp,
        )
        return judge.repair(keys, top, previous, joined, cap, state)

    @staticmethod
    def _placements(
        judge: Judge,
        workload: Workload,
        keys: list[str],
        keep: BoolArray,
        top: Positions,
        score: FloatArray,
        chosen: Positions,
        state: PlanState,
        cap: int | None = None,
        passed: NDArray[np.bool_] | None = None,
    ) -> list[Outcome]:
        """Placements for mapping units; `chosen` indexes `top` per unit."""
        feasible = int(np.count_nonzero(keep))
        tied = tied_names(top, state)
        best = float(score[top[0]])
        ids = [state.target_id(p) for p in top.tolist()]
        name, total = workload.name, state.size
        if cap is None:
            return [
                Placement(name, key, ids[c], best, feasible, total, tied)
                for key, c in zip(keys, chosen.tolist(), strict=True)
            ]
        unit_hashes = judge.unit_hashes(keys)
        candidate_hashes = state.hashes[top]
        # After a plan only units a full target turned away can be off their first choice;
        # after a repair any unit can (a target that joined may now outrank its owner).
        ranks = balance.choice_ranks(unit_hashes, candidate_hashes, chosen, passed)
        later = np.flatnonzero(ranks)
        above = balance.ranked_above(unit_hashes, candidate_hashes, chosen, later, _NAMED)
        ahead: dict[int, tuple[str, ...]] = {
            int(u): tuple(ids[a] for a in row if a != balance.UNPLACED)
            for u, row in zip(later.tolist(), above.tolist(), strict=True)
        }
        return [
            Placement(
                name,
                key,
                ids[c],
                best,
                feasible,
                total,
                tied,
                cap=cap,
                choice=rank + 1,
                ahead=ahead.get(i, ()),
            )
            for i, (key, c, rank) in enumerate(
                zip(keys, chosen.tolist(), ranks.tolist(), strict=True)
            )
        ]


def owners_again(
    judge: Judge,
    workload: Workload,
    keys: list[str],
    state: PlanState,
    current: dict[str, str] | None = None,
) -> list[Outcome] | None:
    """Where some units of a mapping workload without max_load go on `state`, as
    `Mapping.place` would place them among all of its units (each unit's owner is its
    own rendezvous choice, whatever the others'); with `current` (where each unit is),
    only those whose owner changes. None when no target takes them."""
    assert workload.mode == "mapping" and workload.max_load is None
    request = judge.request(workload)
    keep = judge.feasible(request, state)
    score = judge.scores(request, state)
    top = top_candidates(keep, score)
    if top.size == 0:
        return None
    chosen = (
        judge.choose_each(keys, top, state) if top.size > 1 else np.zeros(len(keys), dtype=np.intp)
    )
    if current is not None:
        owners = [state.target_id(p) for p in top.tolist()]
        moving = [
            k
            for k, (key, c) in enumerate(zip(keys, chosen.tolist(), strict=True))
            if current.get(key) != owners[c]
        ]
        keys, chosen = [keys[k] for k in moving], chosen[moving]
    return Mapping._placements(judge, workload, keys, keep, top, score, chosen, state)


def owners_bounded(
    context: Context, workload: Workload, before: PlanState | None, current: dict[str, str]
) -> tuple[list[Outcome], dict[str, str]]:
    """Where a mapping workload with max_load puts its units on `context.state` after a
    change of targets, kept to those whose owner differs from `current` (where each unit
    is) and those left with no owner; and where a plan of the world `before` put each.

    With `before`, as `placed simulate` puts them (engine/rebalance.py): the owners a
    plan of the world before the change gives, repaired under the cap (only units of lost
    targets, or units going to joining targets, move). Without, as a plan of the world
    after the change assigns them afresh (a drain's)."""
    assert workload.mode == "mapping" and workload.max_load is not None
    previous: dict[str, Outcome] = {}
    if before is not None:
        planned = Context(context.judge, before, context.result)
        previous = {outcome.unit: outcome for outcome in Mapping().place(workload, planned)}
    after = Context(context.judge, context.state, context.result, previous, before)
    found = [
        outcome
        for outcome in Mapping().place(workload, after)
        if not isinstance(outcome, Placement) or current.get(outcome.unit) != outcome.target
    ]
    owners = {unit: o.target for unit, o in previous.items() if isinstance(o, Placement)}
    return found, owners


class Every(Strategy):
    def place(self, workload: Workload, context: Context) -> list[Outcome]:
        judge, state = context.judge, context.state
        context.look(workload=workload)
        request = judge.request(workload)
        keep = judge.feasible(request, state)
        staying = [
            kept
            for kept in context.previous.values()
            if kept.workload == workload.name
            and isinstance(kept, Placement)
            and kept.unit in state.units
        ]
        if staying:
            keep = keep.copy()
            for kept in staying:
                keep[state.units[kept.unit][1]] = False
        positions = np.flatnonzero(keep)
        if positions.size == 0:
            if staying:
                return list(staying)
            return [judge.unplaced(request, f"{workload.name}/*", state)]
        judge.reserve(request, state, positions)
        score = judge.scores(request, state)
        feasible, total = int(positions.size), state.size
        outcomes: list[Outcome] = list(staying)
        for p in positions.tolist():
            target_id = state.target_id(p)
            unit = f"{workload.name}/{target_id}"
            state.place(unit, workload.name, p)
            outcomes.append(
                Placement(
                    workload.name, unit, target_id, float(score[p]), feasible, total, (), "every"
                )
            )
        return outcomes


STRATEGIES: dict[str, Strategy] = {
    "allocation": Allocation(),
    "mapping": Mapping(),
    "every": Every(),
}


def run(context: Context, workloads: Iterable[Workload]) -> list[Outcome]:
    """Place every workload in order, each by its mode's strategy."""
    chosen = list(workloads)
    context.total = sum(w.units for w in chosen if w.mode != "every")
    outcomes: list[Outcome] = []
    for workload in chosen:
        if context.until_watched and context.seen is not None:
            break
        outcomes.extend(STRATEGIES[workload.mode].place(workload, context))
        if workload.mode != "every":
            context.done += workload.units
            if context.progress is not None:
                context.progress(context.done, context.total)
    # What the policies found while placing (a directive that fell back), after what
    # lint found before.
    context.result.warnings.extend(context.state.notices)
    state = context.state
    context.result.events.extend(state.events)
    dedication = state.found_family_state(DedicationState)
    context.result.dedications_created.extend(
        DedicationCreated(
            state.target_id(position), owner.account or "", owner.implicit, owner.domain
        )
        for position, owner in (dedication.dedicated if dedication is not None else ())
    )
    return outcomes
