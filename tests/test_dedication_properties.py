"""Seed 004's invariants under random domain trees, topologies and sequences of
dedicate, release, update and VM requests (hypothesis), on the Python API:

- no VM without the dedicated flag lands on a dedicated host, but in a zone dedicated to
  it (a private zone) on a host nothing nearer dedicates;
- no VM lands on a host dedicated outside its account's domain chain, nor in a zone
  dedicated to an owner that does not cover it;
- every accepted dedication satisfied the rules when it was made (no account dedication
  above another, each one inside its nearest dedicated ancestor's domain);
- a refused operation changed nothing;
- and a plan of the same world gives the same placements on the fast path and the
  reference.
"""

from __future__ import annotations

from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from placed.engine.cloud import Cloud
from placed.engine.planner import Planner
from placed.engine.reference import reference_plan
from placed.model.dedications import DedicationError
from placed.model.tenancy import ROOT_ADMIN
from placed.policy.dedication import DedicationState
from placed.spec import load_spec_text

DOMAINS = ["D1", "D2", "D3", "D4", "D5"]


@st.composite
def worlds(draw: st.DrawFn) -> dict[str, Any]:
    # A 3-level domain tree at most: each domain's parent is ROOT or an earlier domain.
    parents: dict[str, str] = {}
    for i, name in enumerate(DOMAINS[: draw(st.integers(1, len(DOMAINS)))]):
        parents[name] = draw(st.sampled_from(["ROOT", *list(parents)[: max(0, i)]]))
    accounts = {
        f"A{i}": draw(st.sampled_from(list(parents))) for i in range(draw(st.integers(1, 5)))
    }
    zones = draw(st.integers(1, 2))
    hosts: list[str] = []
    inventory = []
    for z in range(zones):
        pods = []
        for p in range(draw(st.integers(1, 2))):
            clusters = []
            for c in range(draw(st.integers(1, 2))):
                names = [f"h{z}{p}{c}{h}" for h in range(draw(st.integers(1, 2)))]
                hosts += names
                clusters.append(
                    {
                        "id": f"c{z}{p}{c}",
                        "kind": "cluster",
                        "children": [
                            {"id": n, "kind": "host", "capacity": {"cpu": 2}} for n in names
                        ],
                    }
                )
            pods.append({"id": f"p{z}{p}", "kind": "pod", "children": clusters})
        inventory.append({"id": f"z{z}", "kind": "zone", "children": pods})
    return {
        "parents": parents,
        "accounts": accounts,
        "inventory": inventory,
        "hosts": hosts,
        "implicit": draw(st.booleans()),
    }


def spec_text(world: dict[str, Any], workloads: list[dict[str, Any]] | None = None) -> str:
    tree: dict[str, Any] = {}
    nodes: dict[str, dict[str, Any]] = {}
    for name, parent in world["parents"].items():
        node: dict[str, Any] = {
            "accounts": [a for a, d in world["accounts"].items() if d == name],
            "children": {},
        }
        nodes[name] = node
        (tree if parent == "ROOT" else nodes[parent]["children"])[name] = node
    return yaml.safe_dump(
        {
            "inventory": world["inventory"],
            "tenancy": {"domains": tree},
            "offerings": [
                {"name": "ded", "cpu": 1, "dedicated": True},
                {"name": "shared", "cpu": 1},
            ],
            "settings": {"implicit_dedication": world["implicit"]},
            "workloads": workloads or [],
        }
    )


def operations(world: dict[str, Any]) -> st.SearchStrategy[list[tuple[Any, ...]]]:
    resources = [
        n["id"]
        for zone in world["inventory"]
        for n in [zone, *zone["children"], *(c for p in zone["children"] for c in p["children"])]
    ] + world["hosts"]
    owner = st.tuples(
        st.sampled_from(list(world["parents"])),
        st.none() | st.sampled_from(list(world["accounts"])),
    )
    one = st.one_of(
        st.tuples(st.just("dedicate"), st.sampled_from(resources), owner),
        st.tuples(st.just("release"), st.sampled_from(resources)),
        st.tuples(st.just("update"), st.sampled_from(resources), owner),
        st.tuples(st.just("deploy"), st.sampled_from(list(world["accounts"])), st.booleans()),
    )
    return st.lists(one, max_size=25)


def snapshot(cloud: Cloud) -> tuple[Any, ...]:
    return (
        dict(cloud.rules.items),
        {n: r.vm for n, r in cloud.vms.items()},
        cloud.state.family_state(DedicationState).owner.tolist(),
        cloud.state.free.tolist(),
    )


def covered_by_ancestors_rule(cloud: Cloud) -> None:
    rules = cloud.rules
    for resource, dedication in rules.items.items():
        for ancestor in rules.topology.ancestors(resource):
            above = rules.items.get(ancestor)
            if above is None:
                continue
            assert above.owner.account is None, (resource, ancestor)
            assert cloud.tenancy.within(dedication.owner.domain, above.owner.domain)
            break


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_dedication_invariants_hold_under_random_operations(data: st.DataObject) -> None:
    world = data.draw(worlds())
    cloud = Cloud(load_spec_text(spec_text(world), "random.yaml"))
    for operation in data.draw(operations(world)):
        before = snapshot(cloud)
        kind = operation[0]
        try:
            if kind == "dedicate":
                _, resource, (domain, account) = operation
                if account is not None:
                    domain = world["accounts"][account]
                cloud.dedicate(ROOT_ADMIN, resource, domain, account)
            elif kind == "release":
                cloud.release(ROOT_ADMIN, operation[1])
            elif kind == "update":
                _, resource, (domain, account) = operation
                cloud.update(ROOT_ADMIN, resource, domain, account)
            else:
                _, account, dedicated = operation
                vm = cloud.deploy(ROOT_ADMIN, account, "ded" if dedicated else "shared")
                found, _ = cloud.rules.owner(vm.host)
                topology = cloud.rules.topology
                zone = next(a for a in topology.ancestors(vm.host) if topology.kinds[a] == "zone")
                zone_dedication = cloud.rules.items.get(zone)
                if zone_dedication is not None:
                    assert cloud.rules.covers(zone_dedication.owner, account), (vm, zone)
                if dedicated:
                    assert found is not None
                    assert cloud.rules.covers(found.owner, account), (vm, found)
                elif found is not None:
                    assert found.resource == zone, (vm, found)  # a private zone's host
                    assert cloud.rules.covers(found.owner, account), (vm, found)
        except DedicationError:
            assert snapshot(cloud) == before, operation
        covered_by_ancestors_rule(cloud)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_fast_path_and_reference_agree_with_dedications(data: st.DataObject) -> None:
    world = data.draw(worlds())
    workloads = [
        {
            "name": f"w{i}",
            "account": data.draw(st.sampled_from(list(world["accounts"]))),
            "offering": data.draw(st.sampled_from(["ded", "shared"])),
            "units": data.draw(st.integers(1, 3)),
        }
        for i in range(data.draw(st.integers(1, 4)))
    ]
    text = spec_text(world, workloads)
    # A few random dedications of zones, pods and hosts, to accounts or to domains,
    # applied when legal (the file would fail otherwise).
    document = yaml.safe_load(text)
    cloud = Cloud(load_spec_text(text, "random.yaml"))
    resources = [
        *(zone["id"] for zone in world["inventory"]),
        *(pod["id"] for zone in world["inventory"] for pod in zone["children"]),
        *world["hosts"],
    ]
    for resource in data.draw(st.lists(st.sampled_from(resources), max_size=3)):
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
    spec = load_spec_text(yaml.safe_dump(document), "random.yaml")
    fast = {p.unit: p.target for p in Planner(spec).plan().placements}
    reference = {o.unit: o.target for o in reference_plan(spec) if o.target is not None}
    assert fast == reference
