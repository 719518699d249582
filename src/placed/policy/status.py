"""Only targets that are up take work (a location that is down takes its subtree out)."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from placed.model import Target, Workload
from placed.policy.base import (
    UNCHANGED,
    BoolArray,
    Bound,
    Codes,
    Family,
    Filter,
    IndexView,
    PlanView,
    Reason,
    Tracker,
    World,
)

_DOWN = Reason("status", "is down", "are down")


class TargetUp(Filter):
    name = "status"
    summary = "the target (or a location above it) is down"
    local = True  # units never take a target down

    def tracker(self, prepared: bool, state: PlanView) -> Tracker:
        return UNCHANGED

    def prepare(self, workload: Workload) -> bool:
        return True

    def keep(self, prepared: bool, state: PlanView) -> BoolArray:
        return state.up

    def reason(self, workload: Workload, target: Target, position: int, state: PlanView) -> Reason:
        return _DOWN

    def judge(self, workload: Workload, target: Target, world: World) -> Reason | None:
        return None if world.is_up(target) else _DOWN

    def phrases(self, workload: Workload, positions: Codes, state: PlanView) -> Codes:
        return np.zeros(positions.size, dtype=np.intp)  # one reason for every target


class Status(Family):
    name = "status"
    seed = "core"
    filter_types: ClassVar[tuple[type[Filter], ...]] = (TargetUp,)

    def bind(self, index: IndexView) -> Bound:
        return Bound(filters=(TargetUp(),))
