"""What every policy family plugs into: filters, scorers, reasons, mutable target state.

A filter looks at one workload and all targets at once and returns a boolean mask (True
keeps the target); a scorer returns a float array. Both are numpy over columns. For a
rejected target a filter can also say why, in words a person reads.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from placed.model import Target, Workload

BoolArray = NDArray[np.bool_]
FloatArray = NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class Reason:
    """Why one filter rejected one target.

    `singular` and `plural` carry the same phrase for one target ("lacks required tag
    datacenter1") and for a count of them ("4 lack required tag datacenter1"), so that
    summaries read like kube-scheduler's. Targets whose phrases are equal are grouped;
    `detail` holds the numbers that would split groups ("needs 8 cpu, 2 free").
    """

    filter: str
    singular: str
    plural: str
    detail: str = ""

    @property
    def text(self) -> str:
        return f"{self.singular} ({self.detail})" if self.detail else self.singular


@dataclass(slots=True)
class TargetState:
    """What changes while a plan runs: which targets are up and what capacity is free."""

    up: BoolArray
    free: FloatArray  # one row per resource name, one column per target
    resources: tuple[str, ...]

    def copy(self) -> TargetState:
        return TargetState(self.up.copy(), self.free.copy(), self.resources)


class Filter(ABC):
    """Removes targets. `prepare` runs once per workload; `keep` once per unit."""

    name: ClassVar[str]
    # A static filter's mask depends only on the workload, never on TargetState, so the
    # pipeline computes it once per workload instead of once per unit.
    static: ClassVar[bool] = False

    @abstractmethod
    def prepare(self, workload: Workload) -> Any: ...

    @abstractmethod
    def keep(self, prepared: Any, state: TargetState) -> BoolArray: ...

    @abstractmethod
    def reason(
        self, workload: Workload, target: Target, position: int, state: TargetState
    ) -> Reason:
        """Why this filter rejects `target` (only called for targets it rejected)."""


class Consumer(ABC):
    """A filter whose units use something up on the target they land on."""

    @abstractmethod
    def reserve(
        self, prepared: Any, state: TargetState, positions: int | NDArray[np.intp]
    ) -> None: ...


class Scorer(ABC):
    """Ranks the targets the filters kept; higher is better."""

    name: ClassVar[str]

    @abstractmethod
    def prepare(self, workload: Workload) -> Any: ...

    @abstractmethod
    def score(self, prepared: Any) -> FloatArray: ...

    @abstractmethod
    def explain(self, workload: Workload, target: Target) -> str:
        """The terms that make up one target's score, e.g. "+rack10 +network1 -rack20"."""


def plural_noun(noun: str, items: list[str]) -> str:
    return f"{noun}{'s' if len(items) > 1 else ''} {', '.join(items)}"
