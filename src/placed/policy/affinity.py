"""`near: {workload: W, level: LEVEL}` and `avoid: {...}`: affinity and anti-affinity to
another workload's units, as kube-scheduler's inter-pod affinity.

A unit of W counts when it is under the same location at LEVEL as the target (the same
rack, zone, or with `level: target` the target itself), whether it landed earlier in the
same plan or already runs (`running:`).

- hard `near` rejects a target whose location holds no unit of W (a target with no
  location at LEVEL holds none). As in kube-scheduler, a workload near *itself* is let
  anywhere while it has no unit under any location at LEVEL: its first unit starts the
  group. (kube-scheduler lets the pod through only if no pod matches *any* of its terms;
  placed asks it of each term on its own.)
- hard `avoid` rejects a target whose location holds a unit of W; a target with no
  location at LEVEL is not constrained.
- Anti-affinity is symmetric, as kube-scheduler's required anti-affinity of existing
  pods is: when db avoids web at rack level, the loader gives web the mirrored term, so a
  new unit of web stays out of racks that hold db (`mirror_avoids`). `near` is not
  mirrored (kube-scheduler does not filter on existing pods' affinity either).
- `mode: preferred` adds +weight (near) or -weight (avoid) per unit of W in the target's
  location, as kube-scheduler's score counts matching pods (without its normalization).

The fast path gathers the plan state's counts per (W, level value) through the level's
topology column: one array operation per term and unit.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import replace
from typing import ClassVar

import numpy as np

from placed.model import AffinityTerm, Avoid, Near, Notice, Spec, Target, Workload
from placed.policy.base import (
    BoolArray,
    Bound,
    Codes,
    Family,
    Filter,
    FloatArray,
    IndexView,
    PlanView,
    Reason,
    Scorer,
    World,
)
from placed.policy.distinct import TARGET_LEVEL, ancestor_at
from placed.policy.domains import units_by_location

Prepared = tuple[str, tuple[AffinityTerm, ...]]


def _terms(
    workload: Workload, kind: type[Near] | type[Avoid], mode: str
) -> tuple[AffinityTerm, ...]:
    wanted = workload.request(kind)
    return () if wanted is None else tuple(t for t in wanted.terms if t.mode == mode)


def _where(level: str, location: str) -> str:
    return f"target {location}" if level == TARGET_LEVEL else f"{level} {location}"


def missing_reason(term: AffinityTerm, location: str | None) -> Reason:
    if term.level == TARGET_LEVEL:
        singular, plural = f"holds no unit of {term.workload}", f"hold no unit of {term.workload}"
    else:
        singular = f"has no unit of {term.workload} in its {term.level}"
        plural = f"have no unit of {term.workload} in their {term.level}"
    detail = (
        f"not in any {term.level}"
        if location is None
        else f"no unit of {term.workload} in {_where(term.level, location)}"
    )
    return Reason(NearFilter.name, singular, plural, detail)


def held_reason(term: AffinityTerm, group: str, location: str, unit: str) -> Reason:
    if term.level == TARGET_LEVEL:
        singular, plural = f"holds a unit of {term.workload}", f"hold a unit of {term.workload}"
    else:
        singular = f"is in a {term.level} that holds a unit of {term.workload}"
        plural = f"are in a {term.level} that holds a unit of {term.workload}"
    detail = f"{_where(term.level, location)} holds {unit}"
    if term.mirrored:
        detail += f", and {term.workload} avoids {group}"
    return Reason(AvoidFilter.name, singular, plural, detail)


def starts_itself(group: str, term: AffinityTerm, state: PlanView) -> bool:
    """A workload near itself with no unit under any location at the level yet."""
    return term.workload == group and not state.counts(group, term.level).any()


class NearFilter(Filter):
    name = "near"
    summary = "`near: {workload: W, level: LEVEL}`: the target's LEVEL holds no unit of W"
    needs = Near

    def prepare(self, workload: Workload) -> Prepared | None:
        terms = _terms(workload, Near, "hard")
        return (workload.name, terms) if terms else None

    def keep(self, prepared: Prepared, state: PlanView) -> BoolArray:
        group, terms = prepared
        kept: BoolArray | None = None
        for term in terms:
            if starts_itself(group, term, state):
                continue
            counts = state.counts(term.workload, term.level)
            # Judged per location, then gathered: one pass over the targets per term.
            fits: BoolArray = (counts > 0)[state.level_column(term.level)]
            kept = fits if kept is None else kept & fits
        return kept if kept is not None else np.ones(state.size, dtype=bool)

    def reason(self, workload: Workload, target: Target, position: int, state: PlanView) -> Reason:
        for term in _terms(workload, Near, "hard"):
            if starts_itself(workload.name, term, state):
                continue
            code = int(state.level_column(term.level)[position])
            if state.counts(term.workload, term.level)[code] == 0:
                return missing_reason(term, state.level_id(term.level, code) if code else None)
        raise AssertionError("reason() is only asked of targets this filter rejected")

    def phrases(self, workload: Workload, positions: Codes, state: PlanView) -> Codes:
        # The words name the first term the target fails (its workload and level): its
        # place among the workload's terms.
        codes = np.full(positions.size, -1, dtype=np.intp)
        for number, term in enumerate(_terms(workload, Near, "hard")):
            if starts_itself(workload.name, term, state):
                continue
            counts = state.counts(term.workload, term.level)
            fails = counts[state.level_column(term.level)[positions]] == 0
            codes[(codes < 0) & fails] = number
        return codes

    def judge(self, workload: Workload, target: Target, world: World) -> Reason | None:
        for term in _terms(workload, Near, "hard"):
            held = units_by_location(world, term.workload, term.level)
            if term.workload == workload.name and not held:
                continue  # the first unit of a workload near itself starts the group
            mine = ancestor_at(target, term.level)
            if mine is None or mine not in held:
                return missing_reason(term, mine)
        return None


class AvoidFilter(Filter):
    name = "avoid"
    summary = "`avoid: {workload: W, level: LEVEL}`: the target's LEVEL holds a unit of W"
    needs = Avoid

    def prepare(self, workload: Workload) -> Prepared | None:
        terms = _terms(workload, Avoid, "hard")
        return (workload.name, terms) if terms else None

    def keep(self, prepared: Prepared, state: PlanView) -> BoolArray:
        _, terms = prepared
        kept: BoolArray | None = None
        for term in terms:
            # Code 0 ("no location of that kind") never counts, so such targets stay.
            counts = state.counts(term.workload, term.level)
            fits: BoolArray = (counts == 0)[state.level_column(term.level)]
            kept = fits if kept is None else kept & fits
        assert kept is not None, "prepare() gives at least one term"
        return kept

    def reason(self, workload: Workload, target: Target, position: int, state: PlanView) -> Reason:
        for term in _terms(workload, Avoid, "hard"):
            code = int(state.level_column(term.level)[position])
            if code and state.counts(term.workload, term.level)[code] > 0:
                location = state.level_id(term.level, code) or "?"
                unit = state.first_unit(term.workload, term.level, code) or "?"
                return held_reason(term, workload.name, location, unit)
        raise AssertionError("reason() is only asked of targets this filter rejected")

    def phrases(self, workload: Workload, positions: Codes, state: PlanView) -> Codes:
        # As near's: the place of the first term whose location holds a unit of W.
        codes = np.full(positions.size, -1, dtype=np.intp)
        for number, term in enumerate(_terms(workload, Avoid, "hard")):
            # Code 0 counts nothing (counts[0] is 0), as `reason` skips it.
            counts = state.counts(term.workload, term.level)
            held = counts[state.level_column(term.level)[positions]] > 0
            codes[(codes < 0) & held] = number
        return codes

    def judge(self, workload: Workload, target: Target, world: World) -> Reason | None:
        for term in _terms(workload, Avoid, "hard"):
            mine = ancestor_at(target, term.level)
            if mine is None:
                continue
            held = units_by_location(world, term.workload, term.level).get(mine)
            if held is not None:
                return held_reason(term, workload.name, mine, held.first)
        return None


class _Preference(Scorer):
    """+sign x weight per unit of W in the target's location, for preferred terms."""

    kind: ClassVar[type[Near] | type[Avoid]]
    sign: ClassVar[int]
    static = False

    def prepare(self, workload: Workload) -> Prepared | None:
        terms = _terms(workload, self.kind, "preferred")
        return (workload.name, terms) if terms else None

    def score(self, prepared: Prepared) -> FloatArray:
        raise TypeError(f"{self.name} reads the plan state: use score_in")

    def score_in(self, prepared: Prepared, state: PlanView) -> FloatArray:
        total = np.zeros(state.size, dtype=np.float64)
        for term in prepared[1]:
            counts = state.counts(term.workload, term.level)
            # Scored per location, then gathered (code 0 holds no unit, so scores 0).
            total += (counts * float(self.sign * term.weight))[state.level_column(term.level)]
        return total

    def judge(self, workload: Workload, target: Target) -> float:
        raise TypeError(f"{self.name} reads the plan state: use judge_in")

    def judge_in(self, workload: Workload, target: Target, world: World) -> float:
        total = 0.0
        for term in _terms(workload, self.kind, "preferred"):
            mine = ancestor_at(target, term.level)
            held = units_by_location(world, term.workload, term.level).get(mine or "")
            if mine is not None and held is not None:
                total += self.sign * term.weight * held.count
        return total


class NearPreference(_Preference):
    name = "near-preferred"
    summary = "`near: {..., mode: preferred}`: +weight per unit of W in the target's LEVEL"
    needs = Near
    kind = Near
    sign = 1


class AvoidPreference(_Preference):
    name = "avoid-preferred"
    summary = "`avoid: {..., mode: preferred}`: -weight per unit of W in the target's LEVEL"
    needs = Avoid
    kind = Avoid
    sign = -1


def mirror_avoids(workloads: Sequence[Workload]) -> list[Workload]:
    """Each workload with the avoid terms other workloads hold against it (kube-scheduler's
    symmetric anti-affinity): db's `avoid: {workload: web, level: rack}` gives web the
    term `avoid: {workload: db, level: rack}`, marked mirrored. An allocation workload only
    (the others take no avoid terms); a term it already has is not added twice."""
    added: dict[str, list[AffinityTerm]] = {}
    for workload in workloads:
        wanted = workload.request(Avoid)
        for term in wanted.terms if wanted is not None else ():
            if term.workload != workload.name and not term.mirrored:
                mirrored = AffinityTerm(workload.name, term.level, term.mode, term.weight, True)
                added.setdefault(term.workload, []).append(mirrored)
    if not added:
        return list(workloads)
    out = []
    for workload in workloads:
        extra = added.get(workload.name)
        if not extra or workload.mode != "allocation":
            out.append(workload)
            continue
        own = workload.request(Avoid)
        terms = list(own.terms) if own is not None else []
        for term in extra:
            if replace(term, mirrored=False) not in terms and term not in terms:
                terms.append(term)
        requests = tuple(r for r in workload.requests if not isinstance(r, Avoid))
        out.append(replace(workload, requests=(*requests, Avoid(tuple(terms)))))
    return out


class AffinityFamily(Family):
    name = "affinity"
    seed = "core"
    filter_types: ClassVar[tuple[type[Filter], ...]] = (NearFilter, AvoidFilter)
    scorer_types: ClassVar[tuple[type[Scorer], ...]] = (NearPreference, AvoidPreference)

    def bind(self, index: IndexView) -> Bound:
        return Bound(
            filters=(NearFilter(), AvoidFilter()), scorers=(NearPreference(), AvoidPreference())
        )

    def lint(self, spec: Spec) -> list[Notice]:
        # Workloads are planned in the order listed: near one listed later sees only the
        # units of it that already run.
        notices = []
        order = {workload.name: i for i, workload in enumerate(spec.workloads)}
        running = {unit.workload for unit in spec.running}
        for i, workload in enumerate(spec.workloads):
            for term in _terms(workload, Near, "hard"):
                if order.get(term.workload, -1) > i:
                    what = "its running units" if term.workload in running else "none of its units"
                    notices.append(
                        Notice(
                            "near-planned-later",
                            f"{workload.name} is near {term.workload}, which the spec lists "
                            f"after it: {what} count when {workload.name} is placed (list "
                            f"{term.workload} first)",
                            workload=workload.name,
                        )
                    )
        return notices


def before_plan(workload: Workload, planned: Collection[str]) -> Workload:
    """The workload as `placed check` judges it before any plan: without its near terms to
    the workloads in `planned` (other workloads that have units to place), whose units are
    nowhere until the plan puts them somewhere; near terms to what already runs stay."""
    wanted = workload.request(Near)
    if wanted is None:
        return workload
    terms = tuple(
        t for t in wanted.terms if t.workload == workload.name or t.workload not in planned
    )
    if terms == wanted.terms:
        return workload
    requests = tuple(r for r in workload.requests if not isinstance(r, Near))
    return replace(workload, requests=(*requests, Near(terms)) if terms else requests)
