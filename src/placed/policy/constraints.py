"""Constraint expressions in both directions (seed 002): a workload's constraints must hold
on the target's properties, and the target's constraints on the workload's properties."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

import numpy as np
from numpy.typing import NDArray

from placed.model import Property, Target, Workload
from placed.policy.base import (
    BoolArray,
    Bound,
    Codes,
    Family,
    Filter,
    IndexView,
    PlanView,
    Reason,
    World,
)
from placed.policy.builtins import (
    node_columns,
    node_properties,
    workload_constraints,
    workload_properties,
)
from placed.policy.deployment import Deployment
from placed.policy.expressions import All, Comparison, Constraint, parse_constraint
from placed.policy.expressions.columns import PropertyColumns
from placed.policy.expressions.evaluate import holds, satisfied
from placed.policy.expressions.masks import ConstraintMasks
from placed.policy.expressions.syntax import Node


def false_terms(constraint: Constraint, properties: Mapping[str, Property]) -> list[Node]:
    """The top-level terms of a constraint that fail: what a person needs to read."""
    tree = constraint.tree
    if tree is None:
        return []
    terms = tree.terms if isinstance(tree, All) else (tree,)
    return [term for term in terms if not holds(term, properties)]


def seen(terms: Sequence[Node], properties: Mapping[str, Property]) -> str:
    """The values the failing terms looked at, e.g. `purpose is "prod", gpu is absent`."""
    names: list[str] = []
    for term in terms:
        for comparison in _comparisons(term):
            if comparison.name not in names:
                names.append(comparison.name)
    parts = []
    for name in names:
        prop = properties.get(name)
        if prop is None:
            parts.append(f"{name} is absent")
        else:
            value = prop.plain()
            shown = (
                f'"{value}"'
                if isinstance(value, str)
                else str(value).lower()
                if isinstance(value, bool)
                else f"{value}"
            )
            parts.append(f"{name} is {shown}")
    return ", ".join(parts)


def _comparisons(node: Node) -> list[Comparison]:
    if isinstance(node, Comparison):
        return [node]
    return [c for term in node.terms for c in _comparisons(term)]


def _text(terms: Sequence[Node]) -> str:
    return " AND ".join(
        f"({t})" if not isinstance(t, Comparison) and len(terms) > 1 else str(t) for t in terms
    )


def workload_constraint_reason(workload: Workload, properties: Mapping[str, Property]) -> Reason:
    """Why the workload's constraints fail on a target with these (node) properties."""
    terms = false_terms(parse_constraint(workload_constraints(workload)), properties)
    text = _text(terms)
    return Reason(WorkloadConstraint.name, f"fails {text}", f"fail {text}", seen(terms, properties))


def target_constraint_reason(constraint: Constraint, workload: Workload) -> Reason:
    """Why a target's constraint fails on the workload's properties."""
    properties = workload_properties(workload)
    terms = false_terms(constraint, properties)
    text = _text(terms)
    return Reason(
        TargetConstraint.name,
        f"requires {text} of the workload",
        f"require {text} of the workload",
        seen(terms, properties),
    )


class WorkloadConstraint(Filter):
    """The workload's (deployment and service policy) constraints, on each target."""

    name = "constraint"
    summary = "the workload's constraints (its policy's and its services') are false on the target"
    static = True
    needs = Deployment

    def __init__(self, targets: Sequence[Target]) -> None:
        self._targets = targets
        self._built: tuple[PropertyColumns, ConstraintMasks] | None = None

    def _columns_and_masks(self) -> tuple[PropertyColumns, ConstraintMasks]:
        # Built on first use: a world none of whose workloads has a constraint never pays
        # for every target's properties as columns (130 ms at 10,000 targets), which a
        # live world's index, bound again as its inventory grows, would pay each time.
        if self._built is None:
            columns = node_columns(self._targets)
            self._built = (columns, ConstraintMasks(columns))
        return self._built

    @property
    def columns(self) -> PropertyColumns:
        return self._columns_and_masks()[0]

    @property
    def masks(self) -> ConstraintMasks:
        return self._columns_and_masks()[1]

    def prepare(self, workload: Workload) -> BoolArray | None:
        texts = workload_constraints(workload)
        return self.masks.satisfied(texts) if texts else None

    def keep(self, prepared: BoolArray, state: PlanView) -> BoolArray:
        return prepared

    def reason(self, workload: Workload, target: Target, position: int, state: PlanView) -> Reason:
        return workload_constraint_reason(workload, node_properties(target))

    def phrases(self, workload: Workload, positions: Codes, state: PlanView) -> Codes | None:
        # The words are the top-level terms that fail: one bit per term, over the columns.
        tree = parse_constraint(workload_constraints(workload)).tree
        terms = () if tree is None else tree.terms if isinstance(tree, All) else (tree,)
        if len(terms) > 62:
            return None
        codes = np.zeros(positions.size, dtype=np.intp)
        for bit, term in enumerate(terms):
            codes |= (~self.columns.holds(term)[positions]).astype(np.intp) << bit
        return codes

    def judge(self, workload: Workload, target: Target, world: World) -> Reason | None:
        wanted = workload_constraints(workload)
        if not wanted:
            return None
        node = node_properties(target)
        if satisfied(parse_constraint(wanted), node):
            return None
        return workload_constraint_reason(workload, node)


class TargetConstraint(Filter):
    """Each target's own constraints, on the workload. Targets that share a constraint text
    share one evaluation: the cost grows with distinct constraints, not with targets."""

    name = "target-constraint"
    summary = "the target's constraints (its own and its ancestors') are false on the workload"
    static = True

    def __init__(self, targets: Sequence[Target]) -> None:
        texts: dict[tuple[str, ...], int] = {}
        self.group = np.array(
            [texts.setdefault(target.constraints, len(texts)) for target in targets], dtype=np.intp
        )
        self.constraints = [parse_constraint(list(key)) for key in texts]
        self.unconstrained = all(not key for key in texts)

    def prepare(self, workload: Workload) -> BoolArray | None:
        if self.unconstrained:
            return None
        properties = workload_properties(workload)
        verdicts: NDArray[np.bool_] = np.array(
            [satisfied(constraint, properties) for constraint in self.constraints], dtype=bool
        )
        return verdicts[self.group] if self.group.size else np.zeros(0, dtype=bool)

    def keep(self, prepared: BoolArray, state: PlanView) -> BoolArray:
        return prepared

    def reason(self, workload: Workload, target: Target, position: int, state: PlanView) -> Reason:
        return target_constraint_reason(self.constraints[self.group[position]], workload)

    def phrases(self, workload: Workload, positions: Codes, state: PlanView) -> Codes:
        return self.group[positions]  # the reason reads the target's constraint alone

    def judge(self, workload: Workload, target: Target, world: World) -> Reason | None:
        if not target.constraints:
            return None
        own = parse_constraint(list(target.constraints))
        if satisfied(own, workload_properties(workload)):
            return None
        return target_constraint_reason(own, workload)


class Constraints(Family):
    """Seed 002: constraint expressions, both ways (the workload's on the target's
    properties, the target's on the workload's)."""

    name = "constraints"
    seed = "002"
    filter_types: ClassVar[tuple[type[Filter], ...]] = (WorkloadConstraint, TargetConstraint)

    def bind(self, index: IndexView) -> Bound:
        return Bound(filters=(WorkloadConstraint(index.targets), TargetConstraint(index.targets)))
