"""An unplaced unit's summary counted with numpy (each filter's `phrases` codes, one
reason built per code) reads exactly as the one built from every rejected target's
reason, in random plan states: free capacity, owners and VMs drawn at random, units of
spread, near and avoid workloads part way placed, Juju directives judged unit by unit.
Each filter's codes are also held to its own reasons on every target it rejects, and a
summary is shown to build one reason per phrase, not one per target."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
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
from placed.engine.planner import Placement, Planner
from placed.engine.state import PlanState
from placed.model import Inventory, Location, Settings, Spec, TagRules, Workload
from placed.model.dedications import DedicationError
from placed.model.tenancy import ROOT_ADMIN
from placed.policy.base import Filter
from placed.policy.dedication import VMS, DedicationState
from placed.policy.deployment import Deployment
from placed.policy.directives import directed_of
from placed.policy.registry import FAMILIES
from placed.policy.tags import Tagged
from placed.spec import load_spec_text
from placed.spec.load import load_spec_data

from .strategies import TAGS, property_maps, specs
from .test_dedication_properties import spec_text, worlds
from .test_spread_affinity import specs as affinity_specs


def assert_phrases_read_alike(planner: Planner, state: PlanState, workload: Workload) -> None:
    """Every filter's codes over all the targets of the index it rejects (not only those
    charged to it): targets with one code have reasons in the same words."""
    request = planner.request(workload)
    pipeline = planner.pipeline
    indexed = len(pipeline.index)
    for number, mask in enumerate(pipeline.masks(request, state)):
        positions = np.flatnonzero(~mask[:indexed])
        if not positions.size:
            continue
        f = pipeline.filters[number]
        codes = f.phrases(workload, positions, state)
        assert codes is not None, f"{f.name} has no phrases"
        assert codes.shape == positions.shape
        words: dict[int, tuple[str, str, str]] = {}
        for at, code in zip(positions.tolist(), codes.tolist(), strict=True):
            reason = pipeline.reason(request, number, at, state)
            said = (reason.filter, reason.singular, reason.plural)
            assert words.setdefault(code, said) == said, (f.name, state.target_id(at))


def judged(planner: Planner, state: PlanState) -> Iterator[Workload]:
    """Each workload as a summary judges it: a directed one once per unit of its
    (its `to:` entry is the unit's), the others as they come."""
    for workload in planner.spec.workloads:
        directed = directed_of(workload)
        if directed is None:
            yield workload
            continue
        for unit in [None, *sorted(directed.units)[:4], f"{workload.name}/99"]:
            state.judging = unit
            yield workload
        state.judging = None


def assert_same_summaries(planner: Planner, state: PlanState) -> None:
    for workload in judged(planner, state):
        assert_phrases_read_alike(planner, state, workload)
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


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(affinity_specs(), st.data())
def test_counted_summary_matches_with_spread_near_and_avoid(
    spec: Spec, data: st.DataObject
) -> None:
    # Part way through the plan, as an unplaced unit meets it: some units placed, the
    # skews, the locations held and the first units there as they stand then.
    planner = Planner(spec)
    state = planner.initial_state()
    assert_same_summaries(planner, state)
    placed = [o for o in planner.plan().outcomes if isinstance(o, Placement)]
    for o in placed[: data.draw(st.integers(0, len(placed)))]:
        position = state.position(o.target)
        assert position is not None
        state.place(o.unit, o.workload, position)
    assert_same_summaries(planner, state)
    shuffle_state(state, data)
    assert_same_summaries(planner, state)


@st.composite
def distinct_specs(draw: st.DrawFn) -> Spec:
    """Zones holding racks of hosts and racks that are targets themselves, so that one
    level's taken locations read both ways (the target itself, or one that holds it)."""
    targets: list[str] = []

    def leaf(kind: str) -> dict[str, Any]:
        ident = f"{kind[0]}{len(targets)}"
        targets.append(ident)
        return {"id": ident, "kind": kind, "capacity": {"cpu": draw(st.integers(0, 2))}}

    zones = []
    for z in range(draw(st.integers(1, 2))):
        children: list[dict[str, Any]] = []
        for r in range(draw(st.integers(1, 3))):
            if draw(st.booleans()):
                children.append(leaf("rack"))
            else:
                hosts = [leaf("host") for _ in range(draw(st.integers(1, 2)))]
                children.append({"id": f"r{z}{r}", "kind": "rack", "children": hosts})
        zones.append({"id": f"z{z}", "kind": "zone", "children": children})
    loose = [leaf(draw(st.sampled_from(["host", "rack"]))) for _ in range(draw(st.integers(0, 2)))]
    levels = ["rack", "zone", "target", *(["host"] if any(t[0] == "h" for t in targets) else [])]
    workloads = [
        {
            "name": f"w{i}",
            "units": draw(st.integers(1, 6)),
            "resources": {"cpu": 1},
            "distinct": draw(st.sampled_from(levels)),
        }
        for i in range(draw(st.integers(1, 2)))
    ]
    running = [
        {"unit": f"w{draw(st.integers(0, len(workloads) - 1))}/{100 + n}", "target": target}
        for n, target in enumerate(draw(st.lists(st.sampled_from(targets), max_size=4)))
    ]
    document: dict[str, Any] = {"inventory": [*zones, *loose], "workloads": workloads}
    if running:
        document["running"] = running
    return load_spec_data(document)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(distinct_specs(), st.data())
def test_counted_summary_matches_with_distinct(spec: Spec, data: st.DataObject) -> None:
    planner = Planner(spec)
    state = planner.initial_state()
    assert_same_summaries(planner, state)
    planner.plan(state)
    assert_same_summaries(planner, state)
    shuffle_state(state, data)
    assert_same_summaries(planner, state)


ENTRIES = ["0", "1", "2", "new", "lxd:0", "lxd:new", "db/0", "db", "zone=z1"]
JUJU = ["cores=2", "cores=4 mem=2G", "tags=ssd", "tags=^ssd", "zones=z0"]


@st.composite
def directed_specs(draw: st.DrawFn) -> Spec:
    """A native spec with `to:` entries and Juju constraints, new machines or not."""
    hosts = []
    for i in range(draw(st.integers(3, 8))):  # machines 0, 1 and 2 are named below
        host: dict[str, Any] = {
            "id": str(i),
            "kind": "machine",
            "capacity": {"cpu": draw(st.integers(0, 3))},
            "properties": {"cores": draw(st.integers(1, 4)), "mem": 1024 * draw(st.integers(1, 4))},
        }
        if draw(st.booleans()):
            host["tags"] = ["ssd"]
        hosts.append(host)
    zones = [
        {"id": "z0", "kind": "zone", "children": hosts[::2]},
        {"id": "z1", "kind": "zone", "children": hosts[1::2]},
    ]
    workloads = []
    for name in ("db", "web"):
        workload: dict[str, Any] = {
            "name": name,
            "units": draw(st.integers(1, 4)),
            "resources": {"cpu": 1},
            "new_machines": draw(st.booleans()),
        }
        if draw(st.booleans()):
            entries = [e for e in ENTRIES if not e.startswith(name)]  # db beside db: a cycle
            workload["to"] = draw(st.lists(st.sampled_from(entries), min_size=1, max_size=4))
        if draw(st.booleans()):
            workload["juju_constraints"] = draw(st.sampled_from(JUJU))
        workloads.append(workload)
    return load_spec_data(
        {"inventory": [z for z in zones if z["children"]], "workloads": workloads}
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(directed_specs(), st.data())
def test_counted_summary_matches_with_directives(spec: Spec, data: st.DataObject) -> None:
    planner = Planner(spec)
    state = planner.initial_state()
    assert_same_summaries(planner, state)
    planner.plan(state)  # machines and containers created, units beside others placed
    assert_same_summaries(planner, state)
    shuffle_state(state, data)
    assert_same_summaries(planner, state)


def zoned(*zones: list[dict[str, Any]], loose: int = 0, full: tuple[str, ...] = ()) -> list[Any]:
    """Zones of hosts h0, h1, ... (cpu 8; 0 for those in `full`), then `loose` hosts
    outside every zone."""
    count = 0

    def hosts(n: int) -> list[dict[str, Any]]:
        nonlocal count
        made = [
            {
                "id": f"h{count + i}",
                "kind": "host",
                "capacity": {"cpu": 0 if f"h{count + i}" in full else 8},
            }
            for i in range(n)
        ]
        count += n
        return made

    found: list[Any] = [
        {"id": f"z{z}", "kind": "zone", "children": hosts(len(members))}
        for z, members in enumerate(zones)
    ]
    return [*found, *hosts(loose)]


# Per filter: a spec whose one unit is unplaced, its summary, and how many of the
# summary's phrases are that filter's.
CASES: dict[str, tuple[dict[str, Any], str, int]] = {
    "namespace": (
        {
            "inventory": [
                *({"id": f"c{i}", "scope": "cluster"} for i in range(3)),
                *({"id": f"n{i}", "scope": "namespace", "namespace": "ns1"} for i in range(2)),
                {"id": "n2", "scope": "namespace", "namespace": "ns2"},
            ],
            "workloads": [
                {
                    "name": "p",
                    "pattern": True,
                    "cluster_namespace": "ns3",
                    "services": [{"url": "s"}],
                }
            ],
        },
        "0/6 targets available: 3 are cluster-scoped and take only patterns without a "
        "cluster namespace, 2 are scoped to namespace ns1, 1 is scoped to namespace ns2",
        3,
    ),
    "service": (
        {
            "inventory": [
                *({"id": f"c{i}", "scope": "cluster"} for i in range(3)),
                *({"id": f"a{i}", "scope": "device", "arch": "arm64"} for i in range(2)),
                {"id": "x0", "scope": "device", "arch": "amd64"},  # privileged not allowed
            ],
            "workloads": [
                {
                    "name": "p",
                    "service": {
                        "url": "s",
                        "arch": "amd64",
                        "privileged": True,
                        "runs_on": ["device"],
                    },
                }
            ],
        },
        "0/6 targets available: 3 are edge clusters and the service has no "
        "clusterDeployment, 2 have another architecture than s (amd64), 1 does not allow "
        "privileged mode, which s needs",
        3,
    ),
    "directive": (
        {
            "inventory": [
                {"id": f"m{i}", "kind": "machine", "properties": {"cores": 2}} for i in range(4)
            ],
            "workloads": [{"name": "web", "juju_constraints": "cores=4"}],
        },
        "0/4 targets available: 4 fail Juju constraints cores=4",
        1,
    ),
    "distinct": (
        {
            "inventory": [
                {"id": "r0", "kind": "rack", "children": [{"id": "h0"}, {"id": "h1"}]},
                {"id": "r1", "kind": "rack"},
            ],
            "workloads": [{"name": "web", "units": 3, "distinct": "rack"}],
            "running": [{"unit": "web/0", "target": "h0"}, {"unit": "web/1", "target": "r1"}],
        },
        "0/3 targets available: 2 are in a rack that already holds a unit of web, 1 already "
        "holds a unit of web",
        2,
    ),
    "spread": (
        {
            "inventory": zoned([{}, {}], [{}], loose=1, full=("h2",)),
            "workloads": [
                {
                    "name": "web",
                    "units": 3,
                    "resources": {"cpu": 1},
                    "spread": {"over": "zone", "max_skew": 1},
                }
            ],
            "running": [{"unit": "web/0", "target": "h0"}, {"unit": "web/1", "target": "h1"}],
        },
        "0/4 targets available: 2 would exceed web's max skew 1 over zone, 1 is in no zone, "
        "which spread over zone needs, 1 has insufficient cpu",
        2,
    ),
    "near": (
        {
            "inventory": zoned([{}, {}], [{}], loose=1, full=("h1",)),
            "workloads": [
                {"name": "db", "units": 1},
                {"name": "cache", "units": 1},
                {
                    "name": "app",
                    "resources": {"cpu": 1},
                    "near": [
                        {"workload": "db", "level": "zone"},
                        {"workload": "cache", "level": "target"},
                    ],
                },
            ],
            "running": [{"unit": "db/0", "target": "h0"}, {"unit": "cache/0", "target": "h1"}],
        },
        "0/4 targets available: 2 have no unit of db in their zone, 1 has insufficient cpu, "
        "1 holds no unit of cache",
        2,
    ),
    "avoid": (
        {
            "inventory": zoned([{}, {}], [{}, {}], full=("h1",)),
            "workloads": [
                {"name": "db", "units": 1},
                {"name": "cache", "units": 1},
                {
                    "name": "app",
                    "resources": {"cpu": 1},
                    "avoid": [
                        {"workload": "db", "level": "zone"},
                        {"workload": "cache", "level": "target"},
                    ],
                },
            ],
            "running": [{"unit": "db/0", "target": "h2"}, {"unit": "cache/0", "target": "h0"}],
        },
        "0/4 targets available: 2 are in a zone that holds a unit of db, 1 has insufficient "
        "cpu, 1 holds a unit of cache",
        2,
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_summary_builds_one_reason_per_phrase(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    document, summary, phrases = CASES[name]
    spec = load_spec_data(document)
    planner = Planner(spec)
    (f,) = [f for f in planner.pipeline.filters if f.name == name]
    built: Counter[str] = Counter()
    reason = type(f).reason

    def counted(self: Filter, *args: Any) -> Any:
        built[self.name] += 1
        return reason(self, *args)

    monkeypatch.setattr(type(f), "reason", counted)
    (unplaced,) = planner.plan().unplaced
    assert unplaced.summary == summary
    # One reason per phrase of this filter, however many targets it charges.
    assert built[name] == phrases < unplaced.filtered[name]


def test_every_filter_of_the_registry_groups_its_reasons() -> None:
    # A filter without `phrases` would build one reason per target it rejects.
    missing = [
        f.name for family in FAMILIES for f in family.filter_types if f.phrases is Filter.phrases
    ]
    assert missing == []
