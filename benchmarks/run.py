"""Benchmarks for the placement engine: `make bench`, or `.venv/bin/python benchmarks/run.py`.

What is measured, and why it is measured that way:

* allocation: 10,000 single-unit workloads, each with its own tag set, against 1,000 and
  10,000 targets. Every unit is a different workload, so nothing the planner compiles for
  one unit is reused by the next: this is the engine's worst case, not its cached case.
* reference: the pure-Python oracle on a prefix of the same workloads, and a check that
  the fast engine picks the same target for every unit of that prefix.
* scan floor: one numpy comparison over one float64 column of all targets. A placement
  must touch every target at least once, so this is the least one can cost; dividing by
  it gives a machine-independent figure.
* mapping: 100,000 units of one workload onto 100 targets, plain and with max_load 1.1:
  the load they spread to, what moves when a target goes down, and when it comes back;
  then the same units onto 10,000 targets (plain, max_load 1.1 and 1), once each.
* constraint evaluation (seed 002): one six-term Open Horizon constraint over the typed
  properties of 10,000 and 100,000 targets, on property columns (the fast path) and one
  property set at a time (the reference), which must give the same booleans.
* deploy check (seed 002): one deployment policy against 10,000 edge nodes (devices,
  cluster-scoped and namespace-scoped agents) with every reason per target, and `plan()`
  in `every` mode for the same spec; check, plan and the reference oracle must agree on
  which nodes are compatible.

Timings are wall-clock, each run from a fresh Planner so its per-workload cache starts
empty. The first run in the process is reported apart ("cold") from the best of
`--repeat` runs ("warm"): at 10,000 targets the first run can pay hundreds of thousands
of page faults while the allocator adapts to the engine's large per-unit temporaries, and a
long-running service would not. Exit status is 1 when a correctness check fails (fast
and reference disagree on a placement or a constraint's verdict, losing a target moves
units it did not own, a returning target takes units it should not, the max_load run
goes over 1.10, a deploy check leaves an incompatible target without a reason, or
check, plan and reference disagree on the compatible nodes); speed targets are reported,
never enforced, since they depend on the machine.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import platform
import pstats
import resource
import sys
import time
import timeit
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from placed.engine.check import deploy_check
from placed.engine.planner import Placement, Planner
from placed.engine.rebalance import simulate
from placed.engine.reference import reference_plan
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
from placed.policy.expressions import All, parse_constraint
from placed.policy.expressions import parse as parse_expression
from placed.policy.expressions.columns import PropertyColumns
from placed.policy.expressions.evaluate import satisfied

SEED = 20240601
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

# Acceptance targets from the issue.
MIN_SPEEDUP = 100.0
MAX_FLOORS = 100.0
MAX_IMBALANCE = 1.10
# The bounded mapping run asks for the acceptance bound itself.
MAPPING_MAX_LOAD = MAX_IMBALANCE

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.intp]


@dataclass(frozen=True, slots=True)
class Config:
    sizes: tuple[int, ...]
    units: int
    reference_units: int
    mapping_units: int
    mapping_targets: int
    mapping_names: int
    scale_targets: int  # a second mapping run, onto this many targets (0: none)
    constraint_sizes: tuple[int, ...]
    check_targets: int
    repeat: int
    seed: int
    quick: bool
    profile: bool
    write: Path | None


@dataclass(frozen=True, slots=True)
class FastRun:
    build_seconds: float  # best Planner(spec), i.e. building the index
    cold_seconds: float  # the first plan() in this process
    plan_seconds: float  # the best plan()
    chosen: list[tuple[str, str | None]]  # (unit, target or None), in plan order
    feasible: float  # mean number of targets that passed every filter, over placed units
    cold_faults: int  # minor page faults during the first plan()
    warm_faults: int  # and during the best one


@dataclass(frozen=True, slots=True)
class HotSpot:
    function: str
    calls: int
    seconds: float  # time in the function itself, callees excluded
    share: float  # of the whole profiled plan()


@dataclass(frozen=True, slots=True)
class AllocationResult:
    targets: int
    units: int
    placed: int
    feasible: float
    distinct_tag_sets: int
    build_seconds: float
    cold_seconds: float
    plan_seconds: float
    cold_faults: int
    warm_faults: int
    reference_units: int
    reference_seconds: float
    mismatches: int
    floor_seconds: float
    hot_spots: list[HotSpot]

    @property
    def fast_rate(self) -> float:
        return self.units / self.plan_seconds

    @property
    def cold_rate(self) -> float:
        return self.units / self.cold_seconds

    @property
    def reference_rate(self) -> float:
        return self.reference_units / self.reference_seconds

    @property
    def speedup(self) -> float:
        return self.fast_rate / self.reference_rate

    @property
    def floors(self) -> float:
        return (self.plan_seconds / self.units) / self.floor_seconds


@dataclass(frozen=True, slots=True)
class MappingResult:
    max_load_setting: float | None  # None: plain mapping, a pure function of the live set
    units: int
    targets: int
    build_seconds: float
    plan_seconds: float
    max_load: int
    mean_load: float
    off_first_choice: int  # units a cap sent past their first choice
    lost_target: str
    lost_units: int
    moved: int
    moved_only_lost: bool
    after_imbalance: float  # max/mean over the 99 targets left
    rejoin_moved: int  # bringing the lost target back (from a plan without it)
    rejoin_only_to_it: bool
    sweep: list[float]  # max/mean for the same units under other workload names
    ideal_mean: float  # expected max/mean if each unit picked a target uniformly at random
    ideal_over: float  # how often that ideal assignment exceeds MAX_IMBALANCE

    @property
    def label(self) -> str:
        if self.max_load_setting is None:
            return "plain"
        return f"max_load {self.max_load_setting:g}"

    @property
    def rate(self) -> float:
        return self.units / self.plan_seconds

    @property
    def imbalance(self) -> float:
        return self.max_load / self.mean_load

    @property
    def exact(self) -> bool:
        return self.moved_only_lost and self.moved == self.lost_units and self.rejoin_only_to_it

    @property
    def balanced(self) -> bool:
        return max(self.imbalance, self.after_imbalance) <= MAX_IMBALANCE


@dataclass(frozen=True, slots=True)
class EdgeNode:
    """One generated node: its own properties in Open Horizon's list form, and what its agent
    reports (which become the openhorizon.* built-ins)."""

    properties: list[dict[str, object]]
    cpu: int
    memory: int
    arch: str


@dataclass(frozen=True, slots=True)
class TermCost:
    term: str
    matched: int
    seconds: float  # best time of PropertyColumns.compare for this one term


@dataclass(frozen=True, slots=True)
class ConstraintResult:
    targets: int
    properties: int  # over all targets
    matched: int
    build_seconds: float  # PropertyColumns(sets), once
    parse_seconds: float  # parse(CONSTRAINT), the lark parse, best
    fast_seconds: float  # best PropertyColumns.satisfied over all targets
    reference_seconds: float  # best loop of evaluate.satisfied over all targets
    reference_runs: int
    mismatches: int
    floor_seconds: float
    terms: list[TermCost]

    @property
    def fast_rate(self) -> float:
        return self.targets / self.fast_seconds

    @property
    def reference_rate(self) -> float:
        return self.targets / self.reference_seconds

    @property
    def ratio(self) -> float:
        return self.reference_seconds / self.fast_seconds

    @property
    def floors(self) -> float:
        return self.fast_seconds / self.floor_seconds


@dataclass(frozen=True, slots=True)
class CheckResult:
    targets: int
    scopes: dict[str, int]
    build_seconds: float  # best Planner(spec)
    check_seconds: float  # best deploy_check(planner, [workload]), planner already built
    check_runs: int
    summary: str
    compatible: int
    reasons: int  # over all targets
    rejected_by: dict[str, int]  # filter -> incompatible targets it gives a reason for
    without_reason: int  # incompatible targets with no reason: must be 0
    compatible_with_reason: int  # must be 0 too
    plan_build_seconds: float
    plan_seconds: float
    placements: int
    reference_seconds: float
    disagreements: int  # targets that check, plan and reference_plan do not all agree on
    hot_spots: list[HotSpot]

    @property
    def total_seconds(self) -> float:
        return self.build_seconds + self.check_seconds

    @property
    def ok(self) -> bool:
        return not (self.without_reason or self.compatible_with_reason or self.disagreements)


def progress(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


# -- generating a problem ------------------------------------------------------------------


def tag_names(rng: np.random.Generator, size: int) -> list[str]:
    """Tag names ordered by popularity rank; shuffled so every category has common tags."""
    names = [f"{CATEGORIES[i % len(CATEGORIES)]}{i // len(CATEGORIES)}" for i in range(size)]
    order = rng.permutation(size)
    return [names[i] for i in order]


def zipf_weights(size: int, exponent: float) -> FloatArray:
    weights = 1.0 / np.arange(1, size + 1, dtype=np.float64) ** exponent
    return weights / weights.sum()


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
        Workload(name=f"w{row:05d}", units=1, mode="allocation", tags=tags, resources={"cpu": 1.0})
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
    workload = Workload(
        name=name, units=units, mode="mapping", tags=frozenset({"conductor"}), max_load=max_load
    )
    return Spec(inventory, (workload,), Settings(default_mode="mapping"), name="mapping")


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
    workload = Workload(
        name="lab-inference",
        mode="every",
        constraints=(CONSTRAINT,),
        services=(Service(url="lab-inference", org="myorg", version="1.0.0"),),
        cluster_namespace=DEPLOY_NAMESPACE,
    )
    inventory = Inventory.from_roots(tuple(sites))
    return Spec(inventory, (workload,), Settings(default_mode="every"), name="deploy"), workload


# -- measuring -----------------------------------------------------------------------------


def scan_floor(size: int, rng: np.random.Generator) -> float:
    """Seconds for one `col >= x` over a float64 column of `size` targets (best case)."""
    column = rng.random(size)
    threshold = 0.5
    loops = max(1000, 2_000_000 // max(size, 1))
    timer = timeit.Timer(lambda: column >= threshold)
    return min(timer.repeat(repeat=7, number=loops)) / loops


def time_fast(spec: Spec, repeat: int) -> FastRun:
    builds: list[float] = []
    plans: list[float] = []
    faults: list[int] = []
    for _ in range(repeat):
        # A fresh Planner each run: its per-workload cache must not carry over.
        start = time.perf_counter()
        planner = Planner(spec)
        built = time.perf_counter()
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        result = planner.plan()
        done = time.perf_counter()
        faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
        builds.append(built - start)
        plans.append(done - built)
    chosen = [(o.unit, o.target if isinstance(o, Placement) else None) for o in result.outcomes]
    placements = result.placements
    feasible = sum(p.feasible for p in placements) / len(placements) if placements else 0.0
    best = plans.index(min(plans))
    return FastRun(min(builds), plans[0], plans[best], chosen, feasible, faults[0], faults[best])


def run_allocation(
    size: int, names: list[str], workloads: tuple[Workload, ...], distinct: int, config: Config
) -> AllocationResult:
    rng = np.random.default_rng([config.seed, size])
    progress(f"{size:,} targets: generating inventory")
    inventory = make_inventory(rng, names, size)
    spec = Spec(inventory, workloads, Settings(), name=f"allocation-{size}")

    progress(f"{size:,} targets: fast engine, {len(workloads):,} units x{config.repeat}")
    fast = time_fast(spec, config.repeat)

    # Allocation consumes capacity in order, so the prefix is a spec of its own that both
    # engines plan from scratch; comparing against the full run would not be like for like.
    prefix = Spec(inventory, workloads[: config.reference_units], Settings(), name="prefix")
    progress(f"{size:,} targets: reference oracle, {config.reference_units:,} units")
    start = time.perf_counter()
    expected = reference_plan(prefix)
    reference_seconds = time.perf_counter() - start
    actual = time_fast(prefix, 1).chosen
    # A missing or extra outcome counts as a mismatch too, hence strict=False and the tail.
    mismatches = sum(
        (o.unit, o.target) != got for o, got in zip(expected, actual, strict=False)
    ) + abs(len(expected) - len(actual))

    progress(f"{size:,} targets: scan floor")
    floor = scan_floor(size, rng)

    hot_spots = profile_plan(spec) if config.profile and size == max(config.sizes) else []
    return AllocationResult(
        targets=size,
        units=len(workloads),
        placed=sum(target is not None for _, target in fast.chosen),
        feasible=fast.feasible,
        distinct_tag_sets=distinct,
        build_seconds=fast.build_seconds,
        cold_seconds=fast.cold_seconds,
        plan_seconds=fast.plan_seconds,
        cold_faults=fast.cold_faults,
        warm_faults=fast.warm_faults,
        reference_units=len(prefix.workloads),
        reference_seconds=reference_seconds,
        mismatches=mismatches,
        floor_seconds=floor,
        hot_spots=hot_spots,
    )


def profile_plan(spec: Spec, top: int = 12) -> list[HotSpot]:
    """The functions plan() spends its own time in, most first (cProfile, after timing)."""
    progress(f"profiling the fast engine on {len(spec.inventory.targets):,} targets")
    return profile_call(Planner(spec).plan, top)


def profile_call(function: Callable[[], object], top: int = 12) -> list[HotSpot]:
    """The functions a call spends its own time in, most first, also printed to stderr."""
    profiler = cProfile.Profile()
    profiler.runcall(function)
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out).sort_stats("tottime")
    stats.print_stats(25)
    print(out.getvalue(), file=sys.stderr)
    # Stats.stats rather than get_stats_profile(): the latter keys functions by bare name, so
    # the four `keep` methods and every `<listcomp>` would overwrite one another.
    rows = stats.stats  # type: ignore[attr-defined]
    total = sum(row[2] for row in rows.values())
    ranked = sorted(rows.items(), key=lambda item: -item[1][2])[:top]
    root = str(Path(__file__).resolve().parents[1]) + "/"
    return [
        HotSpot(
            f"{file.replace(root, '')}:{line}({name})" if line else name,
            int(row[1]),  # all calls, recursive ones included
            float(row[2]),
            float(row[2]) / total,
        )
        for (file, line, name), row in ranked
    ]


def best_of(function: Callable[[], object], repeat: int, number: int = 1) -> float:
    """Seconds for one call: the best of `repeat` timings of `number` calls each."""
    return min(timeit.Timer(function).repeat(repeat=repeat, number=number)) / number


def run_constraints(config: Config) -> list[ConstraintResult]:
    largest = max(config.constraint_sizes)
    rng = np.random.default_rng([config.seed, 2])
    progress(f"constraints: generating {largest:,} nodes with typed properties")
    # Smaller sizes are prefixes of the largest set, so every size sees the same nodes.
    sets = [constraint_properties(node) for node in make_edge_nodes(rng, largest)]
    return [
        measure_constraint(sets[:size], config, rng) for size in sorted(config.constraint_sizes)
    ]


def measure_constraint(
    sets: list[dict[str, Property]], config: Config, rng: np.random.Generator
) -> ConstraintResult:
    size = len(sets)
    progress(f"constraints: {size:,} targets, building property columns")
    start = time.perf_counter()
    columns = PropertyColumns(sets)
    build = time.perf_counter() - start
    # parse() rather than parse_constraint(), which may cache: this is the lark parse itself.
    parsing = best_of(lambda: parse_expression(CONSTRAINT), 5, 10)
    constraint = parse_constraint(CONSTRAINT)
    # Enough calls per timing that one timing lasts milliseconds, whatever the size.
    number = max(5, 1_000_000 // size)
    progress(f"constraints: {size:,} targets, fast path {number} calls x7")
    fast = best_of(lambda: columns.satisfied(constraint), 7, number)
    got = columns.satisfied(constraint)

    progress(f"constraints: {size:,} targets, reference x{config.repeat}")
    expected: list[bool] = []
    reference = float("inf")
    for _ in range(config.repeat):
        start = time.perf_counter()
        expected = [satisfied(constraint, properties) for properties in sets]
        reference = min(reference, time.perf_counter() - start)
    mismatches = int((got != np.array(expected, dtype=bool)).sum())

    tree = constraint.tree
    terms = tree.terms if isinstance(tree, All) else (tree,) if tree is not None else ()
    costs = [
        TermCost(
            str(term),
            int(columns.holds(term).sum()),
            best_of(lambda term=term: columns.holds(term), 5, number),
        )
        for term in terms
    ]
    progress(f"constraints: {size:,} targets, scan floor")
    return ConstraintResult(
        targets=size,
        properties=sum(len(properties) for properties in sets),
        matched=int(got.sum()),
        build_seconds=build,
        parse_seconds=parsing,
        fast_seconds=fast,
        reference_seconds=reference,
        reference_runs=config.repeat,
        mismatches=mismatches,
        floor_seconds=scan_floor(size, rng),
        terms=costs,
    )


def run_check(config: Config) -> CheckResult:
    size = config.check_targets
    rng = np.random.default_rng([config.seed, 2, size])
    progress(f"deploy check: generating {size:,} edge nodes")
    spec, workload = make_deploy_spec(rng, size)
    repeat = max(1, min(config.repeat, 3))
    builds: list[float] = []
    checks: list[float] = []
    for run in range(repeat):
        progress(f"deploy check: {size:,} targets, run {run + 1} of {repeat}")
        start = time.perf_counter()
        planner = Planner(spec)
        built = time.perf_counter()
        document, _ = deploy_check(planner, [workload])
        checks.append(time.perf_counter() - built)
        builds.append(built - start)
    (row,) = document["workloads"]
    rejected_by: Counter[str] = Counter()
    for target in row["targets"]:
        rejected_by.update({reason["filter"] for reason in target["reasons"]})
    compatible = {t["target"] for t in row["targets"] if t["compatible"]}

    progress(f"deploy check: plan() in every mode x{config.repeat}")
    fast = time_fast(spec, config.repeat)
    placed = {target for _, target in fast.chosen if target is not None}
    placements = sum(target is not None for _, target in fast.chosen)
    progress("deploy check: reference oracle")
    start = time.perf_counter()
    expected = {o.target for o in reference_plan(spec) if o.target is not None}
    reference = time.perf_counter() - start
    everyone = compatible | placed | expected

    hot_spots: list[HotSpot] = []
    if config.profile:
        progress(f"profiling the deploy check on {size:,} targets")
        planner = Planner(spec)
        hot_spots = profile_call(lambda: deploy_check(planner, [workload]))
    return CheckResult(
        targets=size,
        scopes=dict(Counter(t.agent.scope for t in spec.inventory.targets)),
        build_seconds=min(builds),
        check_seconds=min(checks),
        check_runs=repeat,
        summary=row["summary"],
        compatible=row["compatible_targets"],
        reasons=sum(len(t["reasons"]) for t in row["targets"]),
        rejected_by=dict(rejected_by),
        without_reason=sum(not t["compatible"] and not t["reasons"] for t in row["targets"]),
        compatible_with_reason=sum(t["compatible"] and bool(t["reasons"]) for t in row["targets"]),
        plan_build_seconds=fast.build_seconds,
        plan_seconds=fast.plan_seconds,
        placements=placements,
        reference_seconds=reference,
        disagreements=len(everyone - (compatible & placed & expected)),
        hot_spots=hot_spots,
    )


def run_mapping(config: Config, max_load: float | None) -> MappingResult:
    units, targets = config.mapping_units, config.mapping_targets
    spec = make_mapping_spec(units, targets, max_load=max_load)
    mode = "plain" if max_load is None else f"max_load {max_load:g}"
    progress(f"mapping ({mode}): {units:,} units onto {targets} targets x{config.repeat}")
    fast = time_fast(spec, config.repeat)
    load = Counter(target for _, target in fast.chosen if target is not None)
    loads = [load.get(target.id, 0) for target in spec.inventory.targets]
    # The most loaded target is the one whose loss hurts most, and it is chosen by the data
    # rather than by hand.
    lost = max(spec.inventory.targets, key=lambda t: (load.get(t.id, 0), t.id)).id

    progress(f"mapping ({mode}): simulating the loss of {lost}, and its return")
    simulation = simulate(Planner(spec), [lost], [])
    owned = sum(isinstance(o, Placement) and o.target == lost for o in simulation.before.outcomes)
    only_lost = all(move.source == lost and move.destination for move in simulation.moves)
    left = Counter(p.target for p in simulation.after.placements)
    rejoin = simulate(
        Planner(make_mapping_spec(units, targets, max_load=max_load, down=lost)), [], [lost]
    )
    off_first = (
        sum(isinstance(o, Placement) and o.choice > 1 for o in Planner(spec).plan().outcomes)
        if max_load is not None
        else 0
    )

    # One workload name is one draw of the hash: the same units under other names show
    # whether a max/mean is bad luck or a bias, and the ideal is what a perfectly uniform
    # assignment would give.
    progress(f"mapping ({mode}): balance under {config.mapping_names} other workload names")
    sweep = []
    for k in range(config.mapping_names):
        other = make_mapping_spec(units, targets, f"nodes-{k}", max_load)
        spread = Counter(p.target for p in Planner(other).plan().placements)
        sweep.append(max(spread.values()) * targets / units)
    rng = np.random.default_rng([config.seed, units])
    uniform = np.full(targets, 1.0 / targets)
    ideal = rng.multinomial(units, uniform, size=2000).max(axis=1) / (units / targets)
    return MappingResult(
        max_load_setting=max_load,
        units=units,
        targets=targets,
        build_seconds=fast.build_seconds,
        plan_seconds=fast.plan_seconds,
        max_load=max(loads),
        mean_load=sum(loads) / len(loads),
        off_first_choice=off_first,
        lost_target=lost,
        lost_units=owned,
        moved=len(simulation.moves),
        moved_only_lost=only_lost,
        after_imbalance=max(left.values()) * (targets - 1) / units,
        rejoin_moved=len(rejoin.moves),
        rejoin_only_to_it=all(move.destination == lost for move in rejoin.moves),
        sweep=sweep,
        ideal_mean=float(ideal.mean()),
        ideal_over=float((ideal > MAX_IMBALANCE).mean()),
    )


@dataclass(frozen=True, slots=True)
class ScaleResult:
    label: str
    units: int
    targets: int
    plan_seconds: float
    imbalance: float
    off_first_choice: int


def run_mapping_scale(config: Config) -> list[ScaleResult]:
    """The same mapping onto many targets: what the cap costs when loads are small."""
    results = []
    for max_load in (None, MAPPING_MAX_LOAD, 1.0):
        units, targets = config.mapping_units, config.scale_targets
        spec = make_mapping_spec(units, targets, max_load=max_load)
        label = "plain" if max_load is None else f"max_load {max_load:g}"
        progress(f"mapping ({label}): {units:,} units onto {targets:,} targets")
        planner = Planner(spec)
        start = time.perf_counter()
        placements = planner.plan().placements
        seconds = time.perf_counter() - start
        load = Counter(p.target for p in placements)
        results.append(
            ScaleResult(
                label,
                units,
                targets,
                seconds,
                max(load.values()) * targets / units,
                sum(p.choice > 1 for p in placements),
            )
        )
    return results


def scale_section(results: list[ScaleResult]) -> list[str]:
    if not results:
        return []
    lines = [f"### Mapping onto {results[0].targets:,} targets", ""]
    lines += table(
        [
            "mode",
            "units",
            "targets",
            "plan (one run)",
            "units/s",
            "max/mean load",
            "past first choice",
        ],
        [
            [
                r.label,
                f"{r.units:,}",
                f"{r.targets:,}",
                f"{r.plan_seconds:.2f} s",
                f"{r.units / r.plan_seconds:,.0f}",
                f"{r.imbalance:.3f}",
                f"{r.off_first_choice:,}",
            ]
            for r in results
        ],
    )
    lines += [
        "",
        "Ten units per target: plain mapping's loads vary widely, and a cap near the mean "
        "sends many units past their first choice. Every run computes each unit's weight "
        "for every target once (10^9 weights), which is most of plain mapping's time; "
        "`max_load: 1` (every target at exactly 10) is the stable assignment's worst case.",
        "",
    ]
    return lines


# -- reporting -----------------------------------------------------------------------------


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return (
        f"nproc {cores}, {cpu}, {platform.system()} {platform.machine()}, "
        f"Python {platform.python_version()}, numpy {np.__version__}"
    )


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines.extend("| " + " | ".join(row) + " |" for row in rows)
    return lines


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def render(
    config: Config,
    allocations: list[AllocationResult],
    mappings: list[MappingResult],
    scale: list[ScaleResult],
    constraints: list[ConstraintResult],
    check: CheckResult,
    argv: list[str],
) -> str:
    command = " ".join([".venv/bin/python", "benchmarks/run.py", *argv])
    lines = [
        "# placed benchmarks",
        "",
        "`make bench` runs `.venv/bin/python benchmarks/run.py` and prints this report to "
        f"stdout; this one comes from `{command}`.",
        "",
        f"Machine: {machine()}.",
        "",
        f"Seed {config.seed}. A vocabulary of {VOCABULARY_SIZE} tags. Each target has 10-30 "
        f"tags, 0-2 hard-affinity tags from the {COMMON_HEAD} most common ones, 1-4 "
        f"hard-anti-affinity tags from the rarer ones (rank >= {RARE_FROM}), 8-12 soft-affinity "
        f"and 8-12 soft-anti-affinity tags (tags and soft lists Zipf {TARGET_ZIPF}), and "
        f"{CPU_CAPACITY[0]}-{CPU_CAPACITY[1]} cpu. There are {TARGETS_PER_RACK} targets per "
        f"rack. Each unit is its own allocation workload with 10-20 tags (Zipf "
        f"{WORKLOAD_ZIPF}) and asks for 1 cpu. Every run starts from a fresh Planner. "
        f'"Cold" is the first run in the process; "warm" is the best of {config.repeat}.',
        "",
    ]
    lines += allocation_section(allocations)
    lines += mapping_section(mappings)
    lines += scale_section(scale)
    lines += constraint_section(constraints)
    lines += check_section(check)
    lines += acceptance_section(config, allocations, mappings, constraints, check)
    return "\n".join(lines) + "\n"


def allocation_section(allocations: list[AllocationResult]) -> list[str]:
    lines = ["## Allocation: every unit a different workload", ""]
    lines += table(
        [
            "targets",
            "units",
            "placed",
            "feasible targets per unit",
            "index build",
            "plan cold",
            "plan warm",
            "placements/s cold",
            "placements/s warm",
            "page faults cold / warm",
        ],
        [
            [
                f"{a.targets:,}",
                f"{a.units:,} ({a.distinct_tag_sets:,} distinct tag sets)",
                f"{a.placed:,} ({a.placed / a.units:.1%})",
                f"{a.feasible:,.0f} ({a.feasible / a.targets:.0%})",
                f"{a.build_seconds * 1e3:,.0f} ms",
                f"{a.cold_seconds:.2f} s",
                f"{a.plan_seconds:.2f} s",
                f"{a.cold_rate:,.0f}",
                f"{a.fast_rate:,.0f}",
                f"{a.cold_faults:,} / {a.warm_faults:,}",
            ]
            for a in allocations
        ],
    )
    lines += [
        "",
        "Index build is `Planner(spec)` and is not part of the plan time. Plan time is "
        "`Planner.plan()` over all units, which includes compiling every workload, because no "
        "two units share one. Feasible targets are the targets that passed every filter "
        "(status, hard anti-affinity, hard affinity, capacity), as a mean over placed units. "
        "Page faults are the minor faults the process takes during `plan()`. When cold runs "
        "are slow, these faults are the difference: the allocator has not yet adapted to "
        "the large per-unit temporaries.",
        "",
        "## Fast engine against the reference oracle",
        "",
    ]
    lines += table(
        [
            "targets",
            "reference units",
            "reference time",
            "reference placements/s",
            "fast placements/s (warm)",
            "fast / reference",
            "mismatches",
        ],
        [
            [
                f"{a.targets:,}",
                f"{a.reference_units:,}",
                f"{a.reference_seconds:.2f} s",
                f"{a.reference_rate:,.1f}",
                f"{a.fast_rate:,.0f}",
                f"{a.speedup:,.0f}x",
                f"{a.mismatches}",
            ]
            for a in allocations
        ],
    )
    lines += [
        "",
        "`reference_plan` places only the first units (`--reference-units`). Both engines plan "
        "that prefix as a spec of its own, since allocation uses up capacity in order, and "
        "they must choose the same target for every unit. The ratio compares the fast "
        "engine's warm rate over all units with the reference's rate over the prefix.",
        "",
        "## Scan floor",
        "",
    ]
    lines += table(
        ["targets", "floor (`col >= x`)", "per placement warm", "cost warm", "cost cold"],
        [
            [
                f"{a.targets:,}",
                f"{a.floor_seconds * 1e6:.2f} µs",
                f"{a.plan_seconds / a.units * 1e6:,.0f} µs",
                f"{a.floors:,.1f} floors",
                f"{a.cold_seconds / a.units / a.floor_seconds:,.1f} floors",
            ]
            for a in allocations
        ],
    )
    lines += [
        "",
        "The floor is the best time numpy takes for one comparison over one float64 column "
        "that holds all targets (timeit, the minimum of 7 repeats of many loops). A "
        "placement's cost is its time divided by the floor.",
        "",
    ]
    for a in allocations:
        if a.hot_spots:
            lines += hot_spot_section(a)
    return lines


def hot_spot_table(spots: list[HotSpot]) -> list[str]:
    return table(
        ["function", "calls", "own time", "share"],
        [
            [f"`{h.function}`", f"{h.calls:,}", f"{h.seconds:.3f} s", f"{h.share:.1%}"]
            for h in spots
        ],
    )


def hot_spot_section(a: AllocationResult) -> list[str]:
    lines = [f"## Where the time goes at {a.targets:,} targets (`--profile`)", ""]
    lines += hot_spot_table(a.hot_spots)
    lines += [
        "",
        "These are from one `plan()` run under cProfile, taken after the timed runs, so "
        "the times are inflated. Own time excludes callees. For `np.concatenate` and "
        "`np.bincount`, cProfile sees only their Python dispatchers, so their C work is "
        "charged to the function that calls them (`gather` and `score` in `tags.py`).",
        "",
    ]
    return lines


def mapping_section(results: list[MappingResult]) -> list[str]:
    plain = next(m for m in results if m.max_load_setting is None)
    lines = ["## Mapping", ""]
    lines += table(
        [
            "mode",
            "units",
            "targets",
            "plan warm",
            "units/s",
            "max/mean load",
            "past first choice",
            "lost target",
            "moved",
            "max/mean after",
            "lost target back: moved",
            "moves exactly the units it must",
        ],
        [
            [
                m.label,
                f"{m.units:,}",
                f"{m.targets}",
                f"{m.plan_seconds:.2f} s",
                f"{m.rate:,.0f}",
                f"{m.max_load:,}/{m.mean_load:,.0f} = {m.imbalance:.3f}",
                f"{m.off_first_choice:,}",
                f"{m.lost_target} ({m.lost_units:,} units)",
                f"{m.moved:,} ({m.moved / m.units:.2%})",
                f"{m.after_imbalance:.3f}",
                f"{m.rejoin_moved:,}, all to it" if m.rejoin_only_to_it else f"{m.rejoin_moved:,}",
                "yes" if m.exact else "no",
            ]
            for m in results
        ],
    )
    lines += [
        "",
        f"There is one mapping workload, `nodes`, with {plain.units:,} units and no "
        "resources, planned once as plain mapping and once with `max_load: 1.1`. Every "
        "target carries the workload's tag, so all targets tie and only the rendezvous "
        "ranking (and, with max_load, the cap) places the units. The lost target is the "
        "most loaded one; `simulate(planner, [lost], [])` gives the moves, and a move "
        "counts as exact when it leaves the lost target for a live one. `lost target back` "
        "plans the inventory without that target and simulates its return: every move must "
        "go to it. `max/mean after` is over the targets left after the loss.",
        "",
        "Each other workload name is a fresh draw of the hash. Plain mapping's balance is a "
        "matter of chance; max_load's is not:",
        "",
    ]
    lines += table(
        ["mode", "other workload names", "max/mean: lowest", "median", "highest", "above 1.10"],
        [
            [
                m.label,
                f"{len(m.sweep)}",
                f"{min(m.sweep):.3f}",
                f"{sorted(m.sweep)[len(m.sweep) // 2]:.3f}",
                f"{max(m.sweep):.3f}",
                f"{sum(v > MAX_IMBALANCE for v in m.sweep)}",
            ]
            for m in results
        ],
    )
    lines += [
        "",
        f"If every unit chose its target uniformly at random, the expected max/mean would be "
        f"{plain.ideal_mean:.3f}, and {plain.ideal_over:.1%} of such assignments would be "
        f"above {MAX_IMBALANCE:.2f} (2,000 simulated). Plain mapping cannot promise better "
        "and stay a pure function: an owner that is a function of (unit, live targets) "
        "alone, and that moves only a lost target's units for every possible loss, must "
        "follow a fixed ranking per unit, so the loads are counts of independent draws "
        "(`src/placed/engine/balance.py` gives the argument). `max_load` gives up that "
        "purity instead: the plan is the stable assignment under the cap, and a change "
        "repairs the current owners, so a loss still moves exactly the lost units and a "
        "return moves units only to the returning target, but owners after several "
        "changes depend on their order.",
        "",
    ]
    return lines


def microseconds(seconds: float) -> str:
    value = seconds * 1e6
    return f"{value:,.0f} µs" if value >= 100 else f"{value:.1f} µs"


def shares(names: Sequence[str], weights: Sequence[float]) -> str:
    return ", ".join(f"{name} {weight:.0%}" for name, weight in zip(names, weights, strict=True))


def constraint_section(results: list[ConstraintResult]) -> list[str]:
    lines = [
        "## Constraint evaluation",
        "",
        f"One constraint of six terms: `{CONSTRAINT}`.",
        "",
        "The targets are edge nodes with typed properties in Open Horizon's list form, read "
        "by `validate_properties`: `purpose` (text with no type: "
        + shares(PURPOSES, PURPOSE_WEIGHTS)
        + "), `openhorizon.cpu` (int, "
        + "/".join(map(str, NODE_CPUS))
        + "), `openhorizon.memory` (int), `openhorizon.arch` (string, "
        + shares(ARCHES, ARCH_WEIGHTS)
        + f"), `gpu` (boolean, {GPU_TRUE:.0%} true; on {GPU_AS_TEXT:.0%} of the nodes the "
        'text "true" or "false"), `zone` (string, one of '
        f"{ZONES}), `agentVersion` (version, 1.0.0 to 2.4.9) and `features` (list of strings, "
        f"1-4 of {len(FEATURES)}, written comma-separated). "
        + ", ".join(f"`{name}` is absent on {1 - share:.0%}" for name, share in PRESENT.items())
        + " of the nodes. Each smaller size is a prefix of the largest set.",
        "",
    ]
    lines += table(
        [
            "targets",
            "properties",
            "matched",
            "columns build",
            "fast: all targets",
            "fast per target",
            "fast targets/s",
            "reference: all targets",
            "reference per target",
            "reference targets/s",
            "fast / reference",
            "mismatches",
        ],
        [
            [
                f"{r.targets:,}",
                f"{r.properties:,}",
                f"{r.matched:,} ({r.matched / r.targets:.1%})",
                f"{r.build_seconds * 1e3:,.0f} ms",
                microseconds(r.fast_seconds),
                f"{r.fast_seconds / r.targets * 1e9:.1f} ns",
                f"{r.fast_rate:,.0f}",
                f"{r.reference_seconds * 1e3:,.1f} ms",
                f"{r.reference_seconds / r.targets * 1e6:.2f} µs",
                f"{r.reference_rate:,.0f}",
                f"{r.ratio:,.0f}x",
                f"{r.mismatches}",
            ]
            for r in results
        ],
    )
    parsing = min(r.parse_seconds for r in results)
    runs = results[0].reference_runs
    lines += [
        "",
        "The fast path is `PropertyColumns(sets)`, built once (columns build, not part of the "
        "evaluation), then `columns.satisfied(constraint)`: the best of 7 timings of many "
        "calls. The reference is `evaluate.satisfied(constraint, properties)` for every "
        f"property set in a Python loop, over all targets at every size, the best of {runs} "
        "loops; it stops at the first false term, as `and` does, so targets that fail early "
        "cost it less. Both get the same parsed constraint; parsing its text (`parse`, lark, "
        f"uncached) takes {microseconds(parsing)} and is not in either time. Both must give "
        "the same boolean for every target.",
        "",
    ]
    lines += table(
        ["targets", "floor (`col >= x`)", "fast: all targets", "cost"],
        [
            [
                f"{r.targets:,}",
                microseconds(r.floor_seconds),
                microseconds(r.fast_seconds),
                f"{r.floors:,.1f} floors",
            ]
            for r in results
        ],
    )
    largest = max(results, key=lambda r: r.targets)
    lines += [
        "",
        "The floor is the one defined above, over a column as long as the targets.",
        "",
        f"### Where the fast path's time goes at {largest.targets:,} targets",
        "",
    ]
    rest = largest.fast_seconds - sum(t.seconds for t in largest.terms)
    lines += table(
        ["term", "holds on", "time", "cost", "share"],
        [
            [
                f"`{t.term}`",
                f"{t.matched:,}",
                microseconds(t.seconds),
                f"{t.seconds / largest.floor_seconds:,.1f} floors",
                f"{t.seconds / largest.fast_seconds:.0%}",
            ]
            for t in largest.terms
        ]
        + [
            [
                "the rest: the AND of the masks, dispatch",
                "",
                microseconds(rest),
                f"{rest / largest.floor_seconds:,.1f} floors",
                f"{rest / largest.fast_seconds:.0%}",
            ]
        ],
    )
    lines += [
        "",
        "Each term is timed alone (`columns.holds(term)`, best of 5), so the rest is the "
        "whole evaluation less the sum of its terms.",
        "",
    ]
    return lines


def check_section(c: CheckResult) -> list[str]:
    scopes = ", ".join(f"{c.scopes.get(scope, 0):,} {scope}" for scope in SCOPES)
    lines = [
        "## Deploy check",
        "",
        f"One deployment policy, `lab-inference` (mode `every`, cluster_namespace "
        f"{DEPLOY_NAMESPACE}, one service), whose constraint is the one above, against "
        f"{c.targets:,} edge nodes in sites of {NODES_PER_SITE}: {scopes} agents (a "
        f"namespace-scoped agent runs in one of {', '.join(NAMESPACES)}). The nodes have the "
        "properties above, except that openhorizon.cpu, openhorizon.memory and "
        "openhorizon.arch are not written on them: placed derives those built-ins from each "
        "node's capacity and agent.",
        "",
    ]
    lines += table(
        [
            "targets",
            "compatible",
            "reasons",
            "incompatible without a reason",
            "`Planner(spec)`",
            "`deploy_check`",
            "total",
            "per target",
        ],
        [
            [
                f"{c.targets:,}",
                f"{c.compatible:,} ({c.compatible / c.targets:.1%})",
                f"{c.reasons:,}",
                f"{c.without_reason:,}",
                f"{c.build_seconds * 1e3:,.0f} ms",
                f"{c.check_seconds:.2f} s",
                f"{c.total_seconds:.2f} s",
                microseconds(c.total_seconds / c.targets),
            ]
        ],
    )
    rejected = ", ".join(
        f"`{name}` for {count:,}"
        for name, count in sorted(c.rejected_by.items(), key=lambda item: -item[1])
    )
    lines += [
        "",
        f"The check is `deploy_check(Planner(spec), [workload])`, with every reason for every "
        f"target; the times are the best of {c.check_runs} runs, each with a fresh Planner, "
        "whose build is timed apart. Its summary: "
        f"`{c.summary}`. Of the {c.targets - c.compatible:,} incompatible targets, these "
        f"filters give a reason: {rejected} (a target can have reasons from several); "
        f"{c.compatible_with_reason} compatible targets have a reason.",
        "",
        "### `plan()` for the same spec",
        "",
    ]
    lines += table(
        [
            "targets",
            "index build",
            "plan warm",
            "placements",
            "`reference_plan`",
            "check, plan and reference disagree on",
        ],
        [
            [
                f"{c.targets:,}",
                f"{c.plan_build_seconds * 1e3:,.0f} ms",
                f"{c.plan_seconds * 1e3:,.0f} ms",
                f"{c.placements:,}",
                f"{c.reference_seconds:.2f} s",
                f"{c.disagreements} targets",
            ]
        ],
    )
    lines += [
        "",
        "`Planner(spec).plan()` in `every` mode places one unit on each compatible target "
        "(best of the runs, fresh Planner each). The reference oracle runs once. The "
        "compatible targets of the check, the targets `plan()` places on and those the "
        "reference places on must be the same set.",
        "",
    ]
    if c.hot_spots:
        lines += [f"### Where the deploy check's time goes at {c.targets:,} targets (`--profile`)"]
        lines += [""]
        lines += hot_spot_table(c.hot_spots)
        lines += [
            "",
            "From one `deploy_check` under cProfile (Planner built beforehand), taken after "
            "the timed runs, so the times are inflated. Own time excludes callees.",
            "",
        ]
    return lines


def acceptance_section(
    config: Config,
    allocations: list[AllocationResult],
    mappings: list[MappingResult],
    constraints: list[ConstraintResult],
    check: CheckResult,
) -> list[str]:
    full = next((a for a in allocations if a.targets == 10_000), None)
    skipped = ["n/a", "not run (quick)"]
    speed = [f"{full.speedup:,.0f}x", verdict(full.speedup >= MIN_SPEEDUP)] if full else skipped
    cost = (
        [
            f"{full.floors:,.1f} warm "
            f"({full.cold_seconds / full.units / full.floor_seconds:,.1f} cold)",
            verdict(full.floors <= MAX_FLOORS),
        ]
        if full
        else skipped
    )
    plain = next(m for m in mappings if m.max_load_setting is None)
    bounded = next(m for m in mappings if m.max_load_setting is not None)
    balance = [
        f"{bounded.imbalance:.3f}, after the loss {bounded.after_imbalance:.3f}",
        verdict(bounded.balanced),
    ]
    mismatches = sum(a.mismatches for a in allocations)
    evaluation = next((r for r in constraints if r.targets == 10_000), None)
    ratio = (
        [f"{evaluation.ratio:,.0f}x", verdict(evaluation.ratio >= MIN_SPEEDUP)]
        if evaluation
        else skipped
    )
    differing = sum(r.mismatches for r in constraints)
    lines = ["## Acceptance", ""]
    lines += table(
        ["target", "measured", "result"],
        [
            [f"fast >= {MIN_SPEEDUP:g}x reference placements/s at 10,000 targets", *speed],
            [f"placement cost <= {MAX_FLOORS:g} scan floors at 10,000 targets", *cost],
            [f"mapping (max_load 1.1): max/mean load <= {MAX_IMBALANCE:.2f}", *balance],
            [
                "mapping (max_load 1.1): moves exactly the lost target's units",
                f"{bounded.moved:,} of {bounded.lost_units:,}",
                verdict(bounded.exact),
            ],
            [
                "mapping (plain): moves exactly the lost target's units",
                f"{plain.moved:,} of {plain.lost_units:,}",
                verdict(plain.exact),
            ],
            [
                f"mapping (plain): max/mean load <= {MAX_IMBALANCE:.2f}",
                f"{plain.imbalance:.3f}",
                "not promised: chance (see Mapping)",
            ],
            [
                "fast and reference choose the same targets",
                f"{mismatches} mismatches",
                verdict(mismatches == 0),
            ],
            [f"constraint: fast >= {MIN_SPEEDUP:g}x reference at 10,000 targets", *ratio],
            [
                "constraint: fast and reference give the same booleans",
                f"{differing} mismatches",
                verdict(differing == 0),
            ],
            [
                "deploy check: every incompatible target has a reason",
                f"{check.without_reason} without one",
                verdict(check.without_reason == 0 and check.compatible_with_reason == 0),
            ],
            [
                "deploy check, plan and reference agree on the compatible targets",
                f"{check.disagreements} disagreements",
                verdict(check.disagreements == 0),
            ],
        ],
    )
    lines += [
        "",
        "The speed targets are judged on warm figures. Any correctness failure (a mismatch, "
        "a move that does not leave the lost target, a returning target that is not the "
        "only one to gain, the max_load run above 1.10, an incompatible target without a "
        "reason, or check, plan and reference disagreeing) makes the script exit 1. The "
        "issue's balance target is judged on the max_load run: plain mapping cannot "
        "promise it (see Mapping).",
    ]
    return lines


# -- command line --------------------------------------------------------------------------


def parse(argv: list[str]) -> Config:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a small run, for smoke tests")
    parser.add_argument("--write", type=Path, metavar="FILE", help="also write the report here")
    parser.add_argument("--reference-units", type=int, help="units the oracle places")
    parser.add_argument("--repeat", type=int, help="fast-engine runs to take the best of")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument(
        "--profile",
        action="store_true",
        help="print a cProfile of the fast engine at the largest size to stderr",
    )
    args = parser.parse_args(argv)
    if args.quick:
        sizes, units, reference, mapping, names, repeat = (1000,), 500, 50, 10_000, 3, 2
        constraint_sizes, check_targets = (2_000,), 1_000
    else:
        sizes, units, reference, mapping, names, repeat = (
            (1000, 10_000),
            10_000,
            200,
            100_000,
            20,
            5,
        )
        constraint_sizes, check_targets = (10_000, 100_000), 10_000
    return Config(
        sizes=sizes,
        units=units,
        reference_units=min(args.reference_units or reference, units),
        mapping_units=mapping,
        mapping_targets=100,
        mapping_names=names,
        scale_targets=0 if args.quick else 10_000,
        constraint_sizes=constraint_sizes,
        check_targets=check_targets,
        repeat=max(1, args.repeat or repeat),
        seed=args.seed,
        quick=args.quick,
        profile=args.profile,
        write=args.write,
    )


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    config = parse(argv)
    rng = np.random.default_rng(config.seed)
    names = tag_names(rng, VOCABULARY_SIZE)
    progress(f"generating {config.units:,} workloads")
    workloads, distinct = make_workloads(rng, names, config.units)
    allocations = [
        run_allocation(size, names, workloads, distinct, config) for size in config.sizes
    ]
    mappings = [run_mapping(config, None), run_mapping(config, MAPPING_MAX_LOAD)]
    scale = run_mapping_scale(config) if config.scale_targets else []
    constraints = run_constraints(config)
    check = run_check(config)
    report = render(config, allocations, mappings, scale, constraints, check, argv)
    print(report, end="")
    if config.write is not None:
        config.write.write_text(report)
        progress(f"wrote {config.write}")
    failed = (
        any(a.mismatches for a in allocations)
        or not all(m.exact for m in mappings)
        or not mappings[1].balanced
        or any(r.mismatches for r in constraints)
        or not check.ok
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
