"""The plan state: everything that changes while a plan runs, in one object.

Which targets are up, free capacity, where each unit is, units per group (a workload, for
now) per topology value, an owner per target, and the targets created so far. Policies
read it through `policy.base.PlanView`; the planner changes it as units land. It is
Nomad's "proposed allocations" (existing + planned) and kube-scheduler's cycle state:

- **incremental**: placing a unit touches its target's columns and the counts it
  changes, never a recount; counts for a (group, level) are built once, from the units
  placed so far, the first time a policy asks for them;
- **forkable**: `fork()` is a copy to try things on (what-if, simulate) that leaves the
  original as it was;
- **growable**: `create()` appends a target (a new machine, a container on a machine);
  arrays grow by doubling, so creating k targets costs O(k) amortised, and nothing at
  all when none is created.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import numpy as np
from numpy.typing import NDArray

from placed.engine.index import TARGET_LEVEL, TargetIndex
from placed.engine.selection import stable_hash64
from placed.model import Notice, Target
from placed.model.dedications import Event, Owner

NO_OWNER = -1


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
        self._owner = index.owner_codes.copy()
        # Who each owner code stands for (seed 004): the index's, then those a plan makes
        # (implicit dedication).
        self.owners: list[Owner] = list(index.owners)
        self._owner_codes: dict[Owner, int] = {o: c for c, o in enumerate(self.owners)}
        self._tallies: dict[str, NDArray[np.int32]] = {}
        self._ledgers: dict[str, NDArray[np.float64]] = {}
        self._details: dict[str, dict[str, str]] = {}
        self.events: list[Event] = []
        # Targets a plan dedicated (implicit dedication), in order, with their owner.
        self.dedicated: list[tuple[int, Owner]] = []
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
        self.units: dict[str, tuple[str, int]] = {}
        self._by_group: dict[str, list[str]] = {}
        # The groups whose list this state owns: fork() shares the lists, and the first
        # change of one in either state copies it (a fork costs O(groups), not O(units)).
        self._own_groups: set[str] = set()
        self._counts: dict[tuple[str, str], NDArray[np.int32]] = {}
        self._first: dict[tuple[str, str], dict[int, str]] = {}
        self._tracked: dict[str, list[str]] = {}
        # The unit being judged (allocation), for policies whose rule differs per unit
        # (Juju's `to:` entry i applies to unit i); None between units.
        self.judging: str | None = None
        # Target position created for each unit, numbers handed out by name (machine 7,
        # container 1/lxc/2), and warnings the plan found while it ran.
        self._created_for: dict[str, int] = {}
        self._sequences: dict[str, int] = {}
        self._notices: dict[Notice, None] = {}  # in the order found, each once
        self._notes: dict[str, tuple[str, str]] = {}  # unit -> (via, how a policy put it)
        self._allowed: set[tuple[str, str]] = set()  # (unit, what a fallback allowed it)

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
    def owner(self) -> NDArray[np.intp]:
        return self._owner[: self._size]

    @property
    def hashes(self) -> NDArray[np.uint64]:
        return self._hashes[: self._size]

    def set_owner(self, position: int, owner: int) -> None:
        self._owner[position] = owner

    def owner_code(self, owner: Owner) -> int:
        """The code of an owner, given one if it has none yet."""
        code = self._owner_codes.get(owner)
        if code is None:
            code = self._owner_codes[owner] = len(self.owners)
            self.owners.append(owner)
        return code

    def dedicate(self, position: int, owner: Owner) -> None:
        """A plan gives a target to an owner (implicit dedication)."""
        self._owner[position] = self.owner_code(owner)
        self.dedicated.append((position, owner))

    def tally(self, name: str) -> NDArray[np.int32]:
        """A count per target under a name (VMs of account A3, VMs at all), kept by the
        policy that names it as units land."""
        found = self._tallies.get(name)
        if found is None:
            found = self._tallies[name] = np.zeros(max(self._size, 8), dtype=np.int32)
        if found.size < self._size:
            found = self._tallies[name] = _room(found, self._size)
        return found[: self._size]

    def count(self, name: str, positions: int | NDArray[np.intp], delta: int = 1) -> None:
        self.tally(name)
        np.add.at(self._tallies[name], positions, delta)

    def event(self, event: Event) -> None:
        self.events.append(event)

    def ledger(self, name: str, size: int, start: float = 0.0) -> NDArray[np.float64]:
        """A named array of `size` numbers a policy keeps beside the targets (a storage
        pool's used space, its owner code), created with `start` on first use."""
        found = self._ledgers.get(name)
        if found is None:
            found = self._ledgers[name] = np.full(size, start, dtype=np.float64)
        return found

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

    def next_number(self, sequence: str, start: int) -> int:
        """The next number of a named sequence that begins at `start` (new machines,
        containers per host and kind), handed out once."""
        number = max(start, self._sequences.get(sequence, start))
        self._sequences[sequence] = number + 1
        return number

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

    def allow(self, unit: str, what: str) -> None:
        """A fallback lets `unit` go where its policy keeps it from by default (seed 004's
        preferred implicit mode: a shared host)."""
        self._allowed.add((unit, what))

    def allowed(self, unit: str | None, what: str) -> bool:
        return unit is not None and (unit, what) in self._allowed

    # -- changing ----------------------------------------------------------------------

    def place(self, unit: str, group: str, position: int) -> None:
        """Record that `unit` of `group` landed at `position` (capacity is the capacity
        family's to take, through the pipeline's reserve)."""
        self.units[unit] = (group, position)
        self._group_to_change(group).append(unit)
        for level in self._tracked.get(group, ()):
            code = int(self.level_column(level)[position])
            if code:
                self._counts[(group, level)][code] += 1
                self._first[(group, level)].setdefault(code, unit)

    def _group_to_change(self, group: str) -> list[str]:
        if group not in self._own_groups:
            self._by_group[group] = list(self._by_group.get(group, ()))
            self._own_groups.add(group)
        return self._by_group[group]

    def remove(self, unit: str) -> int:
        """Forget where `unit` is; returns the position it had."""
        group, position = self.units.pop(unit)
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
        return position

    def create(
        self, target: Target, unit: str, constraints: str = "", parent: str | None = None
    ) -> int:
        """Append a target made during the plan; returns its position."""
        position = self._size
        needed = position + 1
        self._up = _room(self._up, needed)
        self._free = _room(self._free, needed, axis=1)
        self._owner = _room(self._owner, needed)
        self._owner[position] = NO_OWNER
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
        return position

    def adopt_created(self, source: PlanState) -> None:
        """Make the targets `source` created during its plan, at the same positions, and
        go on with its numbering: a what-if on a plan's world (a machine the plan made
        fails) starts from the machines and containers that plan left."""
        if self.created:
            raise ValueError("adopt_created needs a state that has created nothing yet")
        for made in source.created:
            self.create(made.target, made.unit, made.constraints, made.parent)
        self._sequences.update(source._sequences)

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
        other._owner = self._owner.copy()
        other.owners = list(self.owners)
        other._owner_codes = dict(self._owner_codes)
        other._tallies = {k: v.copy() for k, v in self._tallies.items()}
        other._ledgers = {k: v.copy() for k, v in self._ledgers.items()}
        other._details = {k: dict(v) for k, v in self._details.items()}
        other.events = list(self.events)
        other.dedicated = list(self.dedicated)
        other.resources = self.resources
        other.created = list(self.created)
        other._created_position = dict(self._created_position)
        other._hashes = self._hashes.copy() if self.created else self._hashes
        other._extra_codes = {k: list(v) for k, v in self._extra_codes.items()}
        other._extra_ids = {k: list(v) for k, v in self._extra_ids.items()}
        other._extra_index = {k: dict(v) for k, v in self._extra_index.items()}
        other._columns = dict(self._columns)
        other.units = dict(self.units)
        other._by_group = dict(self._by_group)
        other._own_groups = set()
        self._own_groups = set()
        other._counts = {k: v.copy() for k, v in self._counts.items()}
        other._first = {k: dict(v) for k, v in self._first.items()}
        other._tracked = {k: list(v) for k, v in self._tracked.items()}
        other.judging = self.judging
        other._created_for = dict(self._created_for)
        other._sequences = dict(self._sequences)
        other._notices = dict(self._notices)
        other._notes = dict(self._notes)
        other._allowed = set(self._allowed)
        return other

    def free_at(self, position: int) -> Mapping[str, float]:
        return {name: float(self._free[row, position]) for row, name in enumerate(self.resources)}
