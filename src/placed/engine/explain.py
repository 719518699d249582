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


@dataclass(frozen=True, slots=True)
class Charged:
    """Rejected targets whose reasons read alike: one reason built (the first target's),
    how many targets it stands for, and the first one's position."""

    reason: Reason
    count: int
    first: int


def counted_rejections(
    pipeline: Pipeline, request: CompiledRequest, state: PlanState
) -> tuple[int, list[Charged]]:
    """What first_rejections summarizes, counted: the targets each filter rejects first
    are grouped by its `phrases` codes with numpy, and one reason is built per group (a
    filter without codes, and created targets, get one per target). An unplaced unit's
    summary then costs a few reasons, not one per target of the fleet."""
    masks = pipeline.masks(request, state)
    size = state.size
    if not masks or size == 0:
        return size, []
    stack = np.vstack(masks)
    keep = stack.all(axis=0)
    rejected = np.flatnonzero(~keep)
    charged_to = np.argmin(stack[:, rejected], axis=0)  # the first False in each column
    indexed = len(pipeline.index)
    charged: list[Charged] = []
    for filter_position in np.unique(charged_to).tolist():
        positions = rejected[charged_to == filter_position]
        inside = positions[positions < indexed]
        codes = pipeline.filters[filter_position].phrases(request.workload, inside, state)
        one_by_one = positions[positions >= indexed] if codes is not None else positions
        if codes is not None and inside.size:
            _, first, counts = np.unique(codes, return_index=True, return_counts=True)
            for at, count in zip(inside[first].tolist(), counts.tolist(), strict=True):
                reason = pipeline.reason(request, filter_position, at, state)
                charged.append(Charged(reason, count, at))
        for at in one_by_one.tolist():
            charged.append(Charged(pipeline.reason(request, filter_position, at, state), 1, at))
    charged.sort(key=lambda c: c.first)
    return int(size - rejected.size), charged


def summarize_counted(total: int, available: int, charged: list[Charged]) -> str:
    """summarize's line from counted rejections (in order of their first target)."""
    head = f"{available}/{total} targets available"
    if total == 0:
        return f"{head}: the inventory has no targets"
    groups: dict[tuple[str, str], int] = {}
    for c in charged:
        key = (c.reason.singular, c.reason.plural)
        groups[key] = groups.get(key, 0) + c.count
    ordered = sorted(groups.items(), key=lambda item: (-item[1], item[0][1]))
    parts = [
        f"{count} {singular if count == 1 else plural}" for (singular, plural), count in ordered
    ]
    return f"{head}: {', '.join(parts)}" if parts else head


def filtered_counted(charged: list[Charged]) -> dict[str, int]:
    """filtered_counts from counted rejections (in order of their first target)."""
    counts: dict[str, int] = {}
    for c in charged:
        counts[c.reason.filter] = counts.get(c.reason.filter, 0) + c.count
    return counts


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
