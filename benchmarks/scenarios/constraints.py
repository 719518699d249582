"""Constraint evaluation (seed 002): one six-term Open Horizon constraint over the typed
properties of 10,000 and 100,000 targets, on property columns (the fast path) and one
property set at a time (the reference), which must give the same booleans."""

from __future__ import annotations

import functools
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from harness import Config, best_of, microseconds, progress, scan_floor, table
from inventories import (
    ARCH_WEIGHTS,
    ARCHES,
    CONSTRAINT,
    FEATURES,
    GPU_AS_TEXT,
    GPU_TRUE,
    NODE_CPUS,
    PRESENT,
    PURPOSE_WEIGHTS,
    PURPOSES,
    ZONES,
    constraint_properties,
    make_edge_nodes,
)
from placed.model import Property
from placed.policy.expressions import All, parse_constraint
from placed.policy.expressions import parse as parse_expression
from placed.policy.expressions.columns import PropertyColumns
from placed.policy.expressions.evaluate import satisfied


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


def run(config: Config) -> list[ConstraintResult]:
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
            best_of(functools.partial(columns.holds, term), 5, number),
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


def shares(names: Sequence[str], weights: Sequence[float]) -> str:
    return ", ".join(f"{name} {weight:.0%}" for name, weight in zip(names, weights, strict=True))


def section(results: list[ConstraintResult]) -> list[str]:
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
