"""What every scenario shares: the run's configuration, the acceptance targets, timing and
profiling helpers, and the pieces the report is rendered from."""

from __future__ import annotations

import cProfile
import io
import os
import platform
import pstats
import resource
import sys
import time
import timeit
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import placed
from placed.engine.planner import Placement, Planner
from placed.model import Spec

SEED = 20240601

# Acceptance targets from the issue.
MIN_SPEEDUP = 100.0
MAX_FLOORS = 100.0
MAX_IMBALANCE = 1.10
# The bounded mapping run asks for the acceptance bound itself.
MAPPING_MAX_LOAD = MAX_IMBALANCE


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
    # The Kubernetes shapes' sizes (None: the scenario's own for --quick or a full run):
    # the targets of the 5,000-target shapes, and the targets and units of the large one
    # (0 leaves it out).
    kubernetes_targets: int | None = None
    kubernetes_large: int | None = None
    kubernetes_budget: float | None = None  # seconds the large shape's plan may take
    kubernetes_only: str | None = None  # the key of the one Kubernetes shape to run
    only: str | None = None  # run this scenario alone


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


def progress(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


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


def best_of(function: Callable[[], object], repeat: int, number: int = 1) -> float:
    """Seconds for one call: the best of `repeat` timings of `number` calls each."""
    return min(timeit.Timer(function).repeat(repeat=repeat, number=number)) / number


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
    # Paths are shown from the root of the tree `placed` was imported from (src/placed/...),
    # which is not this checkout when compare.py points PYTHONPATH at another one.
    root = str(Path(placed.__file__).resolve().parents[2]) + "/"
    return [
        HotSpot(
            f"{file.replace(root, '')}:{line}({name})" if line else name,
            int(row[1]),  # all calls, recursive ones included
            float(row[2]),
            float(row[2]) / total,
        )
        for (file, line, name), row in ranked
    ]


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


def microseconds(seconds: float) -> str:
    value = seconds * 1e6
    return f"{value:,.0f} µs" if value >= 100 else f"{value:.1f} µs"


def hot_spot_table(spots: list[HotSpot]) -> list[str]:
    return table(
        ["function", "calls", "own time", "share"],
        [
            [f"`{h.function}`", f"{h.calls:,}", f"{h.seconds:.3f} s", f"{h.share:.1%}"]
            for h in spots
        ],
    )
