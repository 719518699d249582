"""The mapping-mode guarantees, proved on random inventories:

- taking a target down moves only the units it owned;
- bringing a target up moves only units to it;
- the result never depends on the order of targets or workloads in the spec.
In allocation mode, a target going down re-places only the units that were on it.
"""

from __future__ import annotations

import dataclasses

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from placed.engine.planner import Placement, Planner
from placed.engine.rebalance import simulate
from placed.model import Inventory, Location, Spec

from .strategies import specs


def owners(spec: Spec) -> dict[str, str | None]:
    return {
        o.unit: (o.target if isinstance(o, Placement) else None)
        for o in Planner(spec).plan().outcomes
    }


@settings(max_examples=200, deadline=None)
@given(specs(modes=("mapping",), min_targets=1), st.data())
def test_down_moves_only_the_lost_targets_units(spec: Spec, data: st.DataObject) -> None:
    live = [t.id for t in spec.inventory.targets if t.up]
    assume(live)
    lost = data.draw(st.sampled_from(live))
    before = owners(spec)
    result = simulate(Planner(spec), [lost], [])
    moved = {m.unit for m in result.moves}
    assert all(m.source == lost for m in result.moves)
    assert moved == {unit for unit, target in before.items() if target == lost}


@settings(max_examples=200, deadline=None)
@given(specs(modes=("mapping",), min_targets=1), st.data())
def test_up_moves_only_units_to_the_new_target(spec: Spec, data: st.DataObject) -> None:
    down = [t.id for t in spec.inventory.targets if not t.up]
    assume(down)
    joined = data.draw(st.sampled_from(down))
    result = simulate(Planner(spec), [], [joined])
    assert all(m.destination == joined for m in result.moves)


def _reordered(spec: Spec, order: list[int], workload_order: list[int]) -> Spec:
    roots = spec.inventory.roots
    shuffled = []
    for root in (roots[i] for i in order):
        children = tuple(reversed(root.children))  # also shuffles inside racks
        shuffled.append(dataclasses.replace(root, children=children) if children else root)
    return Spec(
        Inventory.from_roots(tuple(shuffled)),
        tuple(spec.workloads[i] for i in workload_order),
        spec.settings,
    )


@settings(max_examples=200, deadline=None)
@given(specs(modes=("mapping",)), st.data())
def test_mapping_does_not_depend_on_input_order(spec: Spec, data: st.DataObject) -> None:
    order = data.draw(st.permutations(range(len(spec.inventory.roots))))
    workload_order = data.draw(st.permutations(range(len(spec.workloads))))
    assert owners(_reordered(spec, list(order), list(workload_order))) == owners(spec)


@settings(max_examples=200, deadline=None)
@given(specs(modes=("allocation", "every"), min_targets=1), st.data())
def test_allocation_down_replaces_only_the_lost_targets_units(
    spec: Spec, data: st.DataObject
) -> None:
    live = [t.id for t in spec.inventory.targets if t.up]
    assume(live)
    lost = data.draw(st.sampled_from(live))
    before = owners(spec)
    result = simulate(Planner(spec), [lost], [])
    for move in result.moves:
        # A unit that had a place keeps it unless its place was lost; a unit that had no
        # place may find one, but nothing placed elsewhere is disturbed.
        assert move.source in (lost, None)
    assert {u for u, t in before.items() if t == lost} <= {m.unit for m in result.moves}


def test_down_on_a_location_takes_every_target_in_it() -> None:
    rack = Location(
        id="rack1",
        kind="rack",
        children=(Location(id="a", kind="host"), Location(id="b", kind="host")),
    )
    spec = Spec(Inventory.from_roots((rack, Location(id="c", kind="host"))), ())
    result = simulate(Planner(spec), ["rack1"], [])
    assert result.down == ["a", "b"]
