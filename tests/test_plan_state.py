"""The plan state: counts kept incrementally equal a recount, forks are independent,
created targets grow every column, current placements load into it, and a stateful
family is one module: its state object lives in the plan state's family store."""

from __future__ import annotations

from typing import Any, ClassVar, Self

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray

from placed.engine.index import TARGET_LEVEL, TargetIndex
from placed.engine.planner import Planner
from placed.engine.reference import reference_plan
from placed.engine.state import PlanState
from placed.model import TagRules, Target, Workload
from placed.policy.base import (
    BoolArray,
    Bound,
    Family,
    FamilyState,
    Filter,
    IndexView,
    PlanView,
    Reason,
    World,
)
from placed.policy.dedication import DedicationState
from placed.policy.registry import FAMILIES
from placed.spec import load_spec_text

SPEC = """
inventory:
  - id: z1
    kind: zone
    children:
      - id: r1
        kind: rack
        children: [{id: a, capacity: {cpu: 4}}, {id: b, capacity: {cpu: 4}}]
      - id: r2
        kind: rack
        children: [{id: c, capacity: {cpu: 4}}]
  - id: z2
    kind: zone
    children:
      - {id: d, capacity: {cpu: 4}}
  - {id: e, capacity: {cpu: 4}}
workloads:
  - {name: w, units: 2, resources: {cpu: 1}}
  - {name: v, units: 2, resources: {cpu: 3}}
"""


def index() -> TargetIndex:
    return Planner(load_spec_text(SPEC)).index


def recount(state: PlanState, group: str, level: str) -> list[int]:
    column = state.level_column(level)
    counts = [0] * len(state.counts(group, level))
    for unit in state.placed(group):
        code = int(column[state.units[unit][1]])
        if code:
            counts[code] += 1
    return counts


def test_topology_columns_give_each_targets_ancestor_per_level() -> None:
    found = index()
    rack, zone = found.levels["rack"], found.levels["zone"]
    named = {
        level: [lv.ids[c] for c in lv.column] for level, lv in (("rack", rack), ("zone", zone))
    }
    assert found.ids == ["a", "b", "c", "d", "e"]
    assert named["rack"] == ["r1", "r1", "r2", None, None]
    assert named["zone"] == ["z1", "z1", "z1", "z2", None]
    assert list(found.levels[TARGET_LEVEL].column) == [1, 2, 3, 4, 5]


operations = st.lists(
    st.tuples(st.sampled_from(["w", "v"]), st.integers(0, 4), st.booleans()), max_size=30
)


@settings(max_examples=100, deadline=None)
@given(operations, st.sampled_from(["rack", "zone", TARGET_LEVEL]), st.integers(0, 30))
def test_counts_kept_as_units_land_equal_a_recount(
    ops: list[tuple[str, int, bool]], level: str, ask_after: int
) -> None:
    state = PlanState(index())
    for step, (group, position, remove) in enumerate(ops):
        if step == ask_after:
            state.counts("w", level)  # from here on, w's counts are kept incrementally
        placed = state.placed(group)
        if remove and placed:
            state.remove(placed[0])
        else:
            state.place(f"{group}/{step}", group, position)
    for group in ("w", "v"):
        assert list(state.counts(group, level)) == recount(state, group, level)
        column = state.level_column(level)
        for code, count in enumerate(state.counts(group, level)):
            first = state.first_unit(group, level, code)
            if count:
                assert first is not None and first in state.placed(group)
                assert int(column[state.units[first][1]]) == code
            else:
                assert first is None


def test_a_fork_changes_without_touching_the_original() -> None:
    state = PlanState(index())
    state.place("w/0", "w", 0)
    state.counts("w", "rack")
    fork = state.fork()
    fork.place("w/1", "w", 2)
    fork.up[1] = False
    fork.free[0, 0] -= 3
    fork.family_state(DedicationState).set_owner(3, 7)
    fork.create(Target("new-1", "machine", frozenset(), {}, TagRules(), {"cpu": 2.0}, True), "w/2")
    assert state.placed("w") == ["w/0"] and fork.placed("w") == ["w/0", "w/1"]
    assert list(state.counts("w", "rack")) == [0, 1, 0]
    assert list(fork.counts("w", "rack"))[:3] == [0, 1, 1]
    assert state.up[1] and not fork.up[1]
    assert state.free[0, 0] == 4 and fork.free[0, 0] == 1
    owner = state.family_state(DedicationState).owner
    assert owner[3] == -1 and fork.family_state(DedicationState).owner[3] == 7
    assert state.size == 5 and fork.size == 6 and not state.created


def test_a_fork_shares_the_unit_tables_until_either_side_changes_them() -> None:
    """A replica forks its world for every claim: a fork copies no table of units (it
    shares them, persistent), and a change on either side after it is that side's."""
    state = PlanState(index())
    for i in range(3):
        state.place(f"w/{i}", "w", i)
    state.place("v/0", "v", 4)
    fork = state.fork()
    assert fork.units is state.units and fork.placed("w") is state.placed("w")
    fork.remove("w/1")
    fork.place("w/3", "w", 1)
    state.place("v/1", "v", 0)
    assert dict(state.units) == {
        "w/0": ("w", 0),
        "w/1": ("w", 1),
        "w/2": ("w", 2),
        "v/0": ("v", 4),
        "v/1": ("v", 0),
    }
    assert dict(fork.units) == {"w/0": ("w", 0), "w/2": ("w", 2), "w/3": ("w", 1), "v/0": ("v", 4)}
    assert state.placed("w") == ["w/0", "w/1", "w/2"] and fork.placed("w") == ["w/0", "w/2", "w/3"]
    assert state.placed("v") == ["v/0", "v/1"] and fork.placed("v") == ["v/0"]
    assert state.where("w/1") == 1 and fork.where("w/1") is None


def test_created_targets_grow_every_column_and_join_their_parents_values() -> None:
    state = PlanState(index())
    state.counts("w", "rack")
    dedication = state.family_state(DedicationState)  # made before the targets: grown
    machines = []
    for i in range(20):  # past the first doubling
        target = Target(
            f"c{i}",
            "container",
            frozenset(),
            {},
            TagRules(),
            {"cpu": 1.0},
            True,
            ancestors=(("zone", "z1"), ("rack", "r2" if i % 2 else "r9")),
        )
        machines.append(state.create(target, f"w/{i}", "cpu=1", parent="c"))
    assert state.size == 25 and machines == list(range(5, 25))
    assert state.target_id(24) == "c19" and state.position("c19") == 24
    assert (
        state.up.shape == (25,) and state.free.shape == (1, 25) and dedication.owner.shape == (25,)
    )
    rack = state.level_column("rack")
    assert [state.level_id("rack", int(c)) for c in rack[5:9]] == ["r9", "r2", "r9", "r2"]
    # A created target in an existing rack counts there.
    state.place("w/x", "w", 6)
    assert state.counts("w", "rack")[state.index.levels["rack"].codes["r2"]] == 1
    assert state.first_unit("w", "rack", int(rack[6])) == "w/x"
    # Each created target is its own value at the target level.
    assert len(set(state.level_column(TARGET_LEVEL).tolist())) == 25
    assert np.array_equal(state.free[0, 5:], np.ones(20))


def test_current_placements_load_into_the_state() -> None:
    spec = load_spec_text(SPEC)
    planner = Planner(spec)
    before = planner.plan()
    state = planner.initial_state()
    planner.load(state, before.placements)
    assert set(state.units) == {p.unit for p in before.placements}
    used = {t: 0.0 for t in planner.index.ids}
    for p in before.placements:
        used[p.target] += {"w": 1.0, "v": 3.0}[p.workload]
    for position, target_id in enumerate(planner.index.ids):
        assert state.free[0, position] == 4 - used[target_id]


# -- a stateful family defined here: nothing in engine/ knows it ---------------------------

LIMIT = 2


class Crowd(FamilyState):
    """Units on each target, whatever their workload, kept by the added / removed hooks
    (not by a consumer's reserve): the plan state calls them as units land and leave."""

    def __init__(self, here: NDArray[np.int64], units: dict[str, int]) -> None:
        self.here = here
        self.units = units  # unit -> position, to check the hooks' bookkeeping

    @classmethod
    def start(cls, plan: PlanView) -> Self:
        # Made on first use, after units may have landed: count those once.
        here = np.zeros(plan.size, dtype=np.int64)
        units = {unit: position for unit, (_, position) in plan.units.items()}
        np.add.at(here, list(units.values()), 1)
        return cls(here, units)

    def copy(self) -> Self:
        return type(self)(self.here.copy(), dict(self.units))

    def added(self, unit: str, group: str, position: int) -> None:
        self.here[position] += 1
        self.units[unit] = position

    def removed(self, unit: str, group: str, position: int) -> None:
        self.here[position] -= 1
        del self.units[unit]

    def grown(self, position: int, target: Target) -> None:
        self.here = np.append(self.here, 0)


def crowded() -> Reason:
    return Reason(Uncrowded.Room.name, f"holds {LIMIT} units already", f"hold {LIMIT} units")


class Uncrowded(Family):
    """At most LIMIT units on a target, counting every workload's."""

    name = "uncrowded"
    seed = "test"

    class Room(Filter):
        name = "uncrowded"
        summary = f"holds {LIMIT} units already"

        def prepare(self, workload: Workload) -> bool:
            return True

        def keep(self, prepared: Any, state: PlanView) -> BoolArray:
            return state.family_state(Crowd).here < LIMIT

        def reason(
            self, workload: Workload, target: Target, position: int, state: PlanView
        ) -> Reason:
            return crowded()

        def judge(self, workload: Workload, target: Target, world: World) -> Reason | None:
            here = world.family_state(Crowd).here[world.position(target)]
            return None if here < LIMIT else crowded()

    filter_types: ClassVar[tuple[type[Filter], ...]] = (Room,)

    def bind(self, index: IndexView) -> Bound:
        return Bound(filters=(Uncrowded.Room(),))


CROWDED = """
inventory:
  - {id: a, capacity: {cpu: 10}}
  - {id: b, capacity: {cpu: 10}}
  - {id: c, capacity: {cpu: 10}}
workloads:
  - {name: w, units: 4, resources: {cpu: 1}}
  - {name: v, units: 3, resources: {cpu: 1}}
"""


def crowd_of(state: PlanState) -> list[int]:
    """Units per target, counted from the generic state."""
    counted = [0] * state.size
    for _, position in state.units.values():
        counted[position] += 1
    return counted


def test_a_stateful_family_is_one_module_its_state_forks_and_follows_units() -> None:
    families = (*FAMILIES, Uncrowded())
    planner = Planner(load_spec_text(CROWDED), families)
    state = planner.initial_state()
    result = planner.plan(state)
    where = [p.target for p in result.placements]
    # Without the family, capacity alone would let one target take more than LIMIT.
    assert sorted(where.count(t) for t in "abc") == [2, 2, 2] and len(where) == 6
    assert [u.unit for u in result.unplaced] == ["v/2"]
    assert "3 hold 2 units" in result.unplaced[0].summary
    # The reference reads the same state through World: it places the same.
    reference = {o.unit: o.target for o in reference_plan(planner.spec, families=families)}
    assert reference == {p.unit: p.target for p in result.placements} | {"v/2": None}

    crowd = state.family_state(Crowd)
    assert crowd.here.tolist() == crowd_of(state) == [2, 2, 2]
    assert crowd.units == {unit: position for unit, (_, position) in state.units.items()}

    fork = state.fork()
    forked = fork.family_state(Crowd)
    assert forked is not crowd
    moved = next(unit for unit, (_, position) in state.units.items() if position == 0)
    fork.remove(moved)
    fork.place(moved, "w", 1)  # the plan state tells the family: nothing else does
    fork.create(Target("d", "machine", frozenset(), {}, TagRules(), {"cpu": 4.0}, True), "v/2")
    fork.place("v/2", "v", 3)
    assert forked.here.tolist() == crowd_of(fork) == [1, 3, 2, 1]
    assert forked.units[moved] == 1 and forked.units["v/2"] == 3
    # The original is as it was.
    assert crowd.here.tolist() == crowd_of(state) == [2, 2, 2]
    assert crowd.units[moved] == 0 and "v/2" not in crowd.units
    # A plan on the fork sees the fork's crowd: target b is full there, not here.
    assert not planner.pipeline.feasible(planner.request(planner.workloads["v"]), fork)[1]
    assert planner.pipeline.feasible(planner.request(planner.workloads["v"]), state).tolist() == [
        False,
        False,
        False,
    ]


def test_a_family_state_is_made_on_first_use_and_counts_what_landed_before() -> None:
    state = PlanState(index())
    state.place("w/0", "w", 0)
    fork = state.fork()  # before anyone asked: each makes its own on first use
    state.place("w/1", "w", 0)
    assert state.family_state(Crowd).here.tolist()[:2] == [2, 0]
    assert fork.family_state(Crowd).here.tolist()[:2] == [1, 0]
    assert state.family_state(Crowd) is state.family_state(Crowd)


def test_a_plan_that_never_uses_a_family_makes_no_state_for_it() -> None:
    planner = Planner(load_spec_text(SPEC))
    state = planner.initial_state()
    planner.plan(state)
    assert state.found_family_state(DedicationState) is None
    made = state.family_state(DedicationState)
    assert state.found_family_state(DedicationState) is made
