"""An index extended by targets after its own (a live world's inventory grown), and a
plan state taken onto it, against the index and state of every target built at once:
the same columns and topology codes, the same counts, and the same plans after."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from placed.engine.index import TargetIndex
from placed.engine.planner import Planner
from placed.engine.state import PlanState
from placed.model import Inventory, Location, Spec
from placed.policy.dedication import DedicationState
from tests.strategies import specs


def _same_index(found: TargetIndex, whole: TargetIndex) -> None:
    assert found.ids == whole.ids
    assert found.position == whole.position
    assert (found.hashes == whole.hashes).all()
    assert (found.premixed == whole.premixed).all()
    assert found.resources == whole.resources
    assert found.capacity.shape == whole.capacity.shape
    assert (found.capacity == whole.capacity).all()
    assert (found.up == whole.up).all()
    assert list(found.levels) == list(whole.levels)
    for kind, level in whole.levels.items():
        mine = found.levels[kind]
        assert (mine.ids, mine.codes) == (level.ids, level.codes), kind
        assert (mine.column == level.column).all(), kind


def _placements(planner: Planner, state: PlanState) -> dict[str, str | None]:
    result = planner.plan(state)
    found: dict[str, str | None] = {p.unit: p.target for p in result.placements}
    found.update({u.unit: None for u in result.unplaced})
    return found


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(spec=specs(modes=("allocation",), min_targets=2), data=st.data())
def test_a_state_taken_onto_an_extended_index_plans_as_one_started_on_every_target(
    spec: Spec, data: st.DataObject
) -> None:
    targets = spec.inventory.targets
    assume(len(targets) >= 2)
    cut = data.draw(st.integers(1, len(targets) - 1), label="targets before")
    whole = Planner(spec)
    prefix = TargetIndex(targets[:cut], whole.index.resources)
    if data.draw(st.booleans(), label="levels read before"):
        assert prefix.levels  # built before the extension: extended, not built again
    extended = prefix.extended(targets[cut:])
    _same_index(extended, whole.index)
    grown = Planner.on(spec, extended)

    # The first workload's units placed on the first targets, on both states.
    first = spec.workloads[0]
    started = whole.initial_state()
    before = PlanState(prefix)
    on_prefix = Planner.on(spec, prefix)
    positions = data.draw(st.lists(st.integers(0, cut - 1), max_size=first.units), label="at")
    for k, position in enumerate(positions):
        unit = first.unit_key(k)
        for planner, state in ((whole, started), (on_prefix, before)):
            state.place(unit, first.name, position)
            state.judging = unit
            planner.pipeline.reserve(planner.request(first), state, position)
            state.judging = None
    for level in data.draw(st.lists(st.sampled_from(sorted(whole.index.levels)), max_size=2)):
        before.counts(first.name, level)  # counted before the extension: grown with it
    if data.draw(st.booleans(), label="dedication state made before"):
        before.family_state(DedicationState)
        started.family_state(DedicationState)
    before.extend_to(extended)

    assert before.size == started.size
    assert (before.free == started.free).all()
    assert (before.up == started.up).all()
    assert (before.hashes == started.hashes).all()
    assert dict(before.units) == dict(started.units)
    for level in whole.index.levels:
        assert (before.counts(first.name, level) == started.counts(first.name, level)).all()
        for code in range(1, len(whole.index.levels[level].ids)):
            assert before.first_unit(first.name, level, code) == started.first_unit(
                first.name, level, code
            )
    rest = Spec(spec.inventory, spec.workloads[1:], spec.settings)
    assume(rest.workloads)
    assert _placements(Planner.on(rest, extended), before) == _placements(
        Planner.sharing(whole, rest), started
    )
    assert grown.index is extended


def test_an_index_extended_by_a_target_it_has_or_a_resource_it_does_not_count_is_refused() -> None:
    hosts = tuple(Location(id=f"h{i}", kind="host", capacity={"cpu": 2.0}) for i in range(3))
    targets = Inventory.from_roots((Location(id="r1", kind="rack", children=hosts),)).targets
    index = TargetIndex(targets[:2], ("cpu",))
    with pytest.raises(ValueError, match="new"):
        index.extended(targets[1:3])
    with pytest.raises(ValueError, match="resources"):
        TargetIndex(targets[:2], ()).extended(targets[2:])
    state = PlanState(index)
    with pytest.raises(ValueError, match="extends"):
        state.extend_to(TargetIndex(targets[1:], ("cpu",)))
    assert np.array_equal(state.free, index.capacity)  # refused: the state as it was
    state.extend_to(index.extended(targets[2:]))
    assert state.free.tolist() == [[2.0, 2.0, 2.0]]
