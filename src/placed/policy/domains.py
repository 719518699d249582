"""Units of a workload per location at one level, read from a `World` in plain Python:
what spread, near and avoid judge one target at a time (the reference's view).

A world is read at one moment (the reference takes a snapshot per unit), so the tally of
a (workload, level) is built once per world and kept beside it, weakly: judging every
target of a unit costs one pass over the workload's units, not one per target.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from placed.model import Workload
from placed.policy.base import World
from placed.policy.distinct import ancestor_at


@dataclass(slots=True)
class Held:
    """A location's units of one workload: how many, and the first that landed there."""

    count: int
    first: str


_TALLIES: weakref.WeakKeyDictionary[Any, dict[tuple[str, str], dict[str, Held]]] = (
    weakref.WeakKeyDictionary()
)


def units_by_location(world: World, group: str, level: str) -> Mapping[str, Held]:
    """Location id at `level` -> the units of `group` under it (a unit under none of that
    kind counts nowhere), in the order they were placed."""
    memo = _TALLIES.setdefault(world, {})
    found = memo.get((group, level))
    if found is None:
        found = memo[(group, level)] = {}
        for unit, target in world.placed(group):
            location = ancestor_at(target, level)
            if location is None:
                continue
            held = found.get(location)
            if held is None:
                found[location] = Held(1, unit)
            else:
                held.count += 1
    return found


_ELIGIBLE: weakref.WeakKeyDictionary[Any, dict[tuple[str, str], tuple[int, str | None]]] = (
    weakref.WeakKeyDictionary()
)


def fewest(world: World, workload: Workload, level: str) -> tuple[int, str | None]:
    """(the fewest units of `workload` any eligible location at `level` holds, the first
    such location by id): eligible locations are those with a target the workload's
    static filters keep, among those up (a zone whose every host is down is no place to
    wait for). (0, None) when there is none."""
    memo = _ELIGIBLE.setdefault(world, {})
    found = memo.get((workload.name, level))
    if found is None:
        held = units_by_location(world, workload.name, level)
        eligible = {
            ancestor_at(target, level)
            for target in world.statically_kept(workload)
            if world.is_up(target)
        }
        eligible.discard(None)
        ranked = sorted(
            (held[location].count if location in held else 0, location)
            for location in eligible
            if location is not None
        )
        found = memo[(workload.name, level)] = ranked[0] if ranked else (0, None)
    return found
