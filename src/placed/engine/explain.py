"""Turns the per-filter masks into per-target reasons and a one-line summary.

Like kube-scheduler, each rejected target is charged to the first filter (in pipeline
order) that rejects it, so the counts in a summary add up to the rejected targets:
`0/7 targets available: 4 lack required tag datacenter1, 3 have forbidden tag network3`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from placed.engine.pipeline import CompiledRequest, Pipeline
from placed.engine.state import PlanState
from placed.policy.base import Reason


@dataclass(frozen=True, slots=True)
class Rejection:
    position: int
    reason: Reason


@dataclass(frozen=True, slots=True)
class Verdict:
    """One workload against one target, every failing filter listed (for `placed check`)."""

    target: str
    compatible: bool
    reasons: tuple[Reason, ...]
    score: float


def first_rejections(
    pipeline: Pipeline, request: CompiledRequest, state: PlanState
) -> tuple[int, list[Rejection]]:
    """(number of available targets, the first failing filter's reason per rejected one)."""
    masks = pipeline.masks(request, state)
    size = state.size
    if not masks or size == 0:
        return size, []
    stack = np.vstack(masks)
    keep = stack.all(axis=0)
    first_failing = np.argmin(stack, axis=0)  # index of the first False in each column
    rejections = [
        Rejection(
            int(position),
            pipeline.reason(request, int(first_failing[position]), int(position), state),
        )
        for position in np.flatnonzero(~keep)
    ]
    return int(keep.sum()), rejections


def summarize(total: int, available: int, rejections: list[Rejection]) -> str:
    head = f"{available}/{total} targets available"
    if total == 0:
        return f"{head}: the inventory has no targets"
    groups = Counter((r.reason.singular, r.reason.plural) for r in rejections)
    ordered = sorted(groups.items(), key=lambda item: (-item[1], item[0][1]))
    parts = [
        f"{count} {singular if count == 1 else plural}" for (singular, plural), count in ordered
    ]
    return f"{head}: {', '.join(parts)}" if parts else head


def filtered_counts(rejections: list[Rejection]) -> dict[str, int]:
    return dict(Counter(r.reason.filter for r in rejections))


def verdicts(pipeline: Pipeline, request: CompiledRequest, state: PlanState) -> list[Verdict]:
    masks = pipeline.masks(request, state)
    scores = pipeline.scores(request, state)
    result = []
    for position in range(state.size):
        # The per-target loop is fine here: `check` reports on every target by design.
        reasons = tuple(
            pipeline.reason(request, i, position, state)
            for i, mask in enumerate(masks)
            if not mask[position]
        )
        target_id = state.target_id(position)
        result.append(Verdict(target_id, not reasons, reasons, float(scores[position])))
    return result
