"""Resources: a unit fits where every resource it asks for is free in the amount asked."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

from placed.model import Target, Workload
from placed.policy.base import BoolArray, Consumer, Filter, Reason, TargetState


def resource_names(targets: Sequence[Target], workloads: Sequence[Workload]) -> tuple[str, ...]:
    names = {name for target in targets for name in target.capacity}
    names.update(name for workload in workloads for name in workload.resources)
    return tuple(sorted(names))


def capacity_matrix(targets: Sequence[Target], resources: Sequence[str]) -> NDArray[np.float64]:
    # A resource a target does not declare is one it does not offer: 0, as Kubernetes
    # treats an extended resource a node does not advertise.
    matrix = np.zeros((len(resources), len(targets)), dtype=np.float64)
    for column, target in enumerate(targets):
        for row, name in enumerate(resources):
            matrix[row, column] = target.capacity.get(name, 0.0)
    return matrix


def insufficient(requested: Mapping[str, float], free: Mapping[str, float]) -> list[str]:
    return [name for name, amount in sorted(requested.items()) if free.get(name, 0.0) < amount]


def insufficient_reason(requested: Mapping[str, float], free: Mapping[str, float]) -> Reason:
    short = insufficient(requested, free)
    detail = ", ".join(f"needs {requested[n]:g} {n}, {free.get(n, 0.0):g} free" for n in short)
    names = ", ".join(short)
    return Reason(
        ResourcesFit.name, f"has insufficient {names}", f"have insufficient {names}", detail
    )


class ResourcesFit(Filter, Consumer):
    name = "capacity"

    def __init__(self, resources: Sequence[str]) -> None:
        self._row = {name: row for row, name in enumerate(resources)}

    def prepare(self, workload: Workload) -> tuple[NDArray[np.intp], NDArray[np.float64]]:
        asked = [(self._row[name], amount) for name, amount in sorted(workload.resources.items())]
        rows = np.array([row for row, _ in asked], dtype=np.intp)
        amounts = np.array([amount for _, amount in asked], dtype=np.float64)
        return rows, amounts

    def keep(
        self, prepared: tuple[NDArray[np.intp], NDArray[np.float64]], state: TargetState
    ) -> BoolArray:
        rows, amounts = prepared
        if rows.size == 0:
            return np.ones(state.up.shape, dtype=bool)
        if rows.size == 1:
            return state.free[rows[0]] >= amounts[0]
        return np.all(state.free[rows] >= amounts[:, None], axis=0)

    def reserve(
        self,
        prepared: tuple[NDArray[np.intp], NDArray[np.float64]],
        state: TargetState,
        positions: int | NDArray[np.intp],
    ) -> None:
        rows, amounts = prepared
        if rows.size == 0:
            return
        if isinstance(positions, int):
            state.free[rows, positions] -= amounts
        else:
            state.free[np.ix_(rows, positions)] -= amounts[:, None]

    def reason(
        self, workload: Workload, target: Target, position: int, state: TargetState
    ) -> Reason:
        free = {name: float(state.free[row, position]) for name, row in self._row.items()}
        return insufficient_reason(workload.resources, free)
