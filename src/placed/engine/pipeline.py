"""One pipeline for every policy family: filters produce masks, scorers add up, and the
selector takes the best. Nomad's feasibility stack and kube-scheduler's framework have
the same shape."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from placed.engine.index import TargetIndex
from placed.model import Workload
from placed.policy.base import BoolArray, Consumer, Filter, FloatArray, Scorer, TargetState
from placed.policy.capacity import ResourcesFit
from placed.policy.constraints import TargetConstraint, WorkloadConstraint
from placed.policy.namespaces import NamespaceScope
from placed.policy.status import TargetUp
from placed.policy.tags import HardAffinity, HardAntiAffinity, SoftAffinity


@dataclass(slots=True)
class CompiledRequest:
    """A workload prepared against one index: what every unit of it reuses."""

    workload: Workload
    prepared: list[Any]  # one entry per filter, in pipeline order
    static_masks: dict[int, BoolArray]  # filter position -> mask, for static filters
    static_keep: BoolArray
    score: FloatArray


class Pipeline:
    def __init__(self, index: TargetIndex, filters: list[Filter], scorers: list[Scorer]) -> None:
        self.index = index
        self.filters = filters
        self.scorers = scorers

    @classmethod
    def default(cls, index: TargetIndex) -> Pipeline:
        # Order matters for explanations: a target is charged to the first filter that
        # rejects it, so policy that can never change (tags) comes before capacity, which
        # changes as units land.
        return cls(
            index,
            filters=[
                TargetUp(),
                NamespaceScope(index.targets),
                HardAntiAffinity(index.tags),
                HardAffinity(index.tags),
                WorkloadConstraint(index.targets),
                TargetConstraint(index.targets),
                ResourcesFit(index.resources),
            ],
            scorers=[SoftAffinity(index.tags)],
        )

    def compile(self, workload: Workload) -> CompiledRequest:
        size = len(self.index)
        prepared = [f.prepare(workload) for f in self.filters]
        static_masks: dict[int, BoolArray] = {}
        keep = np.ones(size, dtype=bool)
        for position, (f, part) in enumerate(zip(self.filters, prepared, strict=True)):
            if f.static:
                # A static filter with nothing to check for this workload (no constraints,
                # no namespace) prepares None and costs nothing per unit, as kube-scheduler
                # plugins skip themselves in PreFilter.
                mask = _ALL if part is None else f.keep(part, _NO_STATE)
                static_masks[position] = mask
                if part is not None:
                    keep &= mask
        score = np.zeros(size, dtype=np.float64)
        for scorer in self.scorers:
            score += scorer.score(scorer.prepare(workload))
        return CompiledRequest(workload, prepared, static_masks, keep, score)

    def feasible(self, request: CompiledRequest, state: TargetState) -> BoolArray:
        keep = request.static_keep
        for position, f in enumerate(self.filters):
            if not f.static:
                keep = keep & f.keep(request.prepared[position], state)
        return keep

    def reserve(
        self, request: CompiledRequest, state: TargetState, positions: int | NDArray[np.intp]
    ) -> None:
        for f, part in zip(self.filters, request.prepared, strict=True):
            if isinstance(f, Consumer):
                f.reserve(part, state, positions)

    def masks(self, request: CompiledRequest, state: TargetState) -> list[BoolArray]:
        """Every filter's own mask, in pipeline order (for explanations, not the hot path)."""
        size = len(self.index)
        return [
            (np.ones(size, dtype=bool) if mask is _ALL else mask)
            if (mask := request.static_masks.get(position)) is not None
            else f.keep(request.prepared[position], state)
            for position, f in enumerate(self.filters)
        ]


# Static filters never read state; this placeholder makes that visible if one ever does.
_NO_STATE = TargetState(np.zeros(0, dtype=bool), np.zeros((0, 0)), ())
# Stands for "keeps every target" without allocating a mask per workload.
_ALL = np.ones(0, dtype=bool)
