"""The plan state: counts kept incrementally equal a recount, forks are independent,
created targets grow every column, current placements load into it."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from placed.engine.index import TARGET_LEVEL, TargetIndex
from placed.engine.planner import Planner
from placed.engine.state import PlanState
from placed.model import TagRules, Target
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
                assert first in state.placed(group)
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
    fork.set_owner(3, 7)
    fork.create(Target("new-1", "machine", frozenset(), {}, TagRules(), {"cpu": 2.0}, True), "w/2")
    assert state.placed("w") == ["w/0"] and fork.placed("w") == ["w/0", "w/1"]
    assert list(state.counts("w", "rack")) == [0, 1, 0]
    assert list(fork.counts("w", "rack"))[:3] == [0, 1, 1]
    assert state.up[1] and not fork.up[1]
    assert state.free[0, 0] == 4 and fork.free[0, 0] == 1
    assert state.owner[3] == -1 and fork.owner[3] == 7
    assert state.size == 5 and fork.size == 6 and not state.created


def test_created_targets_grow_every_column_and_join_their_parents_values() -> None:
    state = PlanState(index())
    state.counts("w", "rack")
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
    assert state.up.shape == (25,) and state.free.shape == (1, 25) and state.owner.shape == (25,)
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
