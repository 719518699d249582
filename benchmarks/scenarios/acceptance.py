"""Acceptance: the issues' targets judged on what the other scenarios measured. Speed
targets are reported, never enforced, since they depend on the machine; a correctness
failure makes the benchmark exit 1. Issue 8's loading goals read PASS or "not yet"."""

from __future__ import annotations

from dataclasses import dataclass

from harness import MAX_FLOORS, MAX_IMBALANCE, MIN_SPEEDUP, table, verdict
from scenarios.allocation import AllocationResult
from scenarios.check import CheckResult
from scenarios.constraints import ConstraintResult
from scenarios.loading import LoadingResult, acceptance_rows
from scenarios.mapping import MappingResult


@dataclass(frozen=True, slots=True)
class Acceptance:
    rows: list[list[str]]  # (target, measured, result)
    correct: bool  # every correctness check held; the speed targets do not count


def run(
    allocations: list[AllocationResult],
    mappings: list[MappingResult],
    constraints: list[ConstraintResult],
    check: CheckResult,
    loading: LoadingResult,
) -> Acceptance:
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
    rows = [
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
        # Issue 8's speed goals never make the benchmark exit 1 while the loader is being
        # rewritten (acceptance_rows says "not yet" rather than FAIL); a generated spec
        # that does not load is a correctness failure like the others.
        *acceptance_rows(loading),
    ]
    correct = not (
        mismatches
        or not all(m.exact for m in mappings)
        or not bounded.balanced
        or differing
        or not check.ok
        or not loading.correct
    )
    return Acceptance(rows, correct)


def section(acceptance: Acceptance) -> list[str]:
    lines = ["## Acceptance", ""]
    lines += table(["target", "measured", "result"], acceptance.rows)
    lines += [
        "",
        "The speed targets are judged on warm figures. Any correctness failure (a mismatch, "
        "a move that does not leave the lost target, a returning target that is not the "
        "only one to gain, the max_load run above 1.10, an incompatible target without a "
        "reason, check, plan and reference disagreeing, or a generated spec that does not "
        "load) makes the script exit 1. The issue's balance target is judged on the "
        "max_load run: plain mapping cannot promise it (see Mapping). Issue 8's loading, "
        'validate and rendering goals read PASS or "not yet" and do not change the exit '
        "status, speed being the machine's; the loading goals are judged on JSON specs, "
        "the files the issue timed (YAML is shown beside them: PyYAML's nodes make it "
        "several times slower).",
    ]
    return lines
