"""The columnar view of an inventory's targets that every filter and scorer reads."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from placed.engine.selection import stable_hashes
from placed.model import Spec, Target
from placed.policy.base import TargetState
from placed.policy.capacity import capacity_matrix, resource_names
from placed.policy.tags import TagColumns


class TargetIndex:
    def __init__(self, targets: Sequence[Target], resources: Sequence[str]) -> None:
        self.targets = tuple(targets)
        self.ids = [target.id for target in self.targets]
        self.position = {target_id: position for position, target_id in enumerate(self.ids)}
        self.hashes = stable_hashes(self.ids)
        self.resources = tuple(resources)
        self.capacity = capacity_matrix(self.targets, self.resources)
        self.up = np.array([target.up for target in self.targets], dtype=bool)
        self.tags = TagColumns(self.targets)

    @classmethod
    def for_spec(cls, spec: Spec) -> TargetIndex:
        targets = spec.inventory.targets
        return cls(targets, resource_names(targets, spec.workloads))

    def __len__(self) -> int:
        return len(self.targets)

    def initial_state(self) -> TargetState:
        return TargetState(self.up.copy(), self.capacity.copy(), self.resources)
