"""The Kubernetes shapes (issue 18): the cases kube-scheduler's scheduler_perf publishes
figures for, as native specs, at 5,000 hosts in 3 zones, and one at 100,000 hosts.

Each shape is a native spec document built in memory and read by the spec loader
(`load_spec_data`), so a shape that uses a key this build does not know (`spread`,
`near`, `avoid`) is reported as not supported instead of measured. For every shape the
fast engine plans all units (the best of a few runs, each from a fresh Planner), the
reference oracle and the fast engine plan the same prefix of the units as a spec of its
own and must choose the same target for each unit (a mismatch fails the run), and the
time per unit is divided by the scan floor at that many targets.

Run only this scenario with `benchmarks/run.py --only kubernetes`; `--quick` makes it
small, `--kubernetes-targets N` and `--kubernetes-large N` set its sizes,
`--kubernetes-budget SECONDS` bounds the large shape's plan, and `--kubernetes-only KEY`
runs one shape alone (`large`, `every-unit-different`: SHAPE_KEYS).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness import MAX_FLOORS, Config, progress, scan_floor, table
from placed.engine.planner import Placement, Planner
from placed.engine.reference import reference_plan
from placed.model import Spec
from placed.spec.errors import SpecError
from placed.spec.load import load_spec_data

ZONES = 3
HOSTS_PER_RACK = 40
VOCABULARY = 200  # tags hosts and workloads draw from
CPU_SIZES = (16, 32, 48, 64)
DISKS = ("ssd", "hdd", "nvme")
GENERATIONS = 5
# The keys issue 18 adds to a workload (branch `spread`); main's loader refuses them.
NEW_KEYS = ("spread", "near", "avoid")
TOP_FRAMES = 10

Document = dict[str, Any]
Builder = Callable[[np.random.Generator, "World"], Document]


@dataclass(frozen=True, slots=True)
class World:
    """What every shape's document shares: the inventory and, for tenants, the domain
    tree, dedications and offerings."""

    targets: int
    units: int
    inventory: list[dict[str, Any]]
    racks: list[str]
    tenancy: dict[str, Any]
    accounts: list[str]
    dedications: list[dict[str, str]]
    offerings: list[dict[str, Any]]
    tags: list[str]


@dataclass(frozen=True, slots=True)
class Shape:
    name: str
    kubernetes: str  # the scheduler_perf case and its published threshold, or "-"
    goal: float | None  # issue 18's units/s goal on this machine
    uses: tuple[str, ...]  # the new keys the shape needs
    build: Builder
    large: bool = False  # the 100,000-target shape
    key: str = ""  # what `--kubernetes-only` calls it


@dataclass(frozen=True, slots=True)
class Frame:
    function: str
    own: float  # seconds sampled in the function itself
    total: float  # and in it with its callees (each nested call counted once)


@dataclass(frozen=True, slots=True)
class ShapeRun:
    shape: Shape
    targets: int
    units: int
    workloads: int
    # None: measured. Otherwise why not: "not supported by this build: ..." (a load error
    # naming only the new keys) or "failed: ..." (anything else, which fails the run).
    skipped: str | None
    placed: int = 0
    build_seconds: float = 0.0
    plan_seconds: float = 0.0
    cpu_seconds: float = 0.0
    floor_seconds: float = 0.0
    reference_units: int = 0
    reference_seconds: float = 0.0
    mismatches: int = 0
    first_mismatch: str = ""
    frames: tuple[Frame, ...] = ()
    profiled_seconds: float = 0.0
    # The units plan_seconds covers: all of them, or those placed before the time budget
    # stopped the plan (the large shape only).
    timed_units: int = 0
    budget: float | None = None  # the budget that stopped the plan, if one did

    @property
    def measured(self) -> bool:
        return self.skipped is None

    @property
    def failed(self) -> bool:
        return (self.skipped is not None and self.skipped.startswith("failed")) or (
            self.mismatches > 0
        )

    @property
    def rate(self) -> float:
        return self.timed_units / self.plan_seconds if self.plan_seconds else 0.0

    @property
    def floors(self) -> float:
        if not self.timed_units or not self.floor_seconds:
            return 0.0
        return (self.plan_seconds / self.timed_units) / self.floor_seconds


@dataclass(frozen=True, slots=True)
class KubernetesRun:
    shapes: list[ShapeRun]
    quick: bool
    repeat: int
    budget: float  # seconds; infinite: no budget

    @property
    def budget_text(self) -> str:
        if self.budget == float("inf"):
            return "the large shape runs once, to the end"
        return (
            f"the large shape runs once, and its plan stops once it has taken "
            f"{self.budget:g} s (`--kubernetes-budget`), its rate then being that of the "
            "units placed by then"
        )

    @property
    def ok(self) -> bool:
        return not any(s.failed for s in self.shapes)


# -- the world ---------------------------------------------------------------------------


def make_world(rng: np.random.Generator, targets: int, units: int) -> World:
    """`targets` hosts in racks of 40 in 3 zones, each host with capacity, properties
    (disk, gen, gpu, inherited zone and rack) and 3-8 tags; a domain tree of 4 top
    domains with 2 subdomains each and 2 accounts per domain; an eighth of the racks
    dedicated to top domains (never to the last one, whose dedicated VMs then take hosts
    by implicit dedication) and a twentieth of the other racks' hosts to accounts."""
    tags = [f"t{i}" for i in range(VOCABULARY)]
    weights = 1.0 / np.arange(1, VOCABULARY + 1)
    weights /= weights.sum()
    cpu = rng.choice(CPU_SIZES, size=targets)
    disk = rng.choice(len(DISKS), size=targets, p=[0.5, 0.3, 0.2])
    gen = rng.integers(1, GENERATIONS + 1, size=targets)
    gpu = rng.random(targets) < 0.2
    tag_counts = rng.integers(3, 9, size=targets)
    per_zone = -(-targets // ZONES)
    inventory: list[dict[str, Any]] = []
    racks: list[str] = []
    hosts_in: dict[str, list[str]] = {}
    host = 0
    for z in range(ZONES):
        zone_id = f"z{z}"
        zone: dict[str, Any] = {
            "id": zone_id,
            "kind": "zone",
            "properties": {"zone": zone_id},
            "children": [],
        }
        in_zone = min(per_zone, targets - host)
        for r in range(-(-in_zone // HOSTS_PER_RACK)):
            rack_id = f"{zone_id}r{r}"
            racks.append(rack_id)
            hosts: list[dict[str, Any]] = []
            for _ in range(min(HOSTS_PER_RACK, targets - host)):
                hosts.append(
                    {
                        "id": f"h{host}",
                        "kind": "host",
                        "capacity": {"cpu": int(cpu[host]), "memory": int(cpu[host]) * 4},
                        "properties": {
                            "disk": DISKS[int(disk[host])],
                            "gen": int(gen[host]),
                            "gpu": bool(gpu[host]),
                        },
                        "tags": rng.choice(
                            tags, size=int(tag_counts[host]), replace=False, p=weights
                        ).tolist(),
                    }
                )
                host += 1
            hosts_in[rack_id] = [h["id"] for h in hosts]
            zone["children"].append(
                {"id": rack_id, "kind": "rack", "properties": {"rack": rack_id}, "children": hosts}
            )
        inventory.append(zone)

    domains: dict[str, Any] = {}
    accounts: dict[str, str] = {}
    tops = [f"D{a}" for a in range(4)]
    for top in tops:
        children = {}
        for b in range(2):
            sub = f"{top}.{b}"
            children[sub] = {"accounts": [f"{sub}a0", f"{sub}a1"]}
            accounts.update({f"{sub}a0": sub, f"{sub}a1": sub})
        domains[top] = {"accounts": [f"{top}a0", f"{top}a1"], "children": children}
        accounts.update({f"{top}a0": top, f"{top}a1": top})
    dedications: list[dict[str, str]] = []
    dedicated_racks = set(
        rng.choice(len(racks), size=max(1, len(racks) // 8), replace=False).tolist()
    )
    for index in sorted(dedicated_racks):
        dedications.append({"resource": racks[index], "domain": str(rng.choice(tops[:-1]))})
    names = list(accounts)
    for index, rack in enumerate(racks):
        if index in dedicated_racks:
            continue
        for h in hosts_in[rack]:
            if rng.random() < 0.05:
                account = str(rng.choice(names))
                dedications.append({"resource": h, "domain": accounts[account], "account": account})
    offerings = [
        {"name": "small", "cpu": 1, "memory": 2},
        {"name": "large", "cpu": 4, "memory": 8},
        {"name": "small-dedicated", "cpu": 1, "memory": 2, "dedicated": True},
        {"name": "large-dedicated", "cpu": 4, "memory": 8, "dedicated": True},
    ]
    return World(
        targets=targets,
        units=units,
        inventory=inventory,
        racks=racks,
        tenancy={"domains": domains},
        accounts=names,
        dedications=dedications,
        offerings=offerings,
        tags=tags,
    )


def _document(world: World, name: str, workloads: list[Document], tenants: bool) -> Document:
    document: Document = {"name": name, "inventory": world.inventory, "workloads": workloads}
    if tenants:
        document["tenancy"] = world.tenancy
        document["dedications"] = world.dedications
        document["offerings"] = world.offerings
        document["settings"] = {"implicit_dedication": True}
    return document


def _split(total: int, parts: int) -> list[int]:
    """`total` units in `parts` workloads, as even as can be (none empty)."""
    if total <= 0:
        return []
    parts = max(1, min(parts, total))
    return [total // parts + (1 if i < total % parts else 0) for i in range(parts)]


def _deployment(name: str, units: int, **more: Any) -> Document:
    return {"name": name, "units": units, "resources": {"cpu": 1, "memory": 2}, **more}


def _own_constraint(rng: np.random.Generator, world: World) -> str:
    """A constraint of three terms that few other units share (the rack term alone has
    one value per rack)."""
    disk = DISKS[int(rng.integers(len(DISKS)))]
    return (
        f'gen >= {int(rng.integers(1, GENERATIONS))} AND disk != "{disk}" AND '
        f'rack != "{world.racks[int(rng.integers(len(world.racks)))]}"'
    )


def _tenant_unit(rng: np.random.Generator, world: World, name: str, units: int = 1) -> Document:
    """One workload of its own: tags, a constraint, an account and an offering (30% of
    them dedicated)."""
    offering = int(rng.integers(2)) + (2 if rng.random() < 0.3 else 0)
    return {
        "name": name,
        "units": units,
        "tags": rng.choice(world.tags, size=int(rng.integers(3, 9)), replace=False).tolist(),
        "constraints": _own_constraint(rng, world),
        "account": str(rng.choice(world.accounts)),
        "offering": world.offerings[offering]["name"],
    }


# -- the shapes ----------------------------------------------------------------------------


def basic(rng: np.random.Generator, world: World) -> Document:
    """Deployments of 100 units asking for cpu and memory, nothing else."""
    sizes = _split(world.units, max(1, world.units // 100))
    return _document(
        world, "basic", [_deployment(f"deploy{i}", n) for i, n in enumerate(sizes)], False
    )


def node_affinity(rng: np.random.Generator, world: World) -> Document:
    """The same deployments, each with one constraint on the zone property (as
    scheduler_perf's pod-with-node-affinity asks for a zone label)."""
    sizes = _split(world.units, max(1, world.units // 100))
    workloads = [
        _deployment(f"deploy{i}", n, constraints=f'zone in "z{i % ZONES},z{(i + 1) % ZONES}"')
        for i, n in enumerate(sizes)
    ]
    return _document(world, "node-affinity", workloads, False)


def every_unit_different(rng: np.random.Generator, world: World) -> Document:
    """Each unit a workload of its own with its own tags, constraint, account and
    offering."""
    workloads = [_tenant_unit(rng, world, f"vm{i}") for i in range(world.units)]
    return _document(world, "every-unit-different", workloads, True)


def spread(rng: np.random.Generator, world: World) -> Document:
    """Deployments of 500 units, each spread over the zones with max skew 1 (hard)."""
    sizes = _split(world.units, max(1, world.units // 500))
    workloads = [
        _deployment(f"spread{i}", n, spread={"over": "zone", "max_skew": 1})
        for i, n in enumerate(sizes)
    ]
    return _document(world, "spread", workloads, False)


def anti_affinity(rng: np.random.Generator, world: World) -> Document:
    """Deployments of 1,000 units, each avoiding itself per host (required)."""
    sizes = _split(world.units, max(1, world.units // 1000))
    workloads = [
        _deployment(f"anti{i}", n, avoid={"workload": f"anti{i}", "level": "target"})
        for i, n in enumerate(sizes)
    ]
    return _document(world, "anti-affinity", workloads, False)


def affinity(rng: np.random.Generator, world: World) -> Document:
    """Ten databases of one unit, each followed by a deployment that must be in a zone
    holding a unit of its database (required)."""
    pairs = max(1, min(10, world.units // 2))
    workloads: list[Document] = []
    for i, n in enumerate(_split(world.units - pairs, pairs)):
        workloads.append(_deployment(f"db{i}", 1))
        workloads.append(_deployment(f"web{i}", n, near={"workload": f"db{i}", "level": "zone"}))
    return _document(world, "affinity", workloads, False)


def mixed(rng: np.random.Generator, world: World) -> Document:
    """A sixth of the units from each of the other shapes, in workloads of about 10
    units taken from each kind in turn (so that the reference's prefix sample holds
    every kind)."""
    share = _split(world.units, 6)
    kinds: list[list[list[Document]]] = [
        [[_deployment(f"deploy{i}", n)] for i, n in enumerate(_split(share[0], share[0] // 10))],
        [
            [_deployment(f"zonal{i}", n, constraints=f'zone in "z{i % ZONES}"')]
            for i, n in enumerate(_split(share[1], share[1] // 10))
        ],
        [[_tenant_unit(rng, world, f"vm{i}")] for i in range(share[2])],
        [
            [_deployment(f"spread{i}", n, spread={"over": "zone", "max_skew": 1})]
            for i, n in enumerate(_split(share[3], share[3] // 10))
        ],
        [
            [_deployment(f"anti{i}", n, avoid={"workload": f"anti{i}", "level": "target"})]
            for i, n in enumerate(_split(share[4], share[4] // 10))
        ],
        [
            [
                _deployment(f"db{i}", 1),
                _deployment(f"web{i}", n, near={"workload": f"db{i}", "level": "zone"}),
            ]
            for i, n in enumerate(_split(share[5] - share[5] // 11, share[5] // 11))
        ],
    ]
    workloads: list[Document] = []
    for turn in range(max(len(kind) for kind in kinds)):
        for kind in kinds:
            if turn < len(kind):
                workloads += kind[turn]
    return _document(world, "mixed", workloads, True)


def large(rng: np.random.Generator, world: World) -> Document:
    """Workloads of 1-19 units (10 on average), each with its own tags, constraint,
    account and offering."""
    workloads: list[Document] = []
    left, i = world.units, 0
    while left > 0:
        n = min(left, int(rng.integers(1, 20)))
        workloads.append(_tenant_unit(rng, world, f"app{i}", n))
        left -= n
        i += 1
    return _document(world, "large", workloads, True)


SHAPES = (
    Shape("basic", "SchedulingBasic 5000Nodes_50000Pods: 810", 40_000, (), basic, key="basic"),
    Shape(
        "node affinity",
        "SchedulingNodeAffinity 5000Nodes_10000Pods: 220",
        20_000,
        (),
        node_affinity,
        key="node-affinity",
    ),
    Shape(
        "every unit different, dedication",
        "-",
        10_000,
        (),
        every_unit_different,
        key="every-unit-different",
    ),
    Shape(
        "spread over zones, max skew 1",
        "TopologySpreading 5000Nodes_5000Pods: 460",
        5_000,
        ("spread",),
        spread,
        key="spread",
    ),
    Shape(
        "required anti-affinity per host",
        "SchedulingPodAntiAffinity 5000Nodes_2000Pods: 60",
        5_000,
        ("avoid",),
        anti_affinity,
        key="anti-affinity",
    ),
    Shape(
        "required affinity to another workload, zone",
        "SchedulingPodAffinity 5000Nodes_5000Pods: 35",
        2_000,
        ("near",),
        affinity,
        key="affinity",
    ),
    Shape("mixed", "-", None, NEW_KEYS, mixed, key="mixed"),
    Shape(
        "large: constraints, tags, dedication",
        "-",
        5_000,
        (),
        large,
        large=True,
        key="large",
    ),
)

SHAPE_KEYS = tuple(shape.key for shape in SHAPES)

# scheduler_perf's workloads are all units of the same kind; the shapes' units each take
# 1 cpu and 2 memory except the tenants' (1 or 4 cpu).


# -- measuring ---------------------------------------------------------------------------


def _unsupported(error: SpecError, uses: tuple[str, ...]) -> bool:
    """A load error that only refuses keys this build does not know yet."""
    return bool(uses) and all(
        any(p.message.startswith(f"unknown key '{key}'") for key in uses) for p in error.problems
    )


def _prefix(spec: Spec, units: int) -> Spec:
    """The first `units` units, as a spec of its own (the last workload cut short)."""
    kept = []
    left = units
    for workload in spec.workloads:
        if left <= 0:
            break
        cut = workload if workload.units <= left else dataclasses.replace(workload, units=left)
        kept.append(cut)
        left -= workload.units
    return dataclasses.replace(spec, workloads=tuple(kept), name=f"{spec.name}-prefix")


class _OutOfTime(Exception):
    """Raised from plan()'s progress callback when the time budget is spent."""


@dataclass(frozen=True, slots=True)
class _Timing:
    build_seconds: float  # the best Planner(spec)
    plan_seconds: float  # the best plan(), wall clock
    cpu_seconds: float  # the least process time of a plan()
    timed_units: int  # the units plan_seconds covers
    placed: int
    stopped: bool  # the budget stopped the plan: placed and timed_units are partial


def _time_plans(spec: Spec, repeat: int, budget: float = float("inf")) -> _Timing:
    """`repeat` plans, each from a fresh Planner (its per-workload cache must not carry
    over), timed by the wall clock and by this process's CPU time: on a machine shared
    with other work the CPU time moves less. A plan that has taken more than `budget`
    seconds is stopped at its next progress report (after each workload and every 256
    units of one), and no further plan is made."""
    builds: list[float] = []
    plans: list[float] = []
    cpus: list[float] = []
    timed, placed, stopped = 0, 0, False
    for _ in range(repeat):
        start = time.perf_counter()
        planner = Planner(spec)
        built = time.perf_counter()
        cpu = time.process_time()
        reached = [0, 0.0, 0.0]  # units done, wall and CPU seconds, at the last report

        def report(done: int, total: int) -> None:
            elapsed = time.perf_counter() - built  # noqa: B023 - called within this turn
            reached[:] = [done, elapsed, time.process_time() - cpu]  # noqa: B023
            if elapsed > budget and done < total:
                raise _OutOfTime

        builds.append(built - start)
        try:
            result = planner.plan(progress=report)
        except _OutOfTime:
            timed, placed, stopped = int(reached[0]), 0, True
            plans.append(reached[1])
            cpus.append(reached[2])
            break
        plans.append(time.perf_counter() - built)
        cpus.append(time.process_time() - cpu)
        timed, placed = sum(w.units for w in spec.workloads), len(result.placements)
    return _Timing(min(builds), min(plans), min(cpus), timed, placed, stopped)


def run_shape(
    shape: Shape,
    world: World,
    floor: float,
    config: Config,
    sample: int,
    repeat: int,
    budget: float | None = None,
) -> ShapeRun:
    rng = np.random.default_rng([config.seed, 18, SHAPES.index(shape)])
    document = shape.build(rng, world)
    workloads = len(document["workloads"])
    units = sum(int(w.get("units", 1)) for w in document["workloads"])
    head = f"kubernetes: {shape.name} ({world.targets:,} targets, {units:,} units)"
    try:
        spec = load_spec_data(document, f"{document['name']}.yaml")
    except SpecError as error:
        if _unsupported(error, shape.uses):
            progress(f"{head}: not supported by this build")
            keys = ", ".join(f"`{k}`" for k in shape.uses)
            return ShapeRun(
                shape, world.targets, units, workloads, f"not supported by this build ({keys})"
            )
        progress(f"{head}: FAILED to load:\n{error}")
        first = error.problems[0].message if error.problems else str(error)
        return ShapeRun(shape, world.targets, units, workloads, f"failed: load: {first}")
    try:
        if budget is None:
            progress(f"{head}: fast engine x{repeat}")
            timing = _time_plans(spec, repeat)
        else:
            progress(f"{head}: fast engine, once, within {budget:g} s")
            timing = _time_plans(spec, 1, budget)
        prefix = _prefix(spec, sample)
        progress(f"{head}: reference oracle, {sample:,} units")
        start = time.perf_counter()
        expected = reference_plan(prefix)
        reference_seconds = time.perf_counter() - start
        actual = [
            (o.unit, o.target if isinstance(o, Placement) else None)
            for o in Planner(prefix).plan().outcomes
        ]
    except Exception as error:  # a shape that crashes is reported (and fails the run)
        progress(f"{head}: FAILED: {error!r}")
        return ShapeRun(
            shape, world.targets, units, workloads, f"failed: {type(error).__name__}: {error}"
        )
    # A missing or extra outcome counts as a mismatch too.
    pairs = list(zip(expected, actual, strict=False))
    wrong = [(o.unit, o.target, got) for o, got in pairs if (o.unit, o.target) != got]
    mismatches = len(wrong) + abs(len(expected) - len(actual))
    first = ""
    if wrong:
        unit, want, (got_unit, got) = wrong[0]
        first = f"reference put {unit} on {want}, the fast engine {got_unit} on {got}"
        progress(f"{head}: MISMATCH: {mismatches} of {len(expected)} units; first: {first}")
    elif mismatches:
        first = f"reference gave {len(expected)} outcomes, the fast engine {len(actual)}"
        progress(f"{head}: MISMATCH: {first}")
    frames: tuple[Frame, ...] = ()
    profiled = 0.0
    if config.profile:
        frames, profiled = profile(spec, head, budget)
    return ShapeRun(
        shape,
        world.targets,
        units,
        workloads,
        None,
        placed=timing.placed,
        build_seconds=timing.build_seconds,
        plan_seconds=timing.plan_seconds,
        cpu_seconds=timing.cpu_seconds,
        floor_seconds=floor,
        reference_units=len(expected),
        reference_seconds=reference_seconds,
        mismatches=mismatches,
        first_mismatch=first,
        frames=frames,
        profiled_seconds=profiled,
        timed_units=timing.timed_units,
        budget=budget if timing.stopped else None,
    )


def profile(spec: Spec, head: str, budget: float | None = None) -> tuple[tuple[Frame, ...], float]:
    """One `plan()` of a fresh Planner (stopped at `budget` seconds, if given) under
    pyinstrument: its tree to stderr, and the functions with the most time of their own."""
    # Imported here: pyinstrument is a dev dependency that only --profile needs.
    from pyinstrument import Profiler

    progress(f"{head}: pyinstrument")
    planner = Planner(spec)
    started = time.perf_counter()

    def within(done: int, total: int) -> None:
        if budget is not None and time.perf_counter() - started > budget and done < total:
            raise _OutOfTime

    profiler = Profiler(interval=0.0005)
    profiler.start()
    try:
        planner.plan(progress=within)
    except _OutOfTime:
        pass
    finally:
        profiler.stop()
    progress(profiler.output_text(unicode=False, color=False, show_all=False))
    session = profiler.last_session
    assert session is not None
    root = session.root_frame()
    if root is None:
        return (), 0.0
    own: dict[str, float] = {}
    total: dict[str, float] = {}
    stack: list[tuple[Any, frozenset[str]]] = [(root, frozenset())]
    while stack:
        frame, above = stack.pop()
        key = f"{frame.file_path_short}:{frame.line_no}({frame.function})"
        if not frame.is_synthetic:
            own[key] = own.get(key, 0.0) + frame.total_self_time
            if key not in above:  # a recursive call is already in its caller's total
                total[key] = total.get(key, 0.0) + frame.time
        stack.extend((child, above | {key}) for child in frame.children)
    ranked = sorted(own, key=lambda k: -own[k])[:TOP_FRAMES]
    return tuple(Frame(k, own[k], total[k]) for k in ranked), float(root.time)


def run(config: Config) -> KubernetesRun:
    quick = config.quick
    targets = config.kubernetes_targets or (500 if quick else 5_000)
    large_size = config.kubernetes_large
    if large_size is None:
        large_size = 2_000 if quick else 100_000
    budget = config.kubernetes_budget if config.kubernetes_budget is not None else 60.0
    sample = min(config.reference_units, 20 if quick else 100)
    repeat = min(config.repeat, 2 if quick else 3)
    rng = np.random.default_rng([config.seed, 18])
    results: list[ShapeRun] = []
    only = config.kubernetes_only
    # The same world and the same draws whether one shape runs or all: a shape's figures
    # do not depend on which others ran (the large world is drawn after the small one).
    progress(f"kubernetes: generating {targets:,} hosts")
    world = make_world(rng, targets, targets)
    floor = scan_floor(targets, rng)
    for shape in SHAPES:
        if shape.large or (only is not None and shape.key != only):
            continue
        # Deployments of capacity alone are cheap per unit: twice as many units as hosts.
        units = 2 * targets if shape.name in ("basic", "node affinity") else targets
        sized = dataclasses.replace(world, units=units)
        results.append(run_shape(shape, sized, floor, config, sample, repeat))
    if large_size > 0 and only in (None, "large"):
        progress(f"kubernetes: generating {large_size:,} hosts")
        big = make_world(rng, large_size, large_size)
        big_floor = scan_floor(large_size, rng)
        shape = next(s for s in SHAPES if s.large)
        limit = budget or float("inf")
        # The reference takes seconds per unit at 100,000 targets: a small sample.
        results.append(run_shape(shape, big, big_floor, config, min(sample, 5), 1, limit))
    return KubernetesRun(results, quick, repeat, budget or float("inf"))


# -- reporting ---------------------------------------------------------------------------


def _goal(found: ShapeRun, quick: bool) -> str:
    """Issue 18's goal for the shape on this machine: a rate (if it names one) and at most
    MAX_FLOORS scan floors per unit (every shape). Reported, never enforced."""
    goal = found.shape.goal
    text = f"<= {MAX_FLOORS:.0f} floors"
    if goal is not None:
        text = f">= {goal:,.0f}/s, {text}"
    if not found.measured:
        return f"{text}: not measured"
    if quick:
        return f"{text}: not judged (quick)"
    met = (goal is None or found.rate >= goal) and found.floors <= MAX_FLOORS
    return f"{text}: {'PASS' if met else 'not yet'}"


def section(found: KubernetesRun) -> list[str]:
    lines = ["## Kubernetes shapes (issue 18)", ""]
    rows = []
    for s in found.shapes:
        if not s.measured:
            rows.append(
                [
                    s.shape.name,
                    f"{s.targets:,}",
                    f"{s.units:,} in {s.workloads:,}",
                    f"**{s.skipped}**" if s.failed else str(s.skipped),
                    "-",
                    "-",
                    "-",
                    "-",
                    "-",
                    "-",
                    "-",
                    s.shape.kubernetes,
                    _goal(s, found.quick),
                ]
            )
            continue
        rows.append(
            [
                s.shape.name,
                f"{s.targets:,}",
                f"{s.units:,} in {s.workloads:,}",
                f"{s.placed:,}"
                if s.budget is None
                else f"stopped at the {s.budget:g} s budget after {s.timed_units:,} units",
                f"{s.build_seconds * 1e3:,.0f} ms",
                f"{s.plan_seconds:.2f} s",
                f"{s.cpu_seconds:.2f} s",
                f"{s.rate:,.0f}",
                f"{s.floors:,.0f}",
                f"{s.reference_units:,} in {s.reference_seconds:.2f} s",
                f"**{s.mismatches} MISMATCHES**" if s.mismatches else "0",
                s.shape.kubernetes,
                _goal(s, found.quick),
            ]
        )
    lines += table(
        [
            "shape",
            "targets",
            "units in workloads",
            "placed",
            "index build",
            "plan warm",
            "plan CPU",
            "units/s",
            "scan floors per unit",
            "reference sample",
            "mismatches",
            "kube-scheduler: scheduler_perf case, pods/s (published, other hardware)",
            "issue 18 goal",
        ],
        rows,
    )
    wrong = [s for s in found.shapes if s.mismatches]
    if wrong:
        lines += [""]
        lines += [
            f"**MISMATCH in {s.shape.name}: {s.mismatches} of {s.reference_units} sampled "
            f"units; first: {s.first_mismatch}.**"
            for s in wrong
        ]
    floors = sorted({(s.targets, s.floor_seconds) for s in found.shapes if s.measured})
    floor_text = ", ".join(f"{f * 1e6:.2f} µs at {t:,} targets" for t, f in floors)
    lines += [
        "",
        f"The hosts are targets, in racks of {HOSTS_PER_RACK} in {ZONES} zones, with "
        f"{'/'.join(map(str, CPU_SIZES))} cpu and four times as much memory, properties "
        "(disk, gen, gpu, and zone and rack inherited from their location) and 3-8 tags "
        f"(Zipf 1 over {VOCABULARY}). Deployments' units ask for 1 cpu and 2 memory. "
        "basic: deployments of 100 units. node affinity: the same, each with a constraint "
        '`zone in "zA,zB"`. every unit different: each unit a workload with its own 3-8 '
        'tags, its own constraint (`gen >= N AND disk != "D" AND rack != "R"`), an account '
        "of a 4x2 domain tree and an offering of 1 or 4 cpu, 30% of them dedicated (an "
        "eighth of the racks are dedicated to domains, a twentieth of the other hosts to "
        "accounts, implicit dedication on). spread: deployments of 500 units with `spread: "
        "{over: zone, max_skew: 1}`. anti-affinity: deployments of 1,000 units with "
        "`avoid: {workload: itself, level: target}`. affinity: 10 databases of one unit, "
        "each followed by a deployment with `near: {workload: its database, level: zone}`. "
        "mixed: a sixth of the units from each. The 100,000-target shape: workloads of 1-19 "
        "units, each with its own tags, constraint, account and offering.",
        "",
        "Index build is `Planner(spec)`; plan warm is the best `plan()` of "
        f"{found.repeat} runs, each from a fresh Planner, and plan CPU the least process "
        "time of one (on a machine shared with other work, the wall clock moves more); "
        f"{found.budget_text}. Units/s and scan floors are of the wall clock. Scan floors "
        "per unit: plan time per unit over the scan floor at that many targets "
        f"({floor_text or 'none measured'}). The reference "
        "sample: `reference_plan` and the fast engine plan the first units as a spec of "
        "their own and must choose the same target for every one; a mismatch fails the "
        "run. A shape whose keys this build's loader refuses is not supported, not "
        "measured.",
        "",
        "kube-scheduler's figures are the `threshold:` of scheduler_perf's performance "
        "workloads (kubernetes/kubernetes test/integration/scheduler_perf, "
        "misc/, affinity/ and topology_spreading/performance-config.yaml): the least "
        "average SchedulingThroughput, in pods/s, below which its CI job fails. They are "
        "published figures for a whole scheduler with an API server, on other hardware, "
        "after 1,000-5,000 pods already placed; they are beside ours, not measured here.",
        "",
    ]
    for s in found.shapes:
        if s.frames:
            lines += [f"### Where {s.shape.name} spends its time (`--profile`, pyinstrument)", ""]
            lines += table(
                ["function", "own time", "own share", "with callees"],
                [
                    [
                        f"`{f.function}`",
                        f"{f.own:.3f} s",
                        f"{f.own / s.profiled_seconds:.1%}",
                        f"{f.total / s.profiled_seconds:.1%}",
                    ]
                    for f in s.frames
                ],
            )
            lines += [
                "",
                "One `plan()` (the index built before it) under pyinstrument, sampling every "
                f"0.5 ms, {s.profiled_seconds:.2f} s with the profiler on"
                + ("" if s.budget is None else f", stopped at the {s.budget:g} s budget")
                + "; the full tree goes to stderr.",
                "",
            ]
    return lines
