"""`placed check --summary`: per workload, how many targets are compatible and why the
others are not, in the style users know from kube-scheduler:
`212/1000 targets available: 600 fail the workload's constraints, 188 have insufficient
resources`.

The full matrix (engine/check.py) asks every filter why it rejected every target, which is
a Python call per (workload, target) pair: five million of them for 5,000 workloads on
1,000 targets. The summary only counts: each rejected target is charged to the first
filter that rejects it (as `explain` and kube-scheduler do, so the counts add up to the
rejected targets), by walking a workload's filter masks in pipeline order with the
targets no filter has rejected yet: a few numpy operations per filter, none per target.
The phrase for a count is the filter's, not the target's ("fail the workload's
constraints", not which term failed on which target): that is what keeps it numpy, and
what `placed check --all` or `placed explain` are for.

The counts are those of the full matrix: a target's first listed reason there is the
filter charged here, including the one case where `check` puts a reason of its own first
(`general`: a policy whose namespace contradicts its own constraint, on a namespace-scoped
node).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from placed.engine.check import (
    Checked,
    _real_conflict,
    check_document,
    checked_request,
    workload_conflicts,
)
from placed.engine.pipeline import CompiledRequest, Pipeline
from placed.engine.planner import Planner
from placed.engine.state import PlanState
from placed.model import Workload
from placed.policy.base import BoolArray
from placed.policy.directives import creates_targets

__all__ = ["PHRASES", "phrase", "summary_check", "summary_rows"]

# What a count of targets rejected by a filter did, for one target and for several, in the
# words of the filter's reasons (policy/*.py). A filter not listed (a family added later)
# is named as it is.
PHRASES: dict[str, tuple[str, str]] = {
    "status": ("is down", "are down"),
    "namespace": (
        "does not take the deployment's namespace",
        "do not take the deployment's namespace",
    ),
    "hard-anti-affinity": ("has a forbidden tag", "have a forbidden tag"),
    "hard-affinity": ("lacks a required tag", "lack a required tag"),
    "constraint": ("fails the workload's constraints", "fail the workload's constraints"),
    "target-constraint": (
        "has constraints the workload fails",
        "have constraints the workload fails",
    ),
    "service": ("does not fit the service", "do not fit the service"),
    "dedication": (
        "is dedicated to another tenant or not to this one",
        "are dedicated to another tenant or not to this one",
    ),
    "storage": ("reaches no storage pool with room", "reach no storage pool with room"),
    "directive": (
        "is not where the unit is directed",
        "are not where the unit is directed",
    ),
    "distinct": (
        "is in a place that already holds a unit",
        "are in a place that already hold a unit",
    ),
    "spread": (
        "would exceed the workload's max skew, or is in no location to spread over",
        "would exceed the workload's max skew, or are in no location to spread over",
    ),
    "near": (
        "is not near a unit the workload must be near",
        "are not near a unit the workload must be near",
    ),
    "avoid": (
        "is near a unit the workload must avoid",
        "are near a unit the workload must avoid",
    ),
    "capacity": ("has insufficient resources", "have insufficient resources"),
}

# check's one reason of its own: a policy that contradicts itself, on a namespace-scoped node.
_CONFLICT = (
    "is namespace-scoped, where the policy contradicts itself",
    "are namespace-scoped, where the policy contradicts itself",
)


def phrase(filter_name: str) -> tuple[str, str]:
    """(singular, plural) for targets a filter rejected."""
    found = PHRASES.get(filter_name)
    if found is not None:
        return found
    return (f"is rejected by {filter_name}", f"are rejected by {filter_name}")


def _line(total: int, available: int, groups: dict[tuple[str, str], int]) -> str:
    head = f"{available}/{total} targets available"
    if total == 0:
        return f"{head}: the inventory has no targets"
    ordered = sorted(groups.items(), key=lambda item: (-item[1], item[0][1]))
    parts = [f"{n} {singular if n == 1 else plural}" for (singular, plural), n in ordered]
    return f"{head}: {', '.join(parts)}" if parts else head


def _masks(
    pipeline: Pipeline, request: CompiledRequest, state: PlanState
) -> Iterator[tuple[int, BoolArray]]:
    """(filter position, mask) of each filter that checks something for the request, in
    pipeline order: Pipeline.masks without the all-true masks of the filters it skips."""
    if state.created:  # targets made during a plan: only Pipeline.masks knows them
        yield from enumerate(pipeline.masks(request, state))
        return
    for position, part in enumerate(request.prepared):
        if part is None:
            continue
        mask = request.static_masks.get(position)
        yield position, mask if mask is not None else pipeline.filters[position].keep(part, state)


def summary_rows(planner: Planner, workloads: Sequence[Workload]) -> Iterator[Checked]:
    """One summary row per workload, as it is computed (the CLI prints each as it comes).

    A row: `{"workload", "compatible_targets", "checked_targets", "summary", "filtered":
    {filter: count}}`, and `distinct` as the full matrix has it; the conflicts are the
    full matrix's."""
    state = planner.initial_state()
    pipeline = planner.pipeline
    names = [f.name for f in pipeline.filters]
    size = state.size
    # Where check replaces a self-contradicting policy's reasons (engine/check.py): with
    # no namespace-scoped target, nowhere, and the policies need not be asked.
    namespaced = np.array([t.agent.scope == "namespace" for t in planner.index.targets], bool)
    others = ~namespaced if namespaced.any() else None
    for workload in workloads:
        request = checked_request(planner, workload)
        counted = others if others is not None and _real_conflict(workload) else None
        # Each target is charged to the first filter that rejects it: walk the filters in
        # order, keeping the targets none has rejected yet.
        remaining = np.ones(size, dtype=bool)
        filtered: dict[str, int] = {}
        groups: dict[tuple[str, str], int] = {}
        for position, mask in _masks(pipeline, request, state):
            hit = remaining > mask  # not rejected before, rejected here
            count = int(np.count_nonzero(hit if counted is None else hit & counted))
            remaining &= mask
            if count:
                name = names[position]
                filtered[name] = filtered.get(name, 0) + count
                key = phrase(name)
                groups[key] = groups.get(key, 0) + count
        available = int(np.count_nonzero(remaining))
        if counted is not None:
            replaced = size - available - sum(filtered.values())
            if replaced:
                # check lists the policy-level reason first, under "general", as hzn
                # deploycheck does.
                filtered["general"] = filtered.get("general", 0) + replaced
                groups[_CONFLICT] = replaced
        row: dict[str, Any] = {
            "workload": workload.name,
            "compatible_targets": available,
            "checked_targets": size,
            "summary": _line(size, available, groups),
            "filtered": dict(sorted(filtered.items(), key=lambda item: (-item[1], item[0]))),
        }
        spread, conflicts = workload_conflicts(workload, remaining, state, planner.spec)
        if spread is not None:
            row["distinct"] = spread
        yield Checked(row, conflicts, creates_targets(workload))


def summary_check(planner: Planner, workloads: list[Workload]) -> tuple[dict[str, Any], bool]:
    """(the summary document, whether some workload has no compatible target at all), as
    deploy_check gives the full one."""
    return check_document("summary", summary_rows(planner, workloads), planner, workloads)
