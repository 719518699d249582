"""Only targets that are up take work."""

from __future__ import annotations

from placed.model import Target, Workload
from placed.policy.base import BoolArray, Filter, Reason, TargetState


class TargetUp(Filter):
    name = "status"

    def prepare(self, workload: Workload) -> None:
        return None

    def keep(self, prepared: None, state: TargetState) -> BoolArray:
        return state.up

    def reason(
        self, workload: Workload, target: Target, position: int, state: TargetState
    ) -> Reason:
        return Reason(self.name, "is down", "are down")
