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
from placed.policy.base import Reason, TargetState


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
    pipeline: Pipeline, request: CompiledRequest, state: TargetState
) -> tuple[int, list[Rejection]]:
    """(number of available targets, the first failing filter's reason per rejected one)."""
    masks = pipeline.masks(request, state)
    size = len(pipeline.index)
    if not masks or size == 0:
        return size, []
    stack = np.vstack(masks)
    keep = stack.all(axis=0)
    first_failing = np.argmin(stack, axis=0)  # index of the first False in each column
    workload, targets = request.workload, pipeline.index.targets
    rejections = [
        Rejection(
            int(position),
            pipeline.filters[first_failing[position]].reason(
                workload, targets[position], int(position), state
            ),
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


def verdicts(pipeline: Pipeline, request: CompiledRequest, state: TargetState) -> list[Verdict]:
    masks = pipeline.masks(request, state)
    workload, index = request.workload, pipeline.index
    result = []
    for position, target in enumerate(index.targets):
        # The per-target loop is fine here: `check` reports on every target by design.
        reasons = tuple(
            f.reason(workload, target, position, state)
            for f, mask in zip(pipeline.filters, masks, strict=True)
            if not mask[position]
        )
        result.append(Verdict(target.id, not reasons, reasons, float(request.score[position])))
    return result
