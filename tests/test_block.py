"""Block placement (engine/block.py) gives what the unit-by-unit loop gives: the same
outcomes, byte for byte, and the same capacity left (and so do the verdicts it keeps
across the units of a workload judged one at a time), on inventories chosen to be hard for
it: capacities like 0.1 and 1/3 whose repeated subtraction rounds, several resources,
equal scores and soft-tag tiers, targets already partly used, and workloads that run out
of room part-way."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import numpy as np
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from placed.engine import block
from placed.engine.cloud import Cloud
from placed.engine.outcomes import Outcome
from placed.engine.planner import Placement, Planner
from placed.engine.rebalance import simulate
from placed.engine.reference import reference_plan
from placed.engine.report import plan_document
from placed.model import Inventory, Location, Settings, Spec, TagRules, Workload
from placed.model.dedications import DedicationError
from placed.model.spec import Running
from placed.model.tenancy import ROOT_ADMIN
from placed.policy.dedication import SHARED, VMS, DedicationState
from placed.policy.distinct import Distinct
from placed.policy.tags import Tagged
from placed.spec import load_spec_text

from .test_dedication_properties import spec_text, worlds

RESOURCES = ("cpu", "mem", "gpu")
AMOUNTS = (0.1, 0.2, 0.3, 1 / 3, 0.5, 1.0, 2.0)
CAPACITIES = (0.0, 0.1, 0.3, 1 / 3, 0.6, 0.7, 1.0, 1.5, 2.0, 3.0, 7.3)
TAGS = ("a", "b", "c")


@st.composite
def _specs(draw: st.DrawFn) -> Spec:
    count = draw(st.integers(1, 10))
    leaves = tuple(
        Location(
            id=f"t{i}",
            kind="host",
            tags=draw(st.frozensets(st.sampled_from(TAGS), max_size=2)),
            rules=TagRules(soft_affinity=draw(st.frozensets(st.sampled_from(TAGS), max_size=2))),
            capacity=draw(st.dictionaries(st.sampled_from(RESOURCES), st.sampled_from(CAPACITIES))),
            status=draw(st.sampled_from(["up", "up", "up", "up", "down"])),
        )
        for i in range(count)
    )
    racks = (
        Location(id="r0", kind="rack", children=leaves[::2]),
        Location(id="r1", kind="rack", children=leaves[1::2]),
    )
    inventory = Inventory.from_roots(tuple(r for r in racks if r.children))
    workloads = tuple(
        Workload(
            name=f"w{w}",
            units=draw(st.integers(1, 30)),
            resources=draw(
                st.dictionaries(st.sampled_from(RESOURCES), st.sampled_from(AMOUNTS), min_size=1)
            ),
            requests=(
                Tagged(draw(st.frozensets(st.sampled_from(TAGS), max_size=2))),
                # `distinct` is not local: such a workload goes one unit at a time, with
                # the local verdicts kept across its units (block.Following).
                *draw(st.sampled_from([(), (), (Distinct("rack"),), (Distinct("host"),)])),
            ),
        )
        for w in range(draw(st.integers(1, 3)))
    )
    # Units that already run take their share before the plan: targets start partly used.
    running = tuple(
        Running(workload.name, f"{workload.name}/run{r}", f"t{draw(st.integers(0, count - 1))}")
        for workload in workloads
        for r in range(draw(st.integers(0, 3)))
    )
    return Spec(inventory, workloads, Settings(), running=running)


def _plan(spec: Spec, enabled: bool) -> tuple[str, list[Outcome], np.ndarray]:
    saved = block.ENABLED
    block.ENABLED = enabled
    try:
        planner = Planner(spec)
        state = planner.initial_state()
        result = planner.plan(state)
    finally:
        block.ENABLED = saved
    return json.dumps(plan_document(result)), result.outcomes, state.free.copy()


@settings(max_examples=300, deadline=None)
@given(_specs())
def test_blocks_place_as_one_unit_at_a_time(spec: Spec) -> None:
    fast_json, fast, fast_free = _plan(spec, enabled=True)
    slow_json, slow, slow_free = _plan(spec, enabled=False)
    assert fast == slow
    assert fast_json == slow_json
    # Bit for bit: the same float subtractions in the same order at every target.
    assert fast_free.tobytes() == slow_free.tobytes()


@settings(max_examples=60, deadline=None)
@given(_specs())
def test_blocks_place_as_the_reference_does(spec: Spec) -> None:
    spec = dataclasses.replace(spec, running=())  # the reference starts from nothing
    _, fast, _ = _plan(spec, enabled=True)
    expected = [(o.unit, o.target, o.score, o.summary) for o in reference_plan(spec)]
    assert [
        (o.unit, o.target, o.score, None)
        if isinstance(o, Placement)
        else (o.unit, None, None, o.summary)
        for o in fast
    ] == expected


def test_a_capacity_workload_goes_in_blocks() -> None:
    # Without this the properties above could pass with the fast path never taken.
    leaves = tuple(Location(id=f"t{i}", kind="host", capacity={"cpu": 1.0}) for i in range(4))
    spec = Spec(
        Inventory.from_roots(leaves),
        (Workload(name="w", units=5, resources={"cpu": 0.1 + 0.2}),),
        Settings(),
    )
    planner = Planner(spec)
    state = planner.initial_state()
    workload = spec.workloads[0]
    keys = [workload.unit_key(i) for i in range(workload.units)]
    placed = planner.judge.block(planner.request(workload), workload, keys, state)
    # 1.0 - 0.3 - 0.3 - 0.3 leaves 0.0999...: three units fit per target, four targets
    # hold all five, and the block places them all.
    assert len(placed) == 5
    assert state.free[0].tolist() == [_left(1.0, p, 0.1 + 0.2) for p in _per_target(placed)]


def _left(free: float, times: int, amount: float) -> float:
    for _ in range(times):
        free -= amount
    return free


def _per_target(placed: list[Placement]) -> list[int]:
    targets = [p.target for p in placed]
    return [targets.count(f"t{i}") for i in range(4)]


def _simulate(spec: Spec, down: list[str], enabled: bool) -> tuple[str, list[Outcome], bytes]:
    saved = block.ENABLED
    block.ENABLED = enabled
    try:
        found = simulate(Planner(spec), down, [])
    finally:
        block.ENABLED = saved
    assert found.state is not None
    document = json.dumps(found.to_dict()) + json.dumps(plan_document(found.after))
    return document, found.after.outcomes, found.state.free.tobytes()


@settings(max_examples=200, deadline=None)
@given(_specs(), st.data())
def test_a_simulation_keeps_its_verdicts_as_it_judges_every_unit(
    spec: Spec, data: st.DataObject
) -> None:
    # A simulation places again the units of the targets down in blocks, around those that
    # stay (not placed again), and the rest one at a time with the verdicts kept across
    # a workload's units.
    ids = [t.id for t in spec.inventory.targets]
    down = data.draw(st.lists(st.sampled_from(ids), max_size=3, unique=True))
    assert _simulate(spec, down, enabled=True) == _simulate(spec, down, enabled=False)


def test_a_simulation_places_the_units_of_a_target_down_in_a_block(monkeypatch: Any) -> None:
    # Without this the property above could pass with the simulation never taking the
    # block path: a drain's hundred units would be judged one by one.
    leaves = tuple(Location(id=f"t{i}", kind="host", capacity={"cpu": 4.0}) for i in range(4))
    spec = Spec(
        Inventory.from_roots(leaves),
        (Workload(name="w", units=2, resources={"cpu": 1.0}),),
        Settings(),
        running=tuple(Running("w", f"w/run{k}", "t0") for k in range(3)),
    )
    blocks: list[list[str]] = []
    placing = block.place

    def counted(*args: Any) -> list[Placement]:
        placed = placing(*args)
        blocks.append([p.unit for p in placed])
        return placed

    monkeypatch.setattr(block, "place", counted)
    found = simulate(Planner(spec), ["t0"], [])
    # The plan before places the workload's two units in a block of its own; the
    # simulation keeps them where they are (a unit on t0 would go again) and places
    # the three that ran on t0 in one block.
    assert blocks[0] == ["w/0", "w/1"]
    assert blocks[1][:3] == ["w/run0", "w/run1", "w/run2"]
    assert {"w/run0", "w/run1", "w/run2"} <= {move.unit for move in found.moves}


@st.composite
def _tenant_specs(draw: st.DrawFn) -> Spec:
    """Seed 004's worlds (hosts of 2 cpu, so that targets fill part-way through a
    workload) with workloads of several VMs each: dedicated ones follow their scores
    (tenant-affinity) landing by landing, the others go in blocks; dedications of zones,
    pods and hosts, implicit dedication on or off, and a preferred offering whose
    fallback allows a unit shared hosts."""
    world = draw(worlds())
    accounts = list(world["accounts"])
    workloads = [
        {
            "name": f"w{i}",
            "account": draw(st.sampled_from(accounts)),
            "offering": draw(st.sampled_from(["ded", "shared", "preferred"])),
            "units": draw(st.integers(1, 6)),
        }
        for i in range(draw(st.integers(1, 5)))
    ]
    document = yaml.safe_load(spec_text(world, workloads))
    document["offerings"].append(
        {"name": "preferred", "cpu": 1, "dedicated": True, "implicit": "preferred"}
    )
    cloud = Cloud(load_spec_text(yaml.safe_dump(document), "tenants.yaml"))
    resources = [
        *(zone["id"] for zone in world["inventory"]),
        *(pod["id"] for zone in world["inventory"] for pod in zone["children"]),
        *world["hosts"],
    ]
    for resource in draw(st.lists(st.sampled_from(resources), max_size=3)):
        account = draw(st.sampled_from(accounts))
        domain = world["accounts"][account]
        owner = account if draw(st.booleans()) else None
        try:  # only legal dedications: the file would fail otherwise
            cloud.dedicate(ROOT_ADMIN, resource, domain, owner)
        except DedicationError:
            continue
        entry = {"resource": resource, "domain": domain}
        document.setdefault("dedications", []).append(
            {**entry, "account": owner} if owner else entry
        )
    return load_spec_text(yaml.safe_dump(document), "tenants.yaml")


def _tenant_plan(spec: Spec, enabled: bool) -> tuple[str, list[Outcome], bytes, str]:
    json_text, outcomes, free = _plan(spec, enabled)
    saved = block.ENABLED
    block.ENABLED = enabled
    try:
        planner = Planner(spec)
        state = planner.initial_state()
        planner.plan(state)
    finally:
        block.ENABLED = saved
    kept = state.family_state(DedicationState)
    owners = repr((kept.owner.tolist(), kept.owners, kept.tally(VMS).tolist()))
    return json_text, outcomes, free.tobytes(), owners


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_tenant_specs())
def test_tenants_place_as_one_unit_at_a_time_and_as_the_reference(spec: Spec) -> None:
    assert _tenant_plan(spec, enabled=True) == _tenant_plan(spec, enabled=False)
    _, fast, _ = _plan(spec, enabled=True)
    expected = [(o.unit, o.target, o.score, o.summary) for o in reference_plan(spec)]
    assert [
        (o.unit, o.target, o.score, None)
        if isinstance(o, Placement)
        else (o.unit, None, None, o.summary)
        for o in fast
    ] == expected


def test_tenant_workloads_take_the_fast_paths() -> None:
    # Without this the property above could pass with neither path taken: a VM without
    # the dedicated flag goes in blocks, and a dedicated one keeps its verdicts, scores
    # and top across its units.
    hosts = [{"id": f"h{i}", "kind": "host", "capacity": {"cpu": 2}} for i in range(4)]
    spec = load_spec_text(
        yaml.safe_dump(
            {
                "inventory": [{"id": "z0", "kind": "zone", "children": hosts}],
                "tenancy": {"domains": {"D1": {"accounts": ["A1"]}}},
                "offerings": [
                    {"name": "ded", "cpu": 1, "dedicated": True},
                    {"name": "shared", "cpu": 1},
                ],
                "dedications": [{"resource": "h0", "domain": "D1", "account": "A1"}],
                "workloads": [
                    {"name": "web", "account": "A1", "offering": "shared", "units": 3},
                    {"name": "db", "account": "A1", "offering": "ded", "units": 3},
                ],
            }
        ),
        "tenants.yaml",
    )
    planner = Planner(spec)
    state = planner.initial_state()
    web, db = spec.workloads
    keys = [web.unit_key(i) for i in range(web.units)]
    assert len(planner.judge.block(planner.request(web), web, keys, state)) == 3
    following = planner.judge.follow(planner.request(db), state)
    assert following is not None
    found = following.ranked(state)
    assert found is not None
    _, score, top = found
    # Only h0 is A1's: +1 there while it is empty, and the top is h0 alone.
    assert top.tolist() == [0]
    assert score[0] == 1.0


def test_a_unit_a_fallback_allowed_shared_hosts_is_judged_in_full() -> None:
    # The preferred mode allows one unit shared hosts: its dedication verdicts differ
    # from its workload's other units', so none are kept across them.
    hosts = [{"id": f"h{i}", "kind": "host", "capacity": {"cpu": 2}} for i in range(3)]
    spec = load_spec_text(
        yaml.safe_dump(
            {
                "inventory": [{"id": "z0", "kind": "zone", "children": hosts}],
                "tenancy": {"domains": {"D1": {"accounts": ["A1"]}}},
                "offerings": [
                    {"name": "ded", "cpu": 1, "dedicated": True, "implicit": "preferred"}
                ],
                "settings": {"implicit_dedication": False},
                "workloads": [{"name": "db", "account": "A1", "offering": "ded", "units": 2}],
            }
        ),
        "tenants.yaml",
    )
    planner = Planner(spec)
    state = planner.initial_state()
    [db] = spec.workloads
    request = planner.request(db)
    state.family_state(DedicationState).allow("db/0", SHARED)
    following = planner.judge.follow(request, state)
    assert following is not None
    state.judging = "db/0"
    assert following.ranked(state) is None
    expected = planner.pipeline.feasible(request, state)
    assert expected.all()  # every host is shared, and db/0 may use them
    assert following.feasible(state).tolist() == expected.tolist()
