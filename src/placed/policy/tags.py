"""Tag affinity (seed 001): hard and soft affinity and anti-affinity between targets and
workloads.

The columns are per-tag rows over all targets (an inverted index): a workload with k tags
adds up the k rows it names, a few vector operations over all targets, instead of testing
a tag set per target.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from numpy.typing import NDArray

from placed.model import Notice, Spec, Target, Workload
from placed.policy.base import (
    BoolArray,
    Bound,
    Codes,
    Family,
    Filter,
    FloatArray,
    IndexView,
    PlanView,
    Reason,
    Scorer,
    World,
    plural_noun,
)
from placed.policy.near import NearIndex


@dataclass(frozen=True, slots=True)
class Tagged:
    """A workload's request in this family: its tags (seed 001's node.affinity_tags)."""

    tags: frozenset[str]


_UNTAGGED: frozenset[str] = frozenset()


def tags_of(workload: Workload) -> frozenset[str]:
    found = workload.request(Tagged)
    return _UNTAGGED if found is None else found.tags


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


# Up to this many (tag, target) cells, a rule list is kept as a dense int8 matrix (64 MiB);
# past it, as posting lists. Dense rows make a workload's cost a handful of vector adds
# over all targets; posting lists keep memory proportional to the rules a big fleet has.
DENSE_CELLS = 1 << 26

# A workload's summed rows: int8 while few enough rows cannot overflow it, else int16.
Totals = NDArray[np.int8] | NDArray[np.int16]


class TagRows:
    """One rule list as a row per tag over all targets: the weight the tag carries on each
    target (1 = listed, or +1/-1 for scores). `total(codes)` sums the rows of a
    workload's tags, which is all any tag rule needs."""

    def __init__(
        self,
        size: int,
        vocabulary: dict[str, int],
        targets: Sequence[Target],
        listed: Callable[[Target], Iterable[tuple[str, int]]],
        dense_cells: int | None = None,
    ) -> None:
        self.size = size
        dense_cells = DENSE_CELLS if dense_cells is None else dense_cells
        tag_codes: list[int] = []
        positions: list[int] = []
        weights: list[int] = []
        for position, target in enumerate(targets):
            for tag, weight in listed(target):
                tag_codes.append(vocabulary[tag])
                positions.append(position)
                weights.append(weight)
        codes = np.array(tag_codes, dtype=np.intp)
        where = np.array(positions, dtype=np.intp)
        amount = np.array(weights, dtype=np.int8)
        self.used = np.zeros(len(vocabulary), dtype=bool)
        self.used[codes] = True
        # The same as a list, for a workload's few tags (no numpy call per workload), and
        # whether the rule lists any tag at all.
        self._used = self.used.tolist()
        self.anywhere = bool(codes.size)
        self.dense = len(vocabulary) * size <= dense_cells
        if self.dense:
            self.matrix = np.zeros((len(vocabulary), size), dtype=np.int8)
            self.matrix[codes, where] = amount
        else:
            order = np.argsort(codes, kind="stable")
            self.indptr = np.zeros(len(vocabulary) + 1, dtype=np.intp)
            np.cumsum(np.bincount(codes, minlength=len(vocabulary)), out=self.indptr[1:])
            # Kept narrow (a few entries per target, 100,000 targets): bincount widens
            # only the rows a workload asks for.
            self.positions = where[order].astype(np.int32 if size < 2**31 else np.intp)
            self.weights = amount[order]

    def rows(self, codes: NDArray[np.intp]) -> list[int]:
        """The rows of the workload's tags that some target lists."""
        return codes[self.used[codes]].tolist() if codes.size else []

    def rows_of(self, codes: list[int]) -> list[int]:
        """`rows` of codes given as a list (a workload's few, in Python)."""
        used = self._used
        return [code for code in codes if used[code]]

    def listing(self, rows: list[int], positions: NDArray[np.intp]) -> NDArray[np.intp]:
        """Per position, one bit per row (in `rows` order) set where the target lists that
        row's tag: which of a workload's tags a rule names there (rows: at most 62)."""
        codes = np.zeros(positions.size, dtype=np.intp)
        for bit, row in enumerate(rows):
            if self.dense:
                listed = self.matrix[row, positions] != 0
            else:
                span = self.positions[self.indptr[row] : self.indptr[row + 1]]
                listed = np.isin(positions, span)
            codes |= listed.astype(np.intp) << bit
        return codes

    def total(self, codes: NDArray[np.intp]) -> Totals:
        return self.total_of(self.rows(codes))

    def total_of(self, rows: list[int]) -> Totals:
        # A Python loop over the workload's tags (tens), never over targets.
        total: Totals
        if self.dense:
            # Each row adds at most 1 in magnitude, so fewer than 128 rows cannot overflow
            # int8, and int8 + int8 runs three times as fast as int16 + int8. One reduce
            # over the gathered rows costs half of a numpy call per row.
            if not rows:
                return np.zeros(self.size, dtype=np.int8)
            # `take` gathers the rows at half the cost of indexing with the list.
            dtype = np.int8 if len(rows) < 128 else np.int16
            total = np.add.reduce(self.matrix.take(rows, axis=0), axis=0, dtype=dtype)
            return total
        total = np.zeros(self.size, dtype=np.int16)
        if rows:
            spans = [slice(self.indptr[row], self.indptr[row + 1]) for row in rows]
            where = np.concatenate([self.positions[span] for span in spans])
            weights = np.concatenate([self.weights[span] for span in spans])
            total += np.bincount(where, weights=weights, minlength=self.size).astype(np.int16)
        return total


class TagColumns:
    """Every target's tag rules as columns, built once per inventory."""

    def __init__(self, targets: Sequence[Target], dense_cells: int | None = None) -> None:
        self.size = len(targets)
        tags: set[str] = set()
        for target in targets:
            rules = target.rules
            tags |= target.tags | rules.hard_affinity | rules.hard_anti_affinity
            tags |= rules.soft_affinity | rules.soft_anti_affinity
        self.vocabulary = {tag: code for code, tag in enumerate(sorted(tags))}

        def rows(listed: Callable[[Target], Iterable[tuple[str, int]]]) -> TagRows:
            return TagRows(self.size, self.vocabulary, targets, listed, dense_cells)

        self.forbidding = rows(lambda t: ((tag, 1) for tag in t.rules.hard_anti_affinity))
        self.requiring = rows(lambda t: ((tag, 1) for tag in t.rules.hard_affinity))
        self.required_count = np.array(
            [len(t.rules.hard_affinity) for t in targets], dtype=np.int16
        )
        self.scoring = rows(
            lambda t: [
                *((tag, 1) for tag in t.scored_tags),
                *((tag, -1) for tag in t.rules.soft_anti_affinity),
            ]
        )
        self._last: tuple[frozenset[str], NDArray[np.intp]] | None = None
        self._last_list: tuple[frozenset[str], list[int]] | None = None

    def codes(self, tags: frozenset[str]) -> NDArray[np.intp]:
        # The three tag rules ask for the same workload's codes in a row: keep the last.
        if self._last is not None and self._last[0] is tags:
            return self._last[1]
        codes = np.array(self.code_list(tags), dtype=np.intp)
        self._last = (tags, codes)
        return codes

    def code_list(self, tags: frozenset[str]) -> list[int]:
        """`codes` as a sorted list, kept for the last tag set as `codes` is."""
        if self._last_list is not None and self._last_list[0] is tags:
            return self._last_list[1]
        # A workload tag that no target mentions can match nothing; it drops out here.
        get = self.vocabulary.get
        codes = sorted([code for tag in tags if (code := get(tag)) is not None])
        self._last_list = (tags, codes)
        return codes


class HardAntiAffinity(Filter):
    """A target whose hard-anti-affinity list shares any tag with the workload is removed."""

    name = "hard-anti-affinity"
    summary = "the target's hard-anti-affinity list shares a tag with the workload"
    static = True
    needs = Tagged

    def __init__(self, columns: TagColumns) -> None:
        self.columns = columns

    def prepare(self, workload: Workload) -> Totals | None:
        forbidding = self.columns.forbidding
        if not forbidding.anywhere:
            return None  # no target forbids a tag
        rows = forbidding.rows_of(self.columns.code_list(tags_of(workload)))
        if not rows:
            return None  # no tag of the workload is forbidden anywhere
        return forbidding.total_of(rows)

    def keep(self, prepared: Totals, state: PlanView) -> BoolArray:
        kept: BoolArray = prepared == 0
        return kept

    def reason(self, workload: Workload, target: Target, position: int, state: PlanView) -> Reason:
        return forbidden_reason(forbidden_tags(target, tags_of(workload)))

    def phrases(self, workload: Workload, positions: Codes, state: PlanView) -> Codes | None:
        # The words list the workload's tags the target forbids.
        rows = self.columns.forbidding.rows(self.columns.codes(tags_of(workload)))
        return self.columns.forbidding.listing(rows, positions) if len(rows) <= 62 else None

    def judge(self, workload: Workload, target: Target, world: World) -> Reason | None:
        # The seed: "if any node.affinity_tags in conductor.hard_anti_affinity_tags".
        node_tags = tags_of(workload)
        if not node_tags.isdisjoint(target.rules.hard_anti_affinity):
            return forbidden_reason(forbidden_tags(target, node_tags))
        return None


class HardAffinity(Filter):
    """A target is kept only if the workload carries every tag in its hard-affinity list."""

    name = "hard-affinity"
    summary = "the workload lacks a tag of the target's hard-affinity list"
    static = True

    def __init__(self, columns: TagColumns) -> None:
        self.columns = columns
        self.anywhere = bool(columns.required_count.any())
        self._sets: weakref.WeakKeyDictionary[IndexView, Codes] = weakref.WeakKeyDictionary()

    def prepare(self, workload: Workload) -> Totals | None:
        if not self.anywhere:
            return None  # no target requires a tag
        return self.columns.requiring.total(self.columns.codes(tags_of(workload)))

    def keep(self, prepared: Totals, state: PlanView) -> BoolArray:
        # Each workload tag appears at most once per target list, so a target is satisfied
        # exactly when the number of its required tags the workload carries equals its count.
        kept: BoolArray = prepared == self.columns.required_count
        return kept

    def reason(self, workload: Workload, target: Target, position: int, state: PlanView) -> Reason:
        return missing_reason(missing_required_tags(target, tags_of(workload)))

    def phrases(self, workload: Workload, positions: Codes, state: PlanView) -> Codes:
        # The words list the target's required tags the workload lacks: targets that
        # require the same set read alike.
        return self._required_sets(state.index)[positions]

    def _required_sets(self, index: IndexView) -> Codes:
        found = self._sets.get(index)
        if found is None:
            sets: dict[frozenset[str], int] = {}
            found = np.array(
                [sets.setdefault(t.rules.hard_affinity, len(sets)) for t in index.targets],
                dtype=np.intp,
            )
            self._sets[index] = found
        return found

    def judge(self, workload: Workload, target: Target, world: World) -> Reason | None:
        # The seed: "if any conductor.hard_affinity_tags not in node.affinity_tags".
        node_tags = tags_of(workload)
        if not target.rules.hard_affinity <= node_tags:
            return missing_reason(missing_required_tags(target, node_tags))
        return None


class SoftAffinity(Scorer):
    """+1 per workload tag the target favours, -1 per tag it disfavours."""

    name = "soft-affinity"
    summary = (
        "+1 per workload tag in the target's tags or soft_affinity, -1 per tag in its "
        "soft_anti_affinity"
    )
    needs = Tagged

    def __init__(self, columns: TagColumns) -> None:
        self.columns = columns

    def prepare(self, workload: Workload) -> Totals | None:
        rows = self.columns.scoring.rows_of(self.columns.code_list(tags_of(workload)))
        if not rows:
            return None
        return self.columns.scoring.total_of(rows)

    def score(self, prepared: Totals) -> FloatArray:
        return prepared.astype(np.float64)

    def judge(self, workload: Workload, target: Target) -> float:
        # The seed's pseudo-code: anti-affinity is checked first, so a tag in both lists
        # counts -1; the target's own tags count as soft affinity (its first form).
        score = 0.0
        rules = target.rules
        for tag in tags_of(workload):
            if tag in rules.soft_anti_affinity:
                score -= 1
            elif tag in target.tags or tag in rules.soft_affinity:
                score += 1
        return score


class Tags(Family):
    """Seed 001: tag affinity between targets (conductors) and workloads (nodes)."""

    name = "tags"
    seed = "001"
    filter_types: ClassVar[tuple[type[Filter], ...]] = (HardAntiAffinity, HardAffinity)
    scorer_types: ClassVar[tuple[type[Scorer], ...]] = (SoftAffinity,)

    def lint(self, spec: Spec) -> list[Notice]:
        notices: list[Notice] = []
        known: set[str] = set()
        for target in spec.inventory.targets:
            rules = target.rules
            known |= target.tags | rules.hard_affinity | rules.hard_anti_affinity
            known |= rules.soft_affinity | rules.soft_anti_affinity
            both = sorted(rules.soft_affinity & rules.soft_anti_affinity)
            if both:
                notices.append(
                    Notice(
                        "tag-in-both-soft-lists",
                        f"{', '.join(both)} is in both soft_affinity and soft_anti_affinity; "
                        "it scores -1 (anti-affinity is checked first)",
                        target=target.id,
                    )
                )
        index: NearIndex | None = None
        for workload in spec.workloads:
            for tag in sorted(tags_of(workload) - known):
                # A tag no target mentions is normal (it simply scores nothing); one that
                # is a near miss of a tag that does exist is probably a typo.
                index = index or NearIndex(known)
                # Tags are compared exactly, so GPU is not gpu: the likeliest slip of all.
                same = index.same_but_case(tag)
                close = (
                    [same]
                    if same is not None
                    else [
                        other
                        for other in index.close(tag, n=3, cutoff=0.8)
                        if _letters(other) != _letters(tag)  # network1 is no typo of network3
                    ][:1]
                )
                if close:
                    notices.append(
                        Notice(
                            "tag-matches-nothing",
                            f"tag {tag!r} appears on no target; did you mean {close[0]!r}?",
                            workload=workload.name,
                        )
                    )
        return notices

    def explain(self, workload: Workload, target: Target) -> str:
        plus, minus = soft_terms(target, tags_of(workload))
        return " ".join([*(f"+{tag}" for tag in plus), *(f"-{tag}" for tag in minus)])

    def bind(self, index: IndexView) -> Bound:
        columns = TagColumns(index.targets)
        return Bound(
            filters=(HardAntiAffinity(columns), HardAffinity(columns)),
            scorers=(SoftAffinity(columns),),
        )


def _letters(tag: str) -> str:
    return "".join(c for c in tag if not c.isdigit())
