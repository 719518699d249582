"""The mapping scenario's units onto 10,000 targets (plain, max_load 1.1 and 1), once
each: what the cap costs when loads are small. Full runs only."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass

from harness import MAPPING_MAX_LOAD, Config, progress, table
from inventories import make_mapping_spec
from placed.engine.planner import Planner


@dataclass(frozen=True, slots=True)
class ScaleResult:
    label: str
    units: int
    targets: int
    plan_seconds: float
    imbalance: float
    off_first_choice: int


def run(config: Config) -> list[ScaleResult]:
    """One run per mode; none, and so no section, when `config.scale_targets` is 0 (quick)."""
    if not config.scale_targets:
        return []
    results: list[ScaleResult] = []
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


def section(results: list[ScaleResult]) -> list[str]:
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
