"""Resources: a unit fits where every resource it asks for is free in the amount asked."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from placed.model import Target, Workload
from placed.policy.base import (
    BoolArray,
    Bound,
    Codes,
    Consumer,
    Family,
    Filter,
    IndexView,
    PlanView,
    Reason,
    Tracker,
    World,
)


class Asked:
    """What a workload asks for: the resource rows and amounts, as arrays (read-only,
    for the masks) and as lists (for one unit's few subtractions)."""

    __slots__ = ("amount_list", "amounts", "row_list", "rows")

    def __init__(self, rows: list[int], amounts: list[float]) -> None:
        self.rows = np.array(rows, dtype=np.intp)
        self.amounts = np.array(amounts, dtype=np.float64)
        self.rows.flags.writeable = self.amounts.flags.writeable = False
        self.row_list = rows
        self.amount_list = self.amounts.tolist()  # as binary64, like the columns


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


class _Room:
    """What is left at each target a block's units landed on, in Python floats: IEEE
    binary64 like the numpy columns, so each landing subtracts exactly as `reserve`
    does, and 0.1 + 0.2 fits where and only where the unit-by-unit plan finds it fits."""

    def __init__(self, rows: list[int], amounts: list[float], free: NDArray[np.float64]) -> None:
        self._rows = rows
        self._amounts = amounts
        self._free = free
        self._left: dict[int, list[float]] = {}

    def land(self, position: int) -> bool:
        left = self._left.get(position)
        if left is None:
            left = self._left[position] = [float(self._free[row, position]) for row in self._rows]
        fits = True
        for i, amount in enumerate(self._amounts):
            left[i] -= amount
            if left[i] < amount:
                fits = False
        return fits


# Distinct resource requests whose arrays a ResourcesFit keeps (each a few numbers).
_ASKED_KEPT = 4096


class ResourcesFit(Filter, Consumer):
    name = "capacity"
    summary = "a resource the unit asks for is not free in that amount"
    local = True  # a unit takes capacity only where it lands

    def tracker(self, prepared: Asked, state: PlanView) -> Tracker:
        return _Room(list(prepared.row_list), list(prepared.amount_list), state.free)

    def __init__(self, resources: Sequence[str]) -> None:
        self._row = {name: row for row, name in enumerate(resources)}
        # Per set of amounts asked, its arrays (read only): workloads of one size share
        # them, so a unit of its own workload builds none.
        self._asked: dict[tuple[tuple[str, float], ...], Asked] = {}

    def prepare(self, workload: Workload) -> Asked | None:
        if not workload.resources:
            return None  # asks for nothing: nothing to check and nothing to take
        key = tuple(sorted(workload.resources.items()))
        found = self._asked.get(key)
        if found is None:
            found = Asked([self._row[name] for name, _ in key], [amount for _, amount in key])
            # Equal nonzero amounts are equal binary64 values; 0.0 and -0.0 are equal
            # keys but not equal bits, so a zero amount is not shared.
            if found.amounts.all():
                if len(self._asked) >= _ASKED_KEPT:
                    self._asked.clear()
                self._asked[key] = found
        return found

    def keep(self, prepared: Asked, state: PlanView) -> BoolArray:
        rows, amounts = prepared.row_list, prepared.amount_list
        free = state.free
        # One comparison per resource asked (a few): cheaper than gathering the rows.
        fits: BoolArray = free[rows[0]] >= amounts[0]
        for i in range(1, len(rows)):
            fits &= free[rows[i]] >= amounts[i]
        return fits

    def reserve(self, prepared: Asked, state: Any, positions: int | NDArray[np.intp]) -> None:
        free = state.free
        if isinstance(positions, int):
            # One unit: a binary64 subtraction per resource asked (a few), as numpy's.
            for row, amount in zip(prepared.row_list, prepared.amount_list, strict=True):
                free[row, positions] -= amount
        else:
            free[np.ix_(prepared.rows, positions)] -= prepared.amounts[:, None]

    def can_release(self, prepared: Asked) -> bool:
        return True

    def release(self, prepared: Asked, state: Any, position: int) -> None:
        free = state.free
        for row, amount in zip(prepared.row_list, prepared.amount_list, strict=True):
            free[row, position] += amount

    def reason(self, workload: Workload, target: Target, position: int, state: PlanView) -> Reason:
        free = {name: float(state.free[row, position]) for name, row in self._row.items()}
        return insufficient_reason(workload.resources, free)

    def phrases(self, workload: Workload, positions: Codes, state: PlanView) -> Codes | None:
        # The words name the resources short on the target: one bit per resource asked.
        asked = self.prepare(workload)
        if asked is None or asked.rows.size > 62:
            return None
        rows, amounts = asked.rows, asked.amounts
        short = state.free[np.ix_(rows, positions)] < amounts[:, None]
        bits = np.left_shift(1, np.arange(rows.size, dtype=np.int64))
        codes: Codes = (short * bits[:, None]).sum(axis=0)
        return codes

    def judge(self, workload: Workload, target: Target, world: World) -> Reason | None:
        if not workload.resources:
            return None
        free = world.free(target)
        if any(free.get(name, 0.0) < amount for name, amount in workload.resources.items()):
            return insufficient_reason(workload.resources, free)
        return None


class Capacity(Family):
    name = "capacity"
    seed = "core"
    filter_types: ClassVar[tuple[type[Filter], ...]] = (ResourcesFit,)

    def bind(self, index: IndexView) -> Bound:
        return Bound(filters=(ResourcesFit(index.resources),))
