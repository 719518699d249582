"""Tag affinity (seed 001): hard and soft affinity and anti-affinity between targets and
workloads.

The columns are an inverted index: for each tag, the positions of the targets whose rule
list holds it (CSR: `indptr`, `positions`). A workload with k tags touches only the k
posting lists it names, so a placement costs the size of those lists, not a pass over a
per-target tag set for every target.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from placed.model import Target, Workload
from placed.policy.base import (
    BoolArray,
    Filter,
    FloatArray,
    Reason,
    Scorer,
    TargetState,
    plural_noun,
)


# The rule semantics in plain Python, one target at a time. The reference oracle and the
# explanations use these; the fast path below must agree with them.
def forbidden_tags(target: Target, workload_tags: frozenset[str]) -> list[str]:
    return sorted(target.rules.hard_anti_affinity & workload_tags)


def missing_required_tags(target: Target, workload_tags: frozenset[str]) -> list[str]:
    return sorted(target.rules.hard_affinity - workload_tags)


def soft_terms(target: Target, workload_tags: frozenset[str]) -> tuple[list[str], list[str]]:
    """(tags that add +1, tags that subtract 1) for this workload on this target."""
    minus = sorted(workload_tags & target.rules.soft_anti_affinity)
    plus = sorted(workload_tags & target.scored_tags)
    return plus, minus


def forbidden_reason(tags: list[str]) -> Reason:
    what = plural_noun("forbidden tag", tags)
    return Reason(HardAntiAffinity.name, f"has {what}", f"have {what}")


def missing_reason(tags: list[str]) -> Reason:
    what = plural_noun("required tag", tags)
    return Reason(HardAffinity.name, f"lacks {what}", f"lack {what}")


@dataclass(frozen=True, slots=True)
class Postings:
    """For each tag code, the target positions listed under it (and an optional weight)."""

    indptr: NDArray[np.intp]
    positions: NDArray[np.intp]
    weights: NDArray[np.float64]

    @classmethod
    def build(
        cls,
        vocabulary: dict[str, int],
        targets: Sequence[Target],
        listed: Callable[[Target], Iterable[tuple[str, float]]],
    ) -> Postings:
        per_tag: list[list[tuple[int, float]]] = [[] for _ in vocabulary]
        for position, target in enumerate(targets):
            for tag, weight in listed(target):
                per_tag[vocabulary[tag]].append((position, weight))
        counts = np.array([len(entries) for entries in per_tag], dtype=np.intp)
        indptr = np.zeros(len(per_tag) + 1, dtype=np.intp)
        np.cumsum(counts, out=indptr[1:])
        flat = [entry for entries in per_tag for entry in entries]
        positions = np.array([p for p, _ in flat], dtype=np.intp)
        weights = np.array([w for _, w in flat], dtype=np.float64)
        return cls(indptr, positions, weights)

    def gather(self, codes: NDArray[np.intp]) -> tuple[NDArray[np.intp], NDArray[np.float64]]:
        if codes.size == 0:
            return np.empty(0, dtype=np.intp), np.empty(0, dtype=np.float64)
        starts, ends = self.indptr[codes], self.indptr[codes + 1]
        # A Python loop over the workload's tags (tens), never over targets.
        parts = [slice(int(a), int(b)) for a, b in zip(starts, ends, strict=True) if b > a]
        if not parts:
            return np.empty(0, dtype=np.intp), np.empty(0, dtype=np.float64)
        return (
            np.concatenate([self.positions[part] for part in parts]),
            np.concatenate([self.weights[part] for part in parts]),
        )


class TagColumns:
    """The inverted index of every target's tag rules, built once per inventory."""

    def __init__(self, targets: Sequence[Target]) -> None:
        self.size = len(targets)
        tags: set[str] = set()
        for target in targets:
            rules = target.rules
            tags |= target.tags | rules.hard_affinity | rules.hard_anti_affinity
            tags |= rules.soft_affinity | rules.soft_anti_affinity
        self.vocabulary = {tag: code for code, tag in enumerate(sorted(tags))}
        self.forbidding = Postings.build(
            self.vocabulary, targets, lambda t: ((tag, 1.0) for tag in t.rules.hard_anti_affinity)
        )
        self.requiring = Postings.build(
            self.vocabulary, targets, lambda t: ((tag, 1.0) for tag in t.rules.hard_affinity)
        )
        self.required_count = np.array(
            [len(t.rules.hard_affinity) for t in targets], dtype=np.float64
        )
        self.scoring = Postings.build(
            self.vocabulary,
            targets,
            lambda t: [
                *((tag, 1.0) for tag in t.scored_tags),
                *((tag, -1.0) for tag in t.rules.soft_anti_affinity),
            ],
        )

    def codes(self, tags: Iterable[str]) -> NDArray[np.intp]:
        # A workload tag that no target mentions can match nothing; it drops out here.
        known = [self.vocabulary[tag] for tag in tags if tag in self.vocabulary]
        return np.array(sorted(known), dtype=np.intp)


class HardAntiAffinity(Filter):
    """A target whose hard-anti-affinity list shares any tag with the workload is removed."""

    name = "hard-anti-affinity"
    static = True

    def __init__(self, columns: TagColumns) -> None:
        self.columns = columns

    def prepare(self, workload: Workload) -> NDArray[np.intp]:
        positions, _ = self.columns.forbidding.gather(self.columns.codes(workload.tags))
        return positions

    def keep(self, prepared: NDArray[np.intp], state: TargetState) -> BoolArray:
        keep = np.ones(self.columns.size, dtype=bool)
        keep[prepared] = False
        return keep

    def reason(
        self, workload: Workload, target: Target, position: int, state: TargetState
    ) -> Reason:
        return forbidden_reason(forbidden_tags(target, workload.tags))


class HardAffinity(Filter):
    """A target is kept only if the workload carries every tag in its hard-affinity list."""

    name = "hard-affinity"
    static = True

    def __init__(self, columns: TagColumns) -> None:
        self.columns = columns

    def prepare(self, workload: Workload) -> NDArray[np.intp]:
        positions, _ = self.columns.requiring.gather(self.columns.codes(workload.tags))
        return positions

    def keep(self, prepared: NDArray[np.intp], state: TargetState) -> BoolArray:
        # Each workload tag appears at most once per target list, so a target is satisfied
        # exactly when the number of its required tags the workload carries equals its count.
        present = np.bincount(prepared, minlength=self.columns.size)
        return present == self.columns.required_count

    def reason(
        self, workload: Workload, target: Target, position: int, state: TargetState
    ) -> Reason:
        return missing_reason(missing_required_tags(target, workload.tags))


class SoftAffinity(Scorer):
    """+1 per workload tag the target favours, -1 per tag it disfavours."""

    name = "soft-affinity"

    def __init__(self, columns: TagColumns) -> None:
        self.columns = columns

    def prepare(self, workload: Workload) -> tuple[NDArray[np.intp], NDArray[np.float64]]:
        return self.columns.scoring.gather(self.columns.codes(workload.tags))

    def score(self, prepared: tuple[NDArray[np.intp], NDArray[np.float64]]) -> FloatArray:
        positions, weights = prepared
        return np.bincount(positions, weights=weights, minlength=self.columns.size)

    def explain(self, workload: Workload, target: Target) -> str:
        plus, minus = soft_terms(target, workload.tags)
        return " ".join([*(f"+{tag}" for tag in plus), *(f"-{tag}" for tag in minus)])
