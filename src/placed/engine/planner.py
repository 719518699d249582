"""The planner: places units one after another, reserving capacity as it goes."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from placed.engine import balance
from placed.engine.explain import filtered_counts, first_rejections, summarize
from placed.engine.index import TargetIndex
from placed.engine.pipeline import CompiledRequest, Pipeline
from placed.engine.selection import (
    break_tie,
    stable_hash64,
    stable_hashes,
    top_candidates,
)
from placed.model import Notice, Spec, Workload
from placed.policy.base import TargetState
from placed.policy.lint import lint
from placed.policy.namespaces import deployment_namespace

Progress = Callable[[int, int], None]
_COMPILED_KEPT = 16
# A reason names at most this many targets a unit ranked above the one it got.
_NAMED = 5


@dataclass(frozen=True, slots=True)
class Placement:
    workload: str
    unit: str
    target: str
    score: float
    feasible: int  # targets that passed every filter
    total: int
    tied: tuple[str, ...]  # the top-scoring targets when more than one, else empty
    via: str = "policy"
    # Bounded-load mapping (max_load): the per-target cap, and the targets the unit ranks
    # above the one it got (full ones), when it did not get its first choice.
    cap: int | None = None
    choice: int = 1
    ahead: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Unplaced:
    workload: str
    unit: str
    summary: str
    filtered: dict[str, int]


Outcome = Placement | Unplaced


@dataclass
class PlanResult:
    planner: Planner
    outcomes: list[Outcome] = field(default_factory=list)
    warnings: list[Notice] = field(default_factory=list)

    @property
    def placements(self) -> list[Placement]:
        return [o for o in self.outcomes if isinstance(o, Placement)]

    @property
    def unplaced(self) -> list[Unplaced]:
        return [o for o in self.outcomes if isinstance(o, Unplaced)]

    def by_unit(self) -> dict[str, Outcome]:
        return {o.unit: o for o in self.outcomes}

    def to_dict(self) -> dict[str, Any]:
        return {
            "placements": [self.planner.describe(p) for p in self.placements],
            "unplaced": [
                {
                    "workload": u.workload,
                    "unit": u.unit,
                    "summary": u.summary,
                    "filtered": u.filtered,
                }
                for u in self.unplaced
            ],
            "new_targets": [],
            "warnings": [w.to_dict() for w in self.warnings],
            "dedications_created": [],
        }


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _few(ids: Iterable[str], limit: int = 5) -> tuple[str, ...]:
    # Enough names to read in a reason; one name past the limit tells `reason` to add "...".
    out = []
    for target_id in ids:
        out.append(target_id)
        if len(out) > limit:
            break
    return tuple(out)


class Planner:
    def __init__(self, spec: Spec, pipeline: Pipeline | None = None) -> None:
        self.spec = spec
        self.index = TargetIndex.for_spec(spec)
        self.pipeline = pipeline or Pipeline.default(self.index)
        self.workloads = {w.name: w for w in spec.workloads}
        self._compiled: OrderedDict[str, CompiledRequest] = OrderedDict()

    def request(self, workload: Workload) -> CompiledRequest:
        compiled = self._compiled.get(workload.name)
        if compiled is None:
            compiled = self._compiled[workload.name] = self.pipeline.compile(workload)
            # A compiled request holds several arrays over all targets; keeping one per
            # workload would cost gigabytes for ten thousand workloads on ten thousand
            # targets, and a workload's units are placed together anyway.
            if len(self._compiled) > _COMPILED_KEPT:
                self._compiled.popitem(last=False)
        else:
            self._compiled.move_to_end(workload.name)
        return compiled

    def initial_state(self) -> TargetState:
        return self.index.initial_state()

    # -- placing ---------------------------------------------------------------------

    def plan(
        self, state: TargetState | None = None, progress: Progress | None = None
    ) -> PlanResult:
        state = state if state is not None else self.initial_state()
        result = PlanResult(self, warnings=lint(self.spec))
        total = sum(w.units for w in self.spec.workloads if w.mode != "every")
        done = 0
        for workload in self.spec.workloads:
            if workload.mode == "every":
                result.outcomes.extend(self.place_everywhere(workload, state))
                continue
            keys = [workload.unit_key(i) for i in range(workload.units)]
            if workload.mode == "mapping":
                result.outcomes.extend(self.place_mapped(workload, keys, state))
            else:
                result.outcomes.extend(
                    self.place_allocated(workload, keys, state, progress, done, total)
                )
            done += workload.units
            if progress is not None:
                progress(done, total)
        return result

    def place_allocated(
        self,
        workload: Workload,
        keys: list[str],
        state: TargetState,
        progress: Progress | None = None,
        done: int = 0,
        total: int = 0,
    ) -> list[Outcome]:
        request = self.request(workload)
        outcomes: list[Outcome] = []
        for count, key in enumerate(keys):
            keep = self.pipeline.feasible(request, state)
            top = top_candidates(keep, request.score)
            if top.size == 0:
                # Nothing changed since this unit failed, so every later unit of the same
                # workload fails for the same reasons: explain once, reuse the summary.
                failed = self._unplaced(request, key, state)
                outcomes.append(failed)
                outcomes.extend(
                    Unplaced(workload.name, other, failed.summary, failed.filtered)
                    for other in keys[count + 1 :]
                )
                break
            position = break_tie(stable_hash64(key), top, self.index.hashes)
            self.pipeline.reserve(request, state, position)
            outcomes.append(self._placement(request, key, position, keep, top))
            if progress is not None and count % 256 == 255:
                progress(done + count + 1, total)
        return outcomes

    def place_mapped(
        self, workload: Workload, keys: list[str], state: TargetState
    ) -> list[Outcome]:
        """Mapping units consume nothing, so all units of a workload see the same
        candidates; only the rendezvous ranking differs per unit."""
        request = self.request(workload)
        keep = self.pipeline.feasible(request, state)
        top = top_candidates(keep, request.score)
        if top.size == 0:
            return self._all_unplaced(request, keys, state)
        if workload.max_load is not None and top.size > 1:
            cap = balance.load_cap(len(keys), top.size, workload.max_load)
            unit_hashes = stable_hashes(keys)
            chosen, passed = balance.stable_assignment_passes(
                unit_hashes, self.index.hashes[top], cap
            )
            return self._mapped(request, keys, keep, top, chosen, cap, unit_hashes, passed)
        chosen, _ = balance.first_choices(stable_hashes(keys), self.index.hashes[top])
        return self._mapped(request, keys, keep, top, chosen)

    def remap_bounded(
        self,
        workload: Workload,
        keys: list[str],
        owners: dict[str, str],
        before: TargetState,
        after: TargetState,
    ) -> list[Outcome]:
        """A bounded-load mapping workload after a change: repair `owners` (unit -> target
        before the change) rather than plan afresh, so that only units of lost targets,
        or units going to joining targets, move."""
        request = self.request(workload)
        keep = self.pipeline.feasible(request, after)
        top = top_candidates(keep, request.score)
        if top.size == 0:
            return self._all_unplaced(request, keys, after)
        if top.size == 1:  # one candidate: nothing to balance, as in place_mapped
            return self._mapped(request, keys, keep, top, np.zeros(len(keys), dtype=np.intp))
        cap = balance.load_cap(len(keys), top.size, workload.max_load or 1.0)
        old_top = top_candidates(self.pipeline.feasible(request, before), request.score)
        joined = ~np.isin(top, old_top)
        slot = {int(p): i for i, p in enumerate(top.tolist())}
        previous = np.array(
            [
                slot.get(self.index.position[owners[key]], balance.UNPLACED)
                if key in owners
                else balance.UNPLACED
                for key in keys
            ],
            dtype=np.intp,
        )
        unit_hashes = stable_hashes(keys)
        chosen = balance.repair(unit_hashes, self.index.hashes[top], previous, joined, cap)
        return self._mapped(request, keys, keep, top, chosen, cap, unit_hashes)

    def _mapped(
        self,
        request: CompiledRequest,
        keys: list[str],
        keep: Any,
        top: Any,
        chosen: Any,
        cap: int | None = None,
        unit_hashes: Any = None,
        passed: Any = None,
    ) -> list[Outcome]:
        """Placements for mapping units; `chosen` indexes `top` per unit."""
        feasible = int(np.count_nonzero(keep))
        tied = _few(self.index.ids[p] for p in top) if top.size > 1 else ()
        score = float(request.score[top[0]])
        ids = [self.index.ids[p] for p in top.tolist()]
        name = request.workload.name
        if cap is None:
            return [
                Placement(name, key, ids[c], score, feasible, len(self.index), tied)
                for key, c in zip(keys, chosen.tolist(), strict=True)
            ]
        candidate_hashes = self.index.hashes[top]
        # After a plan only units a full target turned away can be off their first choice;
        # after a repair any unit can (a target that joined may now outrank its owner).
        ranks = balance.choice_ranks(unit_hashes, candidate_hashes, chosen, passed)
        later = np.flatnonzero(ranks)
        above = balance.ranked_above(unit_hashes, candidate_hashes, chosen, later, _NAMED)
        ahead: dict[int, tuple[str, ...]] = {
            int(u): tuple(ids[a] for a in row if a != balance.UNPLACED)
            for u, row in zip(later.tolist(), above.tolist(), strict=True)
        }
        outcomes: list[Outcome] = []
        for i, (key, c, rank) in enumerate(zip(keys, chosen.tolist(), ranks.tolist(), strict=True)):
            outcomes.append(
                Placement(
                    name,
                    key,
                    ids[c],
                    score,
                    feasible,
                    len(self.index),
                    tied,
                    cap=cap,
                    choice=rank + 1,
                    ahead=ahead.get(i, ()),
                )
            )
        return outcomes

    def _all_unplaced(
        self, request: CompiledRequest, keys: list[str], state: TargetState
    ) -> list[Outcome]:
        if not keys:
            return []
        failed = self._unplaced(request, keys[0], state)
        return [
            Unplaced(request.workload.name, key, failed.summary, failed.filtered) for key in keys
        ]

    def place_everywhere(
        self, workload: Workload, state: TargetState, already_on: Iterable[str] = ()
    ) -> list[Outcome]:
        """`every` mode: one unit on each compatible target, named after the target.

        Targets in `already_on` run a unit of this workload already and are left alone.
        """
        request = self.request(workload)
        keep = self.pipeline.feasible(request, state)
        skip = [self.index.position[target_id] for target_id in already_on]
        if skip:
            keep = keep.copy()
            keep[skip] = False
        positions = np.flatnonzero(keep)
        if positions.size == 0:
            if skip:
                return []
            return [self._unplaced(request, f"{workload.name}/*", state)]
        self.pipeline.reserve(request, state, positions)
        feasible = int(positions.size)
        return [
            Placement(
                workload.name,
                f"{workload.name}/{self.index.ids[p]}",
                self.index.ids[p],
                float(request.score[p]),
                feasible,
                len(self.index),
                (),
                via="every",
            )
            for p in positions.tolist()
        ]

    def reserve(self, placement: Placement, state: TargetState) -> None:
        """Charge an existing placement's resources to `state` (used when re-planning)."""
        request = self.request(self.workloads[placement.workload])
        self.pipeline.reserve(request, state, self.index.position[placement.target])

    # -- explaining ------------------------------------------------------------------

    def describe(self, placement: Placement) -> dict[str, Any]:
        """A placement as the output contract shows it."""
        data: dict[str, Any] = {
            "workload": placement.workload,
            "unit": placement.unit,
            "target": placement.target,
            "score": placement.score,
            "via": placement.via,
            "reason": self.reason(placement),
        }
        if placement.cap is not None:
            data["balance"] = {
                "cap": placement.cap,
                "choice": placement.choice,
                "ranked_higher": list(placement.ahead),
            }
        workload = self.workloads[placement.workload]
        if workload.services or workload.cluster_namespace:
            target = self.index.targets[self.index.position[placement.target]]
            namespace = deployment_namespace(workload, target)
            if namespace is not None:
                data["namespace"] = namespace
        return data

    def reason(self, placement: Placement) -> str:
        workload = self.workloads[placement.workload]
        target = self.index.targets[self.index.position[placement.target]]
        terms = " ".join(
            text for text in (s.explain(workload, target) for s in self.pipeline.scorers) if text
        )
        parts = [f"score {placement.score:g}" + (f" ({terms})" if terms else "")]
        if placement.via == "every":
            parts.append(f"one of {placement.feasible}/{placement.total} compatible targets")
        elif placement.feasible == 1:
            parts.append(f"the only feasible target of {placement.total}")
        else:
            parts.append(f"best of {placement.feasible}/{placement.total} feasible targets")
        if placement.tied:
            named = ", ".join(placement.tied[:5]) + (", ..." if len(placement.tied) > 5 else "")
            parts.append(f"tie among {named} broken by rendezvous hash")
        if placement.cap is not None:
            limit = f"at most {placement.cap} units per target (max_load)"
            if placement.choice > 1:
                more = ", ..." if placement.choice - 1 > len(placement.ahead) else ""
                verb = "was" if placement.choice == 2 else "were"
                limit += (
                    f"; its {_ordinal(placement.choice)} choice ({', '.join(placement.ahead)}"
                    f"{more} ranked higher but {verb} full when it was placed)"
                )
            parts.append(limit)
        return "; ".join(parts)

    def _placement(
        self, request: CompiledRequest, key: str, position: int, keep: Any, top: Any
    ) -> Placement:
        return Placement(
            request.workload.name,
            key,
            self.index.ids[position],
            float(request.score[position]),
            int(np.count_nonzero(keep)),
            len(self.index),
            _few(self.index.ids[p] for p in top) if top.size > 1 else (),
        )

    def _unplaced(self, request: CompiledRequest, key: str, state: TargetState) -> Unplaced:
        available, rejections = first_rejections(self.pipeline, request, state)
        return Unplaced(
            request.workload.name,
            key,
            summarize(len(self.index), available, rejections),
            filtered_counts(rejections),
        )
