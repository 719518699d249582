"""An unplaced unit's summary counted with numpy (each filter's `phrases` codes, one
reason built per code) reads exactly as the one built from every rejected target's
reason, in random plan states: free capacity, owners and VMs drawn at random."""

from __future__ import annotations

import dataclasses

import numpy as np
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from placed.engine.cloud import Cloud
from placed.engine.explain import (
    counted_rejections,
    filtered_counted,
    filtered_counts,
    first_rejections,
    summarize,
    summarize_counted,
)
from placed.engine.planner import Planner
from placed.engine.state import PlanState
from placed.model import Inventory, Location, Settings, Spec, TagRules, Workload
from placed.model.dedications import DedicationError
from placed.model.tenancy import ROOT_ADMIN
from placed.policy.dedication import VMS, DedicationState
from placed.policy.deployment import Deployment
from placed.policy.tags import Tagged
from placed.spec import load_spec_text

from .strategies import TAGS, property_maps, specs
from .test_dedication_properties import spec_text, worlds


def assert_same_summaries(planner: Planner, state: PlanState) -> None:
    for workload in planner.spec.workloads:
        request = planner.request(workload)
        available, rejections = first_rejections(planner.pipeline, request, state)
        counted, charged = counted_rejections(planner.pipeline, request, state)
        assert counted == available
        assert summarize_counted(state.size, counted, charged) == summarize(
            state.size, available, rejections
        )
        # The order counts too: the filtered counts are written out as they come.
        assert list(filtered_counted(charged).items()) == list(filtered_counts(rejections).items())


def shuffle_state(state: PlanState, data: st.DataObject) -> None:
    """Random free capacity, VMs and owners: the rejections a plan could reach."""
    seed = data.draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    state.free[:] = rng.integers(-1, 4, size=state.free.shape)
    dedication = state.family_state(DedicationState)
    vms = dedication.tally(VMS)
    vms[:] = rng.integers(0, 2, size=vms.size)
    if dedication.owners:
        for position in np.flatnonzero(rng.random(state.size) < 0.3).tolist():
            dedication.set_owner(position, int(rng.integers(-1, len(dedication.owners))))


@settings(max_examples=150, deadline=None)
@given(specs(), st.data())
def test_counted_summary_matches_per_target_summary(spec: Spec, data: st.DataObject) -> None:
    # A second resource, so that targets short of different ones read differently.
    asks = st.sampled_from([{}, {"memory": 1}, {"memory": 2}])
    spec = dataclasses.replace(
        spec,
        workloads=tuple(
            dataclasses.replace(w, resources={**w.resources, **data.draw(asks)})
            if w.mode != "mapping"
            else w
            for w in spec.workloads
        ),
    )
    planner = Planner(spec)
    state = planner.initial_state()
    assert_same_summaries(planner, state)
    planner.plan(state)  # units landed: capacity used, distinct levels taken
    assert_same_summaries(planner, state)
    shuffle_state(state, data)
    assert_same_summaries(planner, state)


RESOURCES = ("cpu", "disk", "memory")
TERMS = ['purpose == "lab"', "cpu >= 2", "gpu == true", 'zone in "east,west"', "cpu < 4"]


@st.composite
def flat_specs(draw: st.DrawFn) -> Spec:
    """Hosts with hard tag rules, properties and three resources, and workloads with
    tags, constraints of several terms and three asks: most targets are rejected late,
    by the tags, the constraints or the capacity, for different reasons."""
    tags = st.frozensets(st.sampled_from(TAGS), max_size=3)
    hosts = tuple(
        Location(
            id=f"h{i}",
            kind="host",
            rules=TagRules(hard_affinity=draw(tags), hard_anti_affinity=draw(tags)),
            capacity={name: draw(st.integers(0, 3)) for name in RESOURCES},
            properties=draw(property_maps),
        )
        for i in range(draw(st.integers(1, 12)))
    )
    loads = tuple(
        Workload(
            name=f"w{i}",
            resources={
                name: draw(st.integers(0, 2))
                for name in draw(st.lists(st.sampled_from(RESOURCES), unique=True))
            },
            requests=(
                Tagged(draw(st.frozensets(st.sampled_from(TAGS), max_size=5))),
                Deployment(
                    constraints=(" AND ".join(draw(st.lists(st.sampled_from(TERMS), max_size=4))),)
                ),
            ),
        )
        for i in range(draw(st.integers(1, 4)))
    )
    return Spec(Inventory.from_roots(hosts), loads, Settings())


@settings(max_examples=150, deadline=None)
@given(flat_specs(), st.data())
def test_counted_summary_matches_on_late_rejections(spec: Spec, data: st.DataObject) -> None:
    planner = Planner(spec)
    state = planner.initial_state()
    assert_same_summaries(planner, state)
    shuffle_state(state, data)
    assert_same_summaries(planner, state)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_counted_summary_matches_with_dedications(data: st.DataObject) -> None:
    world = data.draw(worlds())
    workloads = [
        {
            "name": f"w{i}",
            "account": data.draw(st.sampled_from(list(world["accounts"]))),
            "offering": data.draw(st.sampled_from(["ded", "shared"])),
            "units": data.draw(st.integers(1, 3)),
            "tags": data.draw(st.lists(st.sampled_from(["a", "b", "c"]), max_size=2)),
            "constraints": data.draw(
                st.lists(st.sampled_from(['placed.pod != "p00"', "placed.zone == z1"]), max_size=2)
            ),
        }
        for i in range(data.draw(st.integers(1, 4)))
    ]
    text = spec_text(world, workloads)
    # Random dedications of zones, pods and hosts, to accounts or to domains, applied
    # when legal (the file would fail otherwise).
    document = yaml.safe_load(text)
    cloud = Cloud(load_spec_text(text, "random.yaml"))
    resources = [
        *(zone["id"] for zone in world["inventory"]),
        *(pod["id"] for zone in world["inventory"] for pod in zone["children"]),
        *world["hosts"],
    ]
    for resource in data.draw(st.lists(st.sampled_from(resources), max_size=4)):
        account = data.draw(st.sampled_from(list(world["accounts"])))
        domain = world["accounts"][account]
        owner = account if data.draw(st.booleans()) else None
        try:
            cloud.dedicate(ROOT_ADMIN, resource, domain, owner)
        except DedicationError:
            continue
        entry = {"resource": resource, "domain": domain}
        document.setdefault("dedications", []).append(
            {**entry, "account": owner} if owner else entry
        )
    text = yaml.safe_dump(document)
    spec = load_spec_text(text, "random.yaml")
    planner = Planner(spec)
    state = planner.initial_state()
    assert_same_summaries(planner, state)
    planner.plan(state)
    assert_same_summaries(planner, state)
    shuffle_state(state, data)
    assert_same_summaries(planner, state)
