"""`distinct: LEVEL`: no two units of a workload under the same ancestor at that level.

A hard rule in allocation mode: with `distinct: rack`, once web/0 lands in rack r2 no
other unit of web may land anywhere in r2. The level is any `kind` the inventory uses
(zone, pod, cluster, rack, host...) or `target` (each target itself). A target with no
ancestor of that kind is not constrained by it.

The fast path reads the plan state's counts per (workload, level value), kept as units
land, and gathers them through the level's topology column: one array operation per
unit, whatever the number of units already placed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from placed.model import Target, Workload
from placed.policy.base import (
    BoolArray,
    Bound,
    Codes,
    Family,
    Filter,
    IndexView,
    PlanView,
    Reason,
    World,
)

# The level at which every target is its own value.
TARGET_LEVEL = "target"


@dataclass(frozen=True, slots=True)
class Distinct:
    """A workload's request: its units go to distinct values of `level`."""

    level: str


def ancestor_at(target: Target, level: str) -> str | None:
    """The id of the target's nearest ancestor (or itself) of kind `level`."""
    if level == TARGET_LEVEL:
        return target.id
    found = None
    for kind, location_id in (*target.ancestors, (target.kind, target.id)):
        if kind == level:
            found = location_id
    return found


def taken_reason(workload: str, level: str, location: str, unit: str, itself: bool) -> Reason:
    detail = f"{level} {location} already holds {unit}"
    if itself:
        return Reason(
            DistinctLevel.name,
            f"already holds a unit of {workload}",
            f"already hold a unit of {workload}",
            detail,
        )
    return Reason(
        DistinctLevel.name,
        f"is in a {level} that already holds a unit of {workload}",
        f"are in a {level} that already holds a unit of {workload}",
        detail,
    )


class DistinctLevel(Filter):
    name = "distinct"
    summary = "`distinct: LEVEL`: the target's LEVEL (rack, zone, ...) already holds a unit"
    needs = Distinct

    def prepare(self, workload: Workload) -> tuple[str, str] | None:
        wanted = workload.request(Distinct)
        return None if wanted is None else (workload.name, wanted.level)

    def keep(self, prepared: tuple[str, str], state: PlanView) -> BoolArray:
        group, level = prepared
        # Code 0 ("no ancestor of that kind") never counts, so such targets stay.
        taken: BoolArray = state.counts(group, level)[state.level_column(level)] > 0
        return ~taken

    def reason(self, workload: Workload, target: Target, position: int, state: PlanView) -> Reason:
        group, level = workload.name, self._level(workload)
        code = int(state.level_column(level)[position])
        location = state.level_id(level, code) or "?"
        unit = state.first_unit(group, level, code) or "?"
        return taken_reason(group, level, location, unit, location == target.id)

    def phrases(self, workload: Workload, positions: Codes, state: PlanView) -> Codes:
        # The words say whether the location taken is the target itself (1) or holds it
        # (0): its id compared with the target's, as `reason` does.
        level = state.index.level(self._level(workload))
        every = state.index.level(TARGET_LEVEL)
        if level is None or every is None:
            return np.zeros(positions.size, dtype=np.intp)  # no location: none rejected
        location = np.asarray(level.ids, dtype=object)[level.column[positions]]
        own = np.asarray(every.ids, dtype=object)[every.column[positions]]
        codes: Codes = (location == own).astype(np.intp)
        return codes

    def judge(self, workload: Workload, target: Target, world: World) -> Reason | None:
        wanted = workload.request(Distinct)
        if wanted is None:
            return None
        level = wanted.level
        mine = ancestor_at(target, level)
        if mine is None:
            return None
        for unit, other in world.placed(workload.name):
            if ancestor_at(other, level) == mine:
                return taken_reason(workload.name, level, mine, unit, mine == target.id)
        return None

    @staticmethod
    def _level(workload: Workload) -> str:
        wanted = workload.request(Distinct)
        assert wanted is not None, "reason() is only asked of targets this filter rejected"
        return wanted.level


class DistinctFamily(Family):
    name = "distinct"
    seed = "core"
    filter_types: ClassVar[tuple[type[Filter], ...]] = (DistinctLevel,)

    def bind(self, index: IndexView) -> Bound:
        return Bound(filters=(DistinctLevel(),))
