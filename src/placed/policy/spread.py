"""`spread: {over: LEVEL, max_skew: N}`: Kubernetes' topology spread constraints.

The skew a unit would make on a target is the number of the workload's units already in
the target's location at LEVEL, plus one, minus the fewest units any *eligible* location
holds. Eligible locations are those with at least one target the workload's static
filters keep (tags, constraints, namespaces, services: kube-scheduler's
nodeAffinityPolicy Honor), so a workload its constraints hold to two zones of three is
not stuck waiting for the third, and that is up. The last part departs from
kube-scheduler's default (nodeTaintsPolicy Ignore, under which a zone of unreachable
nodes still holds the minimum at 0 and hard spread leaves its units pending): placed
re-places the units of a failed zone over the zones that are left, since staying right
when machines fail is what it is for.

- `mode: hard` (the default) rejects a target where the skew would exceed max_skew, and,
  as kube-scheduler does, a target with no location at LEVEL at all.
- `mode: preferred` scores -weight x the units already in the target's location (fewer
  is better, as kube-scheduler's score ranks them); a target with no location at LEVEL
  scores below every location (kube-scheduler gives it the lowest score). placed keeps
  the score a whole number instead of kube-scheduler's log-weighted one normalized over
  the feasible nodes, so that it adds up exactly with the other scorers and the
  reference agrees to the last bit.

The fast path reads the plan state's counts per (workload, level value), kept as units
land, gathered through the level's topology column: a few array operations per unit.
Units that already run count where they run, whether or not the workload's filters
would keep their target now (kube-scheduler counts only pods on eligible nodes).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, Self

import numpy as np

from placed.model import Spread, SpreadTerm, Target, Workload
from placed.policy.base import (
    BoolArray,
    Bound,
    Codes,
    Counts,
    Family,
    FamilyState,
    Filter,
    FloatArray,
    IndexView,
    PlanView,
    Reason,
    Scorer,
    World,
)
from placed.policy.distinct import TARGET_LEVEL, ancestor_at
from placed.policy.domains import fewest, units_by_location

# How many workloads' eligible locations a plan state keeps for their explanations: more
# than the planner keeps compiled requests (engine/planner.py), so that any request it
# still holds has its workload's there.
REMEMBERED = 64


@dataclass(slots=True)
class _Hard:
    group: str
    terms: tuple[SpreadTerm, ...]
    # Per term, per value code of its level: whether the value is an eligible location,
    # and its rank by id (to name the eligible location with the fewest units, by id, as
    # the reference does, without sorting names for each explanation).
    eligible: tuple[BoolArray, ...] | None = None
    ranks: tuple[Codes, ...] = ()
    # The positions the static filters keep: a location is eligible only through one of
    # them that is up, not through any up target.
    kept: Codes | None = None


class Eligible(FamilyState):
    """The family's plan state: each workload's eligible locations as its compiled
    request holds them, noted as `keep` judges with them, for `reason` and `phrases`
    (which see the workload only). The most recent few: a workload's reasons are asked
    right after its masks, and each entry holds arrays over its levels' values."""

    def __init__(self, kept: OrderedDict[str, _Hard]) -> None:
        self._kept = kept
        self._latest: _Hard | None = None

    @classmethod
    def start(cls, plan: PlanView) -> Self:
        return cls(OrderedDict())

    def copy(self) -> Self:
        return type(self)(OrderedDict(self._kept))

    def taken_in(self, position: int, target: Target) -> None:
        # Eligible locations are arrays over a level's values, which a target taken in
        # may add to: noted again as the next request is judged.
        self._kept.clear()
        self._latest = None

    def note(self, hard: _Hard) -> None:
        if hard is self._latest:
            return  # the same request's next unit: the usual case, at no cost
        self._latest = hard
        self._kept[hard.group] = hard
        self._kept.move_to_end(hard.group)
        if len(self._kept) > REMEMBERED:
            self._kept.popitem(last=False)

    def of(self, workload: Workload) -> _Hard:
        found = self._kept.get(workload.name)
        assert found is not None and found.eligible is not None, "asked after keep()"
        assert found.terms == _hard(workload), "asked of the workload judged"
        return found


def _hard(workload: Workload) -> tuple[SpreadTerm, ...]:
    wanted = workload.request(Spread)
    return () if wanted is None else tuple(t for t in wanted.terms if t.mode == "hard")


def _preferred(workload: Workload) -> tuple[SpreadTerm, ...]:
    wanted = workload.request(Spread)
    return () if wanted is None else tuple(t for t in wanted.terms if t.mode == "preferred")


def _where(level: str, location: str) -> str:
    return location if level == TARGET_LEVEL else f"{level} {location}"


def outside_reason(workload: str, level: str) -> Reason:
    return Reason(
        SpreadSkew.name,
        f"is in no {level}, which spread over {level} needs",
        f"are in no {level}, which spread over {level} needs",
        f"a target outside every {level} is rejected, as kube-scheduler does",
    )


def skew_reason(
    workload: str, term: SpreadTerm, location: str, would: int, least: int, at: str | None
) -> Reason:
    versus = f"{least} in {at}" if at is not None else f"no eligible {term.over}"
    return Reason(
        SpreadSkew.name,
        f"would exceed {workload}'s max skew {term.max_skew} over {term.over}",
        f"would exceed {workload}'s max skew {term.max_skew} over {term.over}",
        f"{_where(term.over, location)} would exceed max skew {term.max_skew}: "
        f"{would} unit{'s' if would != 1 else ''} vs {versus}",
    )


def _live(prepared: _Hard, eligible: BoolArray, level: str, state: PlanView) -> BoolArray:
    """The eligible locations that hold a target up now and kept by the static filters:
    all of them, unless some target is down (a what-if, a failed host), when one count
    over the kept targets that are up tells."""
    up = state.up
    if up.all():
        return eligible
    assert prepared.kept is not None, "the pipeline gives spread its static mask"
    kept = prepared.kept
    holding = np.zeros(eligible.size, dtype=bool)
    holding[state.level_column(level)[kept[up[kept]]]] = True
    return eligible & holding


def _fewest(counts: Counts, eligible: BoolArray) -> int:
    held = counts[: eligible.size][eligible]
    return int(held.min()) if held.size else 0


class SpreadSkew(Filter):
    name = "spread"
    summary = (
        "`spread: {over: LEVEL, max_skew: N}`: a unit there would make the skew over LEVEL "
        "exceed N, or the target has no LEVEL"
    )
    needs = Spread

    def __init__(self) -> None:
        # Each level's ranks by id: a memo of the index, which never changes (what a
        # plan decides is in its state: Eligible).
        self._ranks: dict[str, Codes] = {}

    def prepare(self, workload: Workload) -> _Hard | None:
        terms = _hard(workload)
        return _Hard(workload.name, terms) if terms else None

    def with_static(self, prepared: _Hard, keep: BoolArray, index: IndexView) -> _Hard:
        eligible = []
        ranks = []
        for term in prepared.terms:
            level = index.level(term.over)
            ids = level.ids if level is not None else (None,)
            values = np.zeros(len(ids), dtype=bool)
            if level is not None:
                values[level.column[keep]] = True
            values[0] = False  # "no location of that kind" is no location
            eligible.append(values)
            ranks.append(self._rank(term.over, ids))
        return _Hard(
            prepared.group, prepared.terms, tuple(eligible), tuple(ranks), np.flatnonzero(keep)
        )

    def _rank(self, level: str, ids: Sequence[str | None]) -> Codes:
        """Each value code's rank by id: sorted once per level (the index never changes)."""
        found = self._ranks.get(level)
        if found is None:
            found = self._ranks[level] = np.zeros(len(ids), dtype=np.intp)
            by_id = sorted(range(1, len(ids)), key=lambda code: ids[code] or "")
            found[np.array(by_id, dtype=np.intp)] = np.arange(1, len(ids), dtype=np.intp)
        return found

    def keep(self, prepared: _Hard, state: PlanView) -> BoolArray:
        assert prepared.eligible is not None, "the pipeline gives spread its static mask"
        state.family_state(Eligible).note(prepared)
        kept: BoolArray | None = None
        for term, eligible in zip(prepared.terms, prepared.eligible, strict=True):
            counts = state.counts(prepared.group, term.over)
            column = state.level_column(term.over)
            # Judged per location (code 0, no location, never fits), then gathered: one
            # pass over the targets per term.
            least = _fewest(counts, _live(prepared, eligible, term.over, state))
            room = counts <= least + term.max_skew - 1
            room[0] = False
            fits: BoolArray = room[column]
            kept = fits if kept is None else kept & fits
        assert kept is not None
        return kept

    def reason(self, workload: Workload, target: Target, position: int, state: PlanView) -> Reason:
        found = state.family_state(Eligible).of(workload)
        assert found.eligible is not None
        for term, eligible, rank in zip(found.terms, found.eligible, found.ranks, strict=True):
            counts = state.counts(workload.name, term.over)
            code = int(state.level_column(term.over)[position])
            if code == 0:
                return outside_reason(workload.name, term.over)
            eligible = _live(found, eligible, term.over, state)
            least = _fewest(counts, eligible)
            here = int(counts[code])
            if here + 1 - least > term.max_skew:
                fewest = np.flatnonzero(eligible & (counts[: eligible.size] == least))
                at = None
                if fewest.size:
                    first = int(fewest[np.argmin(rank[fewest])])
                    at = state.level_id(term.over, first) or "?"
                location = state.level_id(term.over, code) or "?"
                return skew_reason(workload.name, term, location, here + 1, least, at)
        raise AssertionError("reason() is only asked of targets this filter rejected")

    def phrases(self, workload: Workload, positions: Codes, state: PlanView) -> Codes:
        # The words name the first term the target fails and how (outside every
        # location: 2 x its place; too much skew: 2 x its place + 1), as `reason` finds.
        found = state.family_state(Eligible).of(workload)
        assert found.eligible is not None
        codes = np.full(positions.size, -1, dtype=np.intp)
        for number, (term, eligible) in enumerate(zip(found.terms, found.eligible, strict=True)):
            counts = state.counts(workload.name, term.over)
            at = state.level_column(term.over)[positions]
            least = _fewest(counts, _live(found, eligible, term.over, state))
            unset = codes < 0
            codes[unset & (at == 0)] = 2 * number
            codes[unset & (at != 0) & (counts[at] + 1 - least > term.max_skew)] = 2 * number + 1
        return codes

    def judge(self, workload: Workload, target: Target, world: World) -> Reason | None:
        for term in _hard(workload):
            mine = ancestor_at(target, term.over)
            if mine is None:
                return outside_reason(workload.name, term.over)
            held = units_by_location(world, workload.name, term.over)
            here = held[mine].count if mine in held else 0
            least, at = fewest(world, workload, term.over)
            if here + 1 - least > term.max_skew:
                return skew_reason(workload.name, term, mine, here + 1, least, at)
        return None


class SpreadPreference(Scorer):
    name = "spread-preferred"
    summary = (
        "`spread: {..., mode: preferred}`: -weight x the workload's units already in the "
        "target's LEVEL (below every LEVEL when it has none)"
    )
    needs = Spread
    static = False

    def prepare(self, workload: Workload) -> tuple[str, tuple[SpreadTerm, ...]] | None:
        terms = _preferred(workload)
        return (workload.name, terms) if terms else None

    def score(self, prepared: tuple[str, tuple[SpreadTerm, ...]]) -> FloatArray:
        raise TypeError("spread-preferred reads the plan state: use score_in")

    def score_in(self, prepared: tuple[str, tuple[SpreadTerm, ...]], state: PlanView) -> FloatArray:
        group, terms = prepared
        total = np.zeros(state.size, dtype=np.float64)
        for term in terms:
            counts = state.counts(group, term.over)
            # Scored per location (code 0, no location, below every one), then gathered.
            penalty = counts * -float(term.weight)
            penalty[0] = -float(term.weight) * (int(counts.max()) + 1)
            total += penalty[state.level_column(term.over)]
        return total

    def judge(self, workload: Workload, target: Target) -> float:
        raise TypeError("spread-preferred reads the plan state: use judge_in")

    def judge_in(self, workload: Workload, target: Target, world: World) -> float:
        total = 0.0
        for term in _preferred(workload):
            held = units_by_location(world, workload.name, term.over)
            mine = ancestor_at(target, term.over)
            if mine is None:
                here = max((h.count for h in held.values()), default=0) + 1
            else:
                here = held[mine].count if mine in held else 0
            total -= term.weight * here
        return total


class SpreadFamily(Family):
    name = "spread"
    seed = "core"
    filter_types: ClassVar[tuple[type[Filter], ...]] = (SpreadSkew,)
    scorer_types: ClassVar[tuple[type[Scorer], ...]] = (SpreadPreference,)

    def bind(self, index: IndexView) -> Bound:
        return Bound(filters=(SpreadSkew(),), scorers=(SpreadPreference(),))
