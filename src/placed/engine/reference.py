"""The reference oracle: the same policies, one target at a time, in plain Python, written
as the seeds' pseudo-code reads. Tests hold the fast path to it; the benchmark measures
against it. Nothing in the product calls it.
"""

from __future__ import annotations

from dataclasses import dataclass

from placed.engine.balance import load_cap
from placed.engine.explain import Rejection, summarize
from placed.engine.selection import rendezvous_weight
from placed.model import Spec, Target, Workload
from placed.policy.base import Reason
from placed.policy.builtins import node_properties, workload_constraints, workload_properties
from placed.policy.capacity import insufficient_reason
from placed.policy.constraints import target_constraint_reason, workload_constraint_reason
from placed.policy.expressions import parse_constraint
from placed.policy.expressions.evaluate import satisfied
from placed.policy.namespaces import accepts, namespace_reason
from placed.policy.tags import forbidden_reason, missing_reason


@dataclass(frozen=True, slots=True)
class ReferenceOutcome:
    workload: str
    unit: str
    target: str | None
    score: float | None
    summary: str | None


def judge(
    workload: Workload, target: Target, up: bool, free: dict[str, float]
) -> tuple[Reason | None, float]:
    """(first failing rule or None, score) for one workload on one target."""
    if not up:
        return Reason("status", "is down", "are down"), 0.0
    if not accepts(workload, target):
        return namespace_reason(workload, target), 0.0
    node_tags = workload.tags
    rules = target.rules
    if any(tag in rules.hard_anti_affinity for tag in node_tags):
        return forbidden_reason(sorted(t for t in node_tags if t in rules.hard_anti_affinity)), 0.0
    if any(tag not in node_tags for tag in rules.hard_affinity):
        return missing_reason(sorted(t for t in rules.hard_affinity if t not in node_tags)), 0.0
    # Both directions of seed 002: the workload's constraints on the target's properties,
    # then the target's constraints on the workload's properties.
    wanted = workload_constraints(workload)
    if wanted:
        node = node_properties(target)
        if not satisfied(parse_constraint(wanted), node):
            return workload_constraint_reason(workload, node), 0.0
    if target.constraints:
        own = parse_constraint(list(target.constraints))
        if not satisfied(own, workload_properties(workload)):
            return target_constraint_reason(own, workload), 0.0
    if any(free.get(name, 0.0) < amount for name, amount in workload.resources.items()):
        return insufficient_reason(workload.resources, free), 0.0
    score = 0.0
    for tag in node_tags:
        if tag in rules.soft_anti_affinity:
            score -= 1
        elif tag in target.tags or tag in rules.soft_affinity:
            score += 1
    return None, score


def _judge_all(
    workload: Workload,
    targets: tuple[Target, ...],
    alive: dict[str, bool],
    free: dict[str, dict[str, float]],
) -> tuple[dict[str, float], list[Rejection]]:
    """(score of each valid target, the rejection of each other one)."""
    valid: dict[str, float] = {}
    rejections: list[Rejection] = []
    for position, target in enumerate(targets):
        reason, score = judge(workload, target, alive[target.id], free[target.id])
        if reason is None:
            valid[target.id] = score
        else:
            rejections.append(Rejection(position, reason))
    return valid, rejections


def reference_plan(spec: Spec, up: dict[str, bool] | None = None) -> list[ReferenceOutcome]:
    targets = spec.inventory.targets
    alive = {t.id: (up or {}).get(t.id, t.up) for t in targets}
    free = {t.id: dict(t.capacity) for t in targets}
    outcomes: list[ReferenceOutcome] = []
    for workload in spec.workloads:
        if workload.mode == "every":
            outcomes.extend(_everywhere(workload, targets, alive, free))
            continue
        if workload.mode == "mapping" and workload.max_load is not None:
            outcomes.extend(_bounded_mapping(workload, targets, alive, free))
            continue
        for index in range(workload.units):
            unit = workload.unit_key(index)
            valid, rejections = _judge_all(workload, targets, alive, free)
            if not valid:
                summary = summarize(len(targets), 0, rejections)
                outcomes.append(ReferenceOutcome(workload.name, unit, None, None, summary))
                continue
            best = max(valid.values())
            highest = [target_id for target_id, score in valid.items() if score == best]
            chosen = max(highest, key=lambda target_id: rendezvous_weight(unit, target_id))
            if workload.mode == "allocation":
                for name, amount in workload.resources.items():
                    free[chosen][name] = free[chosen].get(name, 0.0) - amount
            outcomes.append(ReferenceOutcome(workload.name, unit, chosen, best, None))
    return outcomes


def _bounded_mapping(
    workload: Workload,
    targets: tuple[Target, ...],
    alive: dict[str, bool],
    free: dict[str, dict[str, float]],
) -> list[ReferenceOutcome]:
    """Gale and Shapley, one proposal at a time: a free unit proposes to the next target
    of its rendezvous ranking; a target over its cap turns away its lightest unit."""
    valid, rejections = _judge_all(workload, targets, alive, free)
    units = [workload.unit_key(index) for index in range(workload.units)]
    if not valid:
        summary = summarize(len(targets), 0, rejections)
        return [ReferenceOutcome(workload.name, unit, None, None, summary) for unit in units]
    best = max(valid.values())
    highest = [target_id for target_id, score in valid.items() if score == best]
    cap = load_cap(len(units), len(highest), workload.max_load or 1.0)
    ranking = {
        unit: sorted(highest, key=lambda target_id: -rendezvous_weight(unit, target_id))
        for unit in units
    }
    held: dict[str, list[str]] = {target_id: [] for target_id in highest}
    proposals = dict.fromkeys(units, 0)
    free_units = list(reversed(units))
    while free_units:
        unit = free_units.pop()
        target_id = ranking[unit][proposals[unit]]
        proposals[unit] += 1
        held[target_id].append(unit)
        if len(held[target_id]) > cap:
            lightest = min(
                held[target_id],
                key=lambda u: (rendezvous_weight(u, target_id), -units.index(u)),
            )
            held[target_id].remove(lightest)
            free_units.append(lightest)
    owner = {unit: target_id for target_id, members in held.items() for unit in members}
    return [ReferenceOutcome(workload.name, unit, owner[unit], best, None) for unit in units]


def _everywhere(
    workload: Workload,
    targets: tuple[Target, ...],
    alive: dict[str, bool],
    free: dict[str, dict[str, float]],
) -> list[ReferenceOutcome]:
    outcomes = []
    rejections = []
    for position, target in enumerate(targets):
        reason, score = judge(workload, target, alive[target.id], free[target.id])
        if reason is None:
            outcomes.append(
                ReferenceOutcome(
                    workload.name, f"{workload.name}/{target.id}", target.id, score, None
                )
            )
        else:
            rejections.append(Rejection(position, reason))
    for outcome in outcomes:
        charged = free[str(outcome.target)]
        for name, amount in workload.resources.items():
            charged[name] = charged.get(name, 0.0) - amount
    if not outcomes:
        summary = summarize(len(targets), 0, rejections)
        return [ReferenceOutcome(workload.name, f"{workload.name}/*", None, None, summary)]
    return outcomes
