"""Random problems the scenarios share: allocation inventories and one-unit workloads with
Zipf-distributed tags, the mapping spec, and Open Horizon edge nodes with typed properties,
agents and the constraint they are judged by."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from placed.model import (
    Agent,
    Inventory,
    Location,
    Property,
    Service,
    Settings,
    Spec,
    TagRules,
    Workload,
    validate_properties,
)
from placed.model.inventory import Scope

VOCABULARY_SIZE = 400
# Workload tags follow a Zipf law: a few tags (a common network, a datacenter) are on most
# workloads and hundreds are rare. Hard affinity is drawn from the common head so that a
# good share of targets admit a typical unit and the benchmark times successful placements.
WORKLOAD_ZIPF = 1.0
TARGET_ZIPF = 0.8
COMMON_HEAD = 8
# Forbidden tags come from the tail: a target that forbade a head tag would refuse most
# units, which is a failure path rather than a realistic inventory.
RARE_FROM = 40
TARGETS_PER_RACK = 40
CPU_CAPACITY = (16, 64)  # inclusive range per target; each allocation unit asks for 1 cpu
CATEGORIES = ("rack", "network", "zone", "tenant", "hw", "fw", "team", "project")

# Edge nodes for the constraint-expression family (seed 002, Open Horizon). Each property
# but zone and the built-ins is absent on some nodes, and a few nodes report gpu as the
# text "true" or "false" rather than a boolean, as JSON from a shell script often does.
PURPOSES = ("lab", "prod", "edge", "test")
PURPOSE_WEIGHTS = (0.5, 0.25, 0.15, 0.1)
ARCHES = ("amd64", "arm64", "arm", "ppc64le")
ARCH_WEIGHTS = (0.55, 0.3, 0.1, 0.05)
NODE_CPUS = (1, 2, 4, 8, 16, 32)
NODE_CPU_WEIGHTS = (0.1, 0.15, 0.25, 0.25, 0.15, 0.1)
NODE_MEMORY_MB = (512, 1024, 2048, 4096, 8192, 16384)
ZONES = 8
FEATURES = ("tpu", "fpga", "camera", "lidar", "gps", "modem")
PRESENT = {"purpose": 0.95, "gpu": 0.85, "agentVersion": 0.9, "features": 0.9}
GPU_TRUE = 0.7
GPU_AS_TEXT = 0.03
CONSTRAINT = (
    'purpose == "lab" AND openhorizon.cpu >= 4 AND openhorizon.arch in "amd64,arm64" '
    'AND gpu == true AND agentVersion in [1.2.0,INFINITY) AND features in "tpu,fpga"'
)
# Agents on the deploy-check nodes: most are devices; the rest run on edge clusters, some
# cluster-wide and some inside one namespace. The policy deploys to edge-apps, so the
# namespace-scoped agents in the other namespaces refuse it.
SCOPES: tuple[Scope, ...] = ("device", "cluster", "namespace")
SCOPE_WEIGHTS = (0.6, 0.2, 0.2)
NAMESPACES = ("edge-apps", "team-a", "team-b")
DEPLOY_NAMESPACE = "edge-apps"
NODES_PER_SITE = 100


FloatArray = NDArray[np.float64]
IntArray = NDArray[np.intp]


@dataclass(frozen=True, slots=True)
class EdgeNode:
    """One generated node: its own properties in Open Horizon's list form, and what its agent
    reports (which become the openhorizon.* built-ins)."""

    properties: list[dict[str, object]]
    cpu: int
    memory: int
    arch: str


def tag_names(rng: np.random.Generator, size: int) -> list[str]:
    """Tag names ordered by popularity rank; shuffled so every category has common tags."""
    names = [f"{CATEGORIES[i % len(CATEGORIES)]}{i // len(CATEGORIES)}" for i in range(size)]
    order = rng.permutation(size)
    return [names[i] for i in order]


def zipf_weights(size: int, exponent: float) -> FloatArray:
    weights: FloatArray = 1.0 / np.arange(1, size + 1, dtype=np.float64) ** exponent
    shares: FloatArray = weights / weights.sum()
    return shares


def draw_without_replacement(
    rng: np.random.Generator, weights: FloatArray, counts: IntArray
) -> list[IntArray]:
    """For each count, that many distinct ranks drawn in proportion to `weights`.

    The Gumbel top-k trick: sorting log-weights plus Gumbel noise gives the same law as
    drawing one item at a time without replacement, but for all rows in one numpy call.
    """
    keys = np.log(weights)[None, :] + rng.gumbel(size=(counts.size, weights.size))
    order = np.argsort(-keys, axis=1)
    return [order[row, :count] for row, count in enumerate(counts.tolist())]


def make_inventory(rng: np.random.Generator, names: list[str], count: int) -> Inventory:
    size = len(names)
    tag_counts = rng.integers(10, 31, size=count)
    tags = draw_without_replacement(rng, zipf_weights(size, TARGET_ZIPF), tag_counts)
    # Soft affinity and soft anti-affinity come from one draw split in two, so no tag is in
    # both lists (lint would warn about such a target, and the spec would be odd).
    soft_counts = rng.integers(8, 13, size=(count, 2))
    soft = draw_without_replacement(
        rng, zipf_weights(size, TARGET_ZIPF), soft_counts.sum(axis=1).astype(np.intp)
    )
    required_counts = rng.integers(0, 3, size=count)
    forbidden_counts = rng.integers(1, 5, size=count)
    tail = np.arange(RARE_FROM, size)

    racks: list[Location] = []
    leaves: list[Location] = []
    for position in range(count):
        plus = int(soft_counts[position, 0])
        rules = TagRules(
            hard_affinity=_named(
                names, rng.choice(COMMON_HEAD, size=required_counts[position], replace=False)
            ),
            hard_anti_affinity=_named(
                names, rng.choice(tail, size=forbidden_counts[position], replace=False)
            ),
            soft_affinity=_named(names, soft[position][:plus]),
            soft_anti_affinity=_named(names, soft[position][plus:]),
        )
        leaves.append(
            Location(
                id=f"t{position:05d}",
                kind="server",
                tags=_named(names, tags[position]),
                rules=rules,
                capacity={"cpu": float(rng.integers(CPU_CAPACITY[0], CPU_CAPACITY[1] + 1))},
            )
        )
        if len(leaves) == TARGETS_PER_RACK or position == count - 1:
            racks.append(Location(id=f"rack{len(racks):04d}", kind="rack", children=tuple(leaves)))
            leaves = []
    return Inventory.from_roots(tuple(racks))


def make_workloads(
    rng: np.random.Generator, names: list[str], count: int
) -> tuple[tuple[Workload, ...], int]:
    """`count` one-unit workloads; returns them and how many distinct tag sets they hold."""
    weights = zipf_weights(len(names), WORKLOAD_ZIPF)
    counts = rng.integers(10, 21, size=count)
    drawn = [_named(names, ranks) for ranks in draw_without_replacement(rng, weights, counts)]
    # Redraw the rare duplicate so that every unit really is a different request.
    seen: set[frozenset[str]] = set()
    for row, tags in enumerate(drawn):
        while tags in seen:
            (ranks,) = draw_without_replacement(rng, weights, counts[row : row + 1])
            tags = _named(names, ranks)
        seen.add(tags)
        drawn[row] = tags
    workloads = tuple(
        workload(name=f"w{row:05d}", units=1, mode="allocation", tags=tags, resources={"cpu": 1.0})
        for row, tags in enumerate(drawn)
    )
    return workloads, len(seen)


def _named(names: list[str], ranks: Sequence[int] | IntArray) -> frozenset[str]:
    return frozenset(names[int(rank)] for rank in ranks)


def make_mapping_spec(
    units: int,
    targets: int,
    name: str = "nodes",
    max_load: float | None = None,
    down: str | None = None,
) -> Spec:
    # Every conductor carries the tag the workload asks for, so all score the same and the
    # rendezvous hash alone spreads the units: that is the balance being measured.
    leaves = tuple(
        Location(
            id=f"c{position:03d}",
            kind="conductor",
            tags=frozenset({"conductor", f"rack{position % 10}", f"network{position % 4}"}),
            status="down" if f"c{position:03d}" == down else "up",
        )
        for position in range(targets)
    )
    inventory = Inventory.from_roots((Location(id="region", kind="region", children=leaves),))
    mapped = workload(
        name=name, units=units, mode="mapping", tags=frozenset({"conductor"}), max_load=max_load
    )
    return Spec(inventory, (mapped,), Settings(default_mode="mapping"), name="mapping")


def make_edge_nodes(rng: np.random.Generator, count: int) -> list[EdgeNode]:
    """`count` edge nodes; every draw is one numpy call over all nodes."""
    present = {name: rng.random(count) < share for name, share in PRESENT.items()}
    purpose = rng.choice(len(PURPOSES), size=count, p=PURPOSE_WEIGHTS)
    cpu = rng.choice(NODE_CPUS, size=count, p=NODE_CPU_WEIGHTS)
    memory = rng.choice(NODE_MEMORY_MB, size=count)
    arch = rng.choice(len(ARCHES), size=count, p=ARCH_WEIGHTS)
    gpu = rng.random(count) < GPU_TRUE
    gpu_as_text = rng.random(count) < GPU_AS_TEXT
    zone = rng.integers(0, ZONES, size=count)
    version = np.stack(
        [rng.integers(1, 3, count), rng.integers(0, 5, count), rng.integers(0, 10, count)], axis=1
    )
    uniform = np.full(len(FEATURES), 1.0 / len(FEATURES))
    features = draw_without_replacement(rng, uniform, rng.integers(1, 5, size=count))
    nodes = []
    for i in range(count):
        entries: list[dict[str, object]] = [
            {"name": "zone", "value": f"zone{zone[i]}", "type": "string"}
        ]
        if present["purpose"][i]:
            entries.append({"name": "purpose", "value": PURPOSES[purpose[i]]})  # no type
        if present["gpu"][i]:
            value = bool(gpu[i])
            entries.append(
                {"name": "gpu", "value": str(value).lower()}  # text, not a boolean
                if gpu_as_text[i]
                else {"name": "gpu", "value": value, "type": "boolean"}
            )
        if present["agentVersion"][i]:
            major, minor, patch = version[i].tolist()
            entries.append(
                {"name": "agentVersion", "value": f"{major}.{minor}.{patch}", "type": "version"}
            )
        if present["features"][i]:
            listed = ",".join(FEATURES[k] for k in features[i])
            entries.append({"name": "features", "value": listed, "type": "list of strings"})
        nodes.append(EdgeNode(entries, int(cpu[i]), int(memory[i]), ARCHES[arch[i]]))
    return nodes


def constraint_properties(node: EdgeNode) -> dict[str, Property]:
    """A node's properties with what its agent reports written out as typed properties, as
    constraints see them on a real node."""
    return validate_properties(
        [
            *node.properties,
            {"name": "openhorizon.cpu", "value": node.cpu, "type": "int"},
            {"name": "openhorizon.memory", "value": node.memory, "type": "int"},
            {"name": "openhorizon.arch", "value": node.arch, "type": "string"},
        ]
    )


def make_deploy_spec(rng: np.random.Generator, count: int) -> tuple[Spec, Workload]:
    """`count` edge nodes in sites of NODES_PER_SITE and one deployment policy (`every`).

    The openhorizon.* properties are not written on the nodes: placed derives them from each
    node's capacity and agent, as the check would for a spec loaded from a file."""
    nodes = make_edge_nodes(rng, count)
    scopes = rng.choice(len(SCOPES), size=count, p=SCOPE_WEIGHTS)
    namespaces = rng.integers(0, len(NAMESPACES), size=count)
    sites: list[Location] = []
    leaves: list[Location] = []
    for i, node in enumerate(nodes):
        scope = SCOPES[scopes[i]]
        agent = Agent(
            scope=scope,
            namespace=NAMESPACES[namespaces[i]] if scope == "namespace" else None,
            arch=node.arch,
        )
        leaves.append(
            Location(
                id=f"node{i:06d}",
                kind="node",
                properties=validate_properties(node.properties),
                agent=agent,
                capacity={"cpu": float(node.cpu), "memory": float(node.memory)},
            )
        )
        if len(leaves) == NODES_PER_SITE or i == count - 1:
            sites.append(Location(id=f"site{len(sites):04d}", kind="site", children=tuple(leaves)))
            leaves = []
    deployed = workload(
        name="lab-inference",
        mode="every",
        constraints=(CONSTRAINT,),
        services=(Service(url="lab-inference", org="myorg", version="1.0.0"),),
        cluster_namespace=DEPLOY_NAMESPACE,
    )
    inventory = Inventory.from_roots(tuple(sites))
    return Spec(inventory, (deployed,), Settings(default_mode="every"), name="deploy"), deployed


_DEPLOYMENT_FIELDS = ("properties", "constraints", "services", "pattern", "cluster_namespace")


def workload(**fields: Any) -> Workload:
    """A Workload from the fields every version of placed has had. Since the engine
    reshape a workload carries each family's part as a request object; compare.py also
    runs this harness against trees from before it, where they were plain fields."""
    if "requests" not in Workload.__dataclass_fields__:
        return Workload(**fields)
    from placed.policy.deployment import Deployment
    from placed.policy.tags import Tagged

    requests: list[object] = []
    tags = fields.pop("tags", None)
    if tags:
        requests.append(Tagged(frozenset(tags)))
    deployment = {name: fields.pop(name) for name in _DEPLOYMENT_FIELDS if name in fields}
    if deployment:
        requests.append(Deployment(**deployment))
    return Workload(**fields, requests=tuple(requests))
