"""Allocation, the fast engine against the reference oracle, and the scan floor.

* allocation: 10,000 single-unit workloads, each with its own tag set, against 1,000 and
  10,000 targets. Every unit is a different workload, so nothing the planner compiles for
  one unit is reused by the next: this is the engine's worst case, not its cached case.
* reference: the pure-Python oracle on a prefix of the same workloads, and a check that
  the fast engine picks the same target for every unit of that prefix.
* scan floor: one numpy comparison over one float64 column of all targets. A placement
  must touch every target at least once, so this is the least one can cost; dividing by
  it gives a machine-independent figure.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from harness import (
    Config,
    HotSpot,
    hot_spot_table,
    profile_plan,
    progress,
    scan_floor,
    table,
    time_fast,
)
from inventories import VOCABULARY_SIZE, make_inventory, make_workloads, tag_names
from placed.engine.reference import reference_plan
from placed.model import Settings, Spec, Workload


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


def run(config: Config) -> list[AllocationResult]:
    """One result per size in `config.sizes`, all planning the same workloads."""
    rng = np.random.default_rng(config.seed)
    names = tag_names(rng, VOCABULARY_SIZE)
    progress(f"generating {config.units:,} workloads")
    workloads, distinct = make_workloads(rng, names, config.units)
    return [run_size(size, names, workloads, distinct, config) for size in config.sizes]


def run_size(
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


def section(allocations: list[AllocationResult]) -> list[str]:
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
