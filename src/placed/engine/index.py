"""The columnar view of an inventory's targets that every family binds its columns to.

Besides ids, hashes, capacity and status, the index holds one **topology column** per
level: for every `kind` the inventory uses (zone, pod, cluster, rack, host, ...) and for
the reserved level `target` (each target itself), each target's nearest ancestor (or
itself) of that kind as an integer code, 0 where it has none. "Same rack as unit X" is
then `column == code`, and counts per rack are `bincount(column)`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from placed.engine.selection import premixed, stable_hashes
from placed.model import Spec, Target
from placed.policy.capacity import capacity_matrix, resource_names

# The level every inventory has: each target is its own value there.
TARGET_LEVEL = "target"


@dataclass(frozen=True, slots=True)
class TopologyLevel:
    name: str
    ids: tuple[str | None, ...]  # code -> location id; code 0 is "none"
    codes: dict[str, int]  # location id -> code
    column: NDArray[np.intp]  # per target


def topology(targets: Sequence[Target]) -> dict[str, TopologyLevel]:
    """One level per kind found among the targets and their ancestors, plus `target`."""
    ids: dict[str, list[str | None]] = {}
    codes: dict[str, dict[str, int]] = {}
    columns: dict[str, list[int]] = {}
    size = len(targets)
    for position, target in enumerate(targets):
        # Outermost first, the target itself last: the nearest of a kind is written last.
        for kind, location_id in (*target.ancestors, (target.kind, target.id)):
            level_codes = codes.get(kind)
            if level_codes is None:
                level_codes = codes[kind] = {}
                ids[kind] = [None]
                columns[kind] = [0] * size
            code = level_codes.get(location_id)
            if code is None:
                code = level_codes[location_id] = len(ids[kind])
                ids[kind].append(location_id)
            columns[kind][position] = code
    levels = {
        kind: TopologyLevel(kind, tuple(ids[kind]), codes[kind], np.array(columns[kind], np.intp))
        for kind in sorted(codes)
        if kind != TARGET_LEVEL
    }
    every = [target.id for target in targets]
    levels[TARGET_LEVEL] = TopologyLevel(
        TARGET_LEVEL,
        (None, *every),
        {target_id: code for code, target_id in enumerate(every, start=1)},
        np.arange(1, size + 1, dtype=np.intp),
    )
    return levels


def _extended(
    levels: dict[str, TopologyLevel], more: Sequence[Target], start: int
) -> dict[str, TopologyLevel]:
    """`levels` of `start` targets with `more` after them, as `topology` of all of them
    makes them: each level's codes go on from its last, a kind new here gets a level whose
    earlier targets sit under no value of it."""
    ids = {kind: list(level.ids) for kind, level in levels.items() if kind != TARGET_LEVEL}
    codes = {kind: dict(level.codes) for kind, level in levels.items() if kind != TARGET_LEVEL}
    added: dict[str, list[int]] = {kind: [0] * len(more) for kind in ids}
    for offset, target in enumerate(more):
        for kind, location_id in (*target.ancestors, (target.kind, target.id)):
            if kind not in ids:
                ids[kind], codes[kind], added[kind] = [None], {}, [0] * len(more)
            code = codes[kind].get(location_id)
            if code is None:
                code = codes[kind][location_id] = len(ids[kind])
                ids[kind].append(location_id)
            added[kind][offset] = code
    made: dict[str, TopologyLevel] = {}
    for kind in sorted(ids):
        if kind == TARGET_LEVEL:
            continue
        before = levels[kind].column if kind in levels else np.zeros(start, dtype=np.intp)
        column = np.concatenate([before, np.array(added[kind], dtype=np.intp)])
        made[kind] = TopologyLevel(kind, tuple(ids[kind]), codes[kind], column)
    every = levels[TARGET_LEVEL]
    made[TARGET_LEVEL] = TopologyLevel(
        TARGET_LEVEL,
        (*every.ids, *(target.id for target in more)),
        {**every.codes, **{target.id: start + k for k, target in enumerate(more, start=1)}},
        np.arange(1, start + len(more) + 1, dtype=np.intp),
    )
    return made


class TargetIndex:
    """The targets a spec declares, as columns. It never changes during a plan: targets
    created while planning live in the plan state (engine/state.py)."""

    def __init__(self, targets: Sequence[Target], resources: Sequence[str]) -> None:
        self.targets = tuple(targets)
        self.ids = [target.id for target in self.targets]
        self.position = {target_id: position for position, target_id in enumerate(self.ids)}
        self.hashes = stable_hashes(self.ids)
        # The tie-break's first mixing step on each target's hash alone, made once: a
        # unit's tie among 10,000 targets then costs two fewer passes over them.
        self.premixed = premixed(self.hashes)
        self.resources = tuple(resources)
        self.capacity = capacity_matrix(self.targets, self.resources)
        self.up = np.array([target.up for target in self.targets], dtype=bool)
        self._levels: dict[str, TopologyLevel] | None = None

    @classmethod
    def for_spec(cls, spec: Spec) -> TargetIndex:
        targets = spec.inventory.targets
        return cls(targets, resource_names(targets, spec.workloads))

    def __len__(self) -> int:
        return len(self.targets)

    def extended(self, more: Sequence[Target]) -> TargetIndex:
        """This index with `more` after its own targets: what the index of every target
        in that order is, its own positions and topology codes kept (a code is given in
        the order locations are first met, so the new ones come after). A live world
        takes targets in this way (`PlanState.extend_to`). ValueError when one of `more`
        is already here or counts a resource the index does not."""
        ids = [target.id for target in more]
        if len(set(ids)) != len(ids) or any(i in self.position for i in ids):
            raise ValueError("an extended index's new targets are new, each once")
        if any(name not in self.resources for target in more for name in target.capacity):
            raise ValueError("an extended index counts the resources it counted")
        made = TargetIndex.__new__(TargetIndex)
        start = len(self.targets)
        made.targets = self.targets + tuple(more)
        made.ids = self.ids + ids
        made.position = {**self.position, **{i: start + k for k, i in enumerate(ids)}}
        hashes = stable_hashes(ids)
        made.hashes = np.concatenate([self.hashes, hashes])
        made.premixed = np.concatenate([self.premixed, premixed(hashes)])
        made.resources = self.resources
        made.capacity = np.concatenate(
            [self.capacity, capacity_matrix(tuple(more), self.resources)], axis=1
        )
        made.up = np.concatenate([self.up, np.array([t.up for t in more], dtype=bool)])
        made._levels = None if self._levels is None else _extended(self._levels, more, start)
        return made

    def rededicated(self, targets: Sequence[Target]) -> None:
        """The same targets carrying another dedication in force (a live world's
        dedication change, model.Inventory.rededicated): what an explanation reads of a
        target. Who owns each target in a plan is the plan state's column, which the
        change sets itself; nothing else here depends on a dedication."""
        if [target.id for target in targets] != self.ids:
            raise ValueError("a dedication change keeps the targets and their order")
        self.targets = tuple(targets)

    @property
    def levels(self) -> dict[str, TopologyLevel]:
        # Built on first use: a plan that no family asks about topology pays nothing.
        if self._levels is None:
            self._levels = topology(self.targets)
        return self._levels

    def level(self, name: str) -> TopologyLevel | None:
        return self.levels.get(name)
