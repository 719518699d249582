"""The plan state: everything that changes while a plan runs, in one object.

Generic members only: which targets are up, free capacity, the targets' hashes, where
each unit is (`units`, `where`, `placed`), units per group (a workload, for now) per
topology value with the first unit under each (`counts`, `first_unit`), the targets
created so far (`created`, `create`, `created_for`), the unit being judged, and what the
plan reports besides placements: warnings (`notice`), events, and per unit how a policy
put it (`annotate` / `note`) and what it decided besides the target (`detail` /
`details`). Those are generic because the loop itself reads them (every placement's
reason and document, every result's warnings and events) whichever family wrote them,
and any family may write them; `created_for` is the created targets indexed by the unit
they were made for, which every family that creates targets needs to find its own.

What one family alone keeps (seed 004's owners, tallies and pool ledgers; Juju's machine
numbers) lives in that family's state object (`policy.base.FamilyState`), in a key ->
state store here: `family_state(Kind)` is one dict lookup, and makes the state on first
use. Policies read the plan state through `policy.base.PlanView`; the planner changes it
as units land. It is Nomad's "proposed allocations" (existing + planned) and
kube-scheduler's cycle state:

- **incremental**: placing a unit touches its target's columns and the counts it
  changes, never a recount; counts for a (group, level) are built once, from the units
  placed so far, the first time a policy asks for them;
- **forkable**: `fork()` is a copy to try things on (what-if, simulate) that leaves the
  original as it was: the generic members, and each family state's own `copy()`;
- **growable**: `create()` appends a target (a new machine, a container on a machine);
  arrays grow by doubling, so creating k targets costs O(k) amortised, and nothing at
  all when none is created.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import numpy as np
from immutables import Map
from numpy.typing import NDArray

from placed.engine.index import TARGET_LEVEL, TargetIndex
from placed.engine.selection import premixed, stable_hash64
from placed.model import Notice, Target
from placed.model.dedications import Event
from placed.policy.base import FamilyState

State = TypeVar("State", bound=FamilyState)


@dataclass(frozen=True, slots=True)
class CreatedTarget:
    """A target created during a plan: what it is, and what it was created for."""

    target: Target
    position: int
    unit: str  # the unit it was created for
    constraints: str
    parent: str | None  # the machine a container sits on


Column = TypeVar("Column", bound=NDArray[Any])


def _room(array: Column, needed: int, axis: int = -1) -> Column:
    """`array` with room for at least `needed` entries along `axis` (doubling)."""
    have = array.shape[axis]
    if needed <= have:
        return array
    shape = list(array.shape)
    shape[axis] = max(needed, 2 * have, 8)
    grown = np.zeros(shape, dtype=array.dtype)
    index = [slice(None)] * array.ndim
    index[axis] = slice(0, have)
    grown[tuple(index)] = array
    return cast(Column, grown)


class PlanState:
    def __init__(self, index: TargetIndex) -> None:
        self.index = index
        self._size = len(index)
        self._up = index.up.copy()
        self._free = index.capacity.copy()
        # Each stateful family's state, keyed by its class; those whose added/removed
        # hooks do something, called as units land and leave.
        self._families: dict[type[FamilyState], FamilyState] = {}
        self._hooked: list[FamilyState] = []
        self._details: dict[str, dict[str, str]] = {}
        self.events: list[Event] = []
        self.resources = index.resources
        self.created: list[CreatedTarget] = []
        self._created_position: dict[str, int] = {}
        self._hashes = index.hashes
        # Created targets' codes per level, and the ids of values they brought.
        self._extra_codes: dict[str, list[int]] = {}
        self._extra_ids: dict[str, list[str]] = {}
        self._extra_index: dict[str, dict[str, int]] = {}  # level -> id -> code
        self._columns: dict[str, NDArray[np.intp]] = {}
        # unit -> (group, position), and each group's units in the order they landed.
        # Persistent maps: a fork shares them, and a change makes a new one that shares
        # all but a path with the old, so a replica that forks its world for each claim
        # pays O(log units) for it, not a copy of every unit it holds.
        self.units: Map[str, tuple[str, int]] = Map()
        self._by_group: Map[str, list[str]] = Map()
        # The groups whose list this state owns: fork() shares the lists, and the first
        # change of one in either state copies it (that group's alone).
        self._own_groups: set[str] = set()
        self._counts: dict[tuple[str, str], NDArray[np.int32]] = {}
        self._first: dict[tuple[str, str], dict[int, str]] = {}
        self._tracked: dict[str, list[str]] = {}
        # The unit being judged (allocation), for policies whose rule differs per unit
        # (Juju's `to:` entry i applies to unit i); None between units.
        self.judging: str | None = None
        # Target position created for each unit, and warnings the plan found while it ran.
        self._created_for: dict[str, int] = {}
        self._notices: dict[Notice, None] = {}  # in the order found, each once
        self._notes: dict[str, tuple[str, str]] = {}  # unit -> (via, how a policy put it)

    # -- reading (policy.base.PlanView) ---------------------------------------------

    @property
    def size(self) -> int:
        return self._size

    @property
    def up(self) -> NDArray[np.bool_]:
        return self._up[: self._size]

    @property
    def free(self) -> NDArray[np.float64]:
        return self._free[:, : self._size]

    @property
    def hashes(self) -> NDArray[np.uint64]:
        return self._hashes[: self._size]

    @property
    def premixed_hashes(self) -> NDArray[np.uint64]:
        """`selection.premixed` of `hashes`: the index's, unless targets were created."""
        if not self.created:
            return self.index.premixed
        return premixed(self.hashes)

    def family_state(self, kind: type[State]) -> State:
        """The state family `kind` keeps in this plan, made with `kind.start` on first
        use (policy.base.FamilyState)."""
        found = self._families.get(kind)
        if found is None:
            found = self._families[kind] = kind.start(self)
            hooks = type(found)
            if hooks.added is not FamilyState.added or hooks.removed is not FamilyState.removed:
                self._hooked.append(found)
        return found  # type: ignore[return-value]  # keyed by its own class: a State

    def found_family_state(self, kind: type[State]) -> State | None:
        """The state family `kind` keeps, if this plan made one: for reading what a
        family did, without making a state for a plan that never used it."""
        return self._families.get(kind)  # type: ignore[return-value]

    def event(self, event: Event) -> None:
        self.events.append(event)

    def detail(self, unit: str, key: str, value: str) -> None:
        """Something a policy decided for a unit besides its target (the pool of its
        disk), shown with its placement."""
        self._details.setdefault(unit, {})[key] = value

    def details(self, unit: str) -> dict[str, str]:
        return self._details.get(unit, {})

    def target(self, position: int) -> Target:
        base = len(self.index)
        if position < base:
            return self.index.targets[position]
        return self.created[position - base].target

    def target_id(self, position: int) -> str:
        base = len(self.index)
        if position < base:
            return self.index.ids[position]
        return self.created[position - base].target.id

    def position(self, target_id: str) -> int | None:
        found = self.index.position.get(target_id)
        return found if found is not None else self._created_position.get(target_id)

    def targets(self) -> Iterator[Target]:
        yield from self.index.targets
        for created in self.created:
            yield created.target

    def level_column(self, level: str) -> NDArray[np.intp]:
        found = self.index.levels.get(level)
        if found is None:
            # A kind no location has: no target sits under any value of it.
            return np.zeros(self._size, dtype=np.intp)
        if not self.created:
            return found.column
        column = self._columns.get(level)
        if column is None or column.size != self._size:
            column = np.concatenate(
                [found.column, np.array(self._extra_codes.get(level, []), dtype=np.intp)]
            )
            self._columns[level] = column
        return column

    def level_id(self, level: str, code: int) -> str | None:
        if level not in self.index.levels:
            return None
        known = self.index.levels[level].ids
        if code < len(known):
            return known[code]
        return self._extra_ids[level][code - len(known)]

    def counts(self, group: str, level: str) -> NDArray[np.int32]:
        key = (group, level)
        found = self._counts.get(key)
        if found is None:
            # First asked for: count the group's units once; from now on, incrementally.
            column = self.level_column(level)
            positions = np.array(
                [self.units[unit][1] for unit in self._by_group.get(group, [])], dtype=np.intp
            )
            values = self._level_size(level)
            found = np.bincount(column[positions], minlength=values).astype(np.int32)
            found[0] = 0  # a unit under no value of this level counts nowhere
            self._counts[key] = found
            first: dict[int, str] = {}
            for unit in self._by_group.get(group, []):
                code = int(column[self.units[unit][1]])
                if code:
                    first.setdefault(code, unit)
            self._first[key] = first
            self._tracked.setdefault(group, []).append(level)
        return found

    def first_unit(self, group: str, level: str, code: int) -> str | None:
        self.counts(group, level)
        return self._first[(group, level)].get(code)

    def placed(self, group: str) -> Sequence[str]:
        return self._by_group.get(group, ())

    def created_for(self, unit: str) -> int | None:
        """The position of the target created for `unit`, if one was."""
        return self._created_for.get(unit)

    def where(self, unit: str) -> int | None:
        """The position `unit` landed at, if it is placed."""
        found = self.units.get(unit)
        return found[1] if found is not None else None

    def notice(self, notice: Notice) -> None:
        """A warning found while planning (a directive that fell back), kept once."""
        self._notices[notice] = None

    @property
    def notices(self) -> list[Notice]:
        return list(self._notices)

    def annotate(self, unit: str, via: str, note: str) -> None:
        """How a policy is placing `unit` ("directive", "to lxc:wordpress: a new lxc
        container beside wordpress/0"), for its placement's reason."""
        self._notes[unit] = (via, note)

    def note(self, unit: str) -> tuple[str, str] | None:
        return self._notes.get(unit)

    # -- changing ----------------------------------------------------------------------

    def place(self, unit: str, group: str, position: int) -> None:
        """Record that `unit` of `group` landed at `position` (capacity is the capacity
        family's to take, through the pipeline's reserve)."""
        self.units = self.units.set(unit, (group, position))
        self._group_to_change(group).append(unit)
        for level in self._tracked.get(group, ()):
            code = int(self.level_column(level)[position])
            if code:
                self._counts[(group, level)][code] += 1
                self._first[(group, level)].setdefault(code, unit)
        for kept in self._hooked:
            kept.added(unit, group, position)

    def _group_to_change(self, group: str) -> list[str]:
        if group not in self._own_groups:
            self._by_group = self._by_group.set(group, list(self._by_group.get(group, ())))
            self._own_groups.add(group)
        return self._by_group[group]

    def remove(self, unit: str) -> int:
        """Forget where `unit` is; returns the position it had."""
        group, position = self.units[unit]
        self.units = self.units.delete(unit)
        self._group_to_change(group).remove(unit)
        for level in self._tracked.get(group, ()):
            code = int(self.level_column(level)[position])
            if not code:
                continue
            self._counts[(group, level)][code] -= 1
            first = self._first[(group, level)]
            if first.get(code) == unit:
                del first[code]
                column = self.level_column(level)
                for other in self._by_group[group]:
                    if int(column[self.units[other][1]]) == code:
                        first[code] = other
                        break
        for kept in self._hooked:
            kept.removed(unit, group, position)
        return position

    def create(
        self, target: Target, unit: str, constraints: str = "", parent: str | None = None
    ) -> int:
        """Append a target made during the plan; returns its position."""
        position = self._size
        needed = position + 1
        self._up = _room(self._up, needed)
        self._free = _room(self._free, needed, axis=1)
        self._hashes = _room(self._hashes, needed)
        self._up[position] = target.up
        if parent is not None:
            # A container is up only while its machine is: one made on a failed machine
            # in a what-if is no place to run.
            on = self.position(parent)
            if on is not None and not self._up[on]:
                self._up[position] = False
        for row, name in enumerate(self.resources):
            self._free[row, position] = target.capacity.get(name, 0.0)
        self._hashes[position] = np.uint64(stable_hash64(target.id))
        chain = dict((*target.ancestors, (target.kind, target.id)))
        chain[TARGET_LEVEL] = target.id
        for level in self.index.levels.values():
            location_id = chain.get(level.name)
            code = 0
            if location_id is not None:
                code = level.codes.get(location_id, 0) or self._extra_code(level.name, location_id)
            self._extra_codes.setdefault(level.name, []).append(code)
            for (group, tracked), counts in self._counts.items():
                if tracked == level.name and code >= counts.size:
                    self._counts[(group, tracked)] = _room(counts, code + 1)
        self._size = needed
        self.created.append(CreatedTarget(target, position, unit, constraints, parent))
        self._created_position[target.id] = position
        self._created_for[unit] = position  # the last: a container after its machine
        for kept in self._families.values():
            kept.grown(position, target)
        return position

    def extend_to(self, index: TargetIndex) -> None:
        """Take in the targets `index` holds after this state's (`index` is this state's
        index `TargetIndex.extended`): each empty, as the index says it is, and every
        family state told (`FamilyState.taken_in`). What a state started on `index` with
        the same units holds; the units and their places are kept as they are. A live
        world's inventory grows so. ValueError for a state that created targets (theirs
        are the positions the new ones take) or an index that is not an extension."""
        size = self._size
        if self.created:
            raise ValueError("a state that created targets cannot take others in")
        if len(index) < size or index.ids[:size] != self.index.ids:
            raise ValueError("an index that extends the state's own")
        self.index = index
        self._size = len(index)
        self._up = np.concatenate([self._up[:size], index.up[size:]])
        self._free = np.concatenate([self._free[:, :size], index.capacity[:, size:]], axis=1)
        self._hashes = index.hashes
        self._columns = {}
        for (group, level), counts in self._counts.items():
            values = self._level_size(level)
            if counts.size < values:
                grown = np.zeros(values, dtype=counts.dtype)
                grown[: counts.size] = counts
                self._counts[(group, level)] = grown
        for position in range(size, self._size):
            for kept in self._families.values():
                kept.taken_in(position, index.targets[position])

    def adopt_created(self, source: PlanState) -> None:
        """Make the targets `source` created during its plan, at the same positions, and
        go on with its numbering: a what-if on a plan's world (a machine the plan made
        fails) starts from the machines and containers that plan left. Family states are
        not carried over (this state's start afresh); numbering goes on by itself, since a
        family that names targets skips the names already taken (Juju's machines)."""
        if self.created:
            raise ValueError("adopt_created needs a state that has created nothing yet")
        for made in source.created:
            self.create(made.target, made.unit, made.constraints, made.parent)

    def forget_lost_creations(self) -> None:
        """A unit whose made target is down is as if nothing had been made for it: in a
        what-if, a unit whose new machine (or container) failed gets another, as Juju's
        default placement would give it one."""
        for made in self.created:
            if not self._up[made.position] and self._created_for.get(made.unit) == made.position:
                del self._created_for[made.unit]

    def _extra_code(self, level: str, location_id: str) -> int:
        codes = self._extra_index.setdefault(level, {})
        found = codes.get(location_id)
        if found is not None:
            return found
        extra = self._extra_ids.setdefault(level, [])
        extra.append(location_id)
        code = len(self.index.levels[level].ids) + len(extra) - 1
        codes[location_id] = code
        return code

    def _level_size(self, level: str) -> int:
        found = self.index.levels.get(level)
        return (len(found.ids) if found else 1) + len(self._extra_ids.get(level, ()))

    def fork(self) -> PlanState:
        """A copy to try things on; changing it leaves this state as it was."""
        other = PlanState.__new__(PlanState)
        other.index = self.index
        other._size = self._size
        other._up = self._up.copy()
        other._free = self._free.copy()
        other._families = {kind: kept.copy() for kind, kept in self._families.items()}
        other._hooked = [other._families[type(kept)] for kept in self._hooked]
        other._details = {k: dict(v) for k, v in self._details.items()}
        other.events = list(self.events)
        other.resources = self.resources
        other.created = list(self.created)
        other._created_position = dict(self._created_position)
        other._hashes = self._hashes.copy() if self.created else self._hashes
        other._extra_codes = {k: list(v) for k, v in self._extra_codes.items()}
        other._extra_ids = {k: list(v) for k, v in self._extra_ids.items()}
        other._extra_index = {k: dict(v) for k, v in self._extra_index.items()}
        other._columns = dict(self._columns)
        other.units = self.units  # persistent: shared until either changes it
        other._by_group = self._by_group
        other._own_groups = set()
        self._own_groups = set()
        other._counts = {k: v.copy() for k, v in self._counts.items()}
        other._first = {k: dict(v) for k, v in self._first.items()}
        other._tracked = {k: list(v) for k, v in self._tracked.items()}
        other.judging = self.judging
        other._created_for = dict(self._created_for)
        other._notices = dict(self._notices)
        other._notes = dict(self._notes)
        return other

    def free_at(self, position: int) -> Mapping[str, float]:
        return {name: float(self._free[row, position]) for row, name in enumerate(self.resources)}
