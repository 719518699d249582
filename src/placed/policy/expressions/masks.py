"""Constraint masks over one set of property columns, kept per distinct constraint and
per distinct comparison while the columns live (one plan's index).

When every unit is a workload of its own, each still brings a constraint: parsing and
evaluating it anew per workload is most of what the workload costs. Units whose
constraints are written alike share one parse and one mask; units that differ still
share most of their comparisons (`gen >= 3`, `rack != "r7"`), so a new constraint costs
one array operation per term. Both caches are bounded in bytes: a mask is one byte per
target, so a bigger fleet keeps fewer of them.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable
from typing import TypeVar

import numpy as np

from placed.policy.expressions.columns import BoolArray, PropertyColumns
from placed.policy.expressions.syntax import All, Comparison, Node, parse_constraint

# What the masks of one cache may take in all, half for constraints, half for terms.
MASK_BYTES = 64 << 20
K = TypeVar("K", bound=Hashable)


class ConstraintMasks:
    def __init__(self, columns: PropertyColumns, max_bytes: int = MASK_BYTES) -> None:
        self.columns = columns
        # At least a few of each, so that a huge fleet still reuses its last masks.
        self.limit = max(8, max_bytes // 2 // max(columns.size, 1))
        self._constraints: OrderedDict[tuple[str, ...], BoolArray] = OrderedDict()
        self._terms: OrderedDict[Hashable, BoolArray] = OrderedDict()

    def satisfied(self, texts: tuple[str, ...]) -> BoolArray:
        """Where the constraint (texts ANDed) holds; the array is shared: read it only."""
        cache = self._constraints
        found = cache.get(texts)
        if found is not None:
            cache.move_to_end(texts)
            return found
        found = self._holds(parse_constraint(texts).tree)
        _put(cache, texts, found, self.limit)
        return found

    def _holds(self, node: Node | None) -> BoolArray:
        if node is None:
            return _frozen(np.ones(self.columns.size, dtype=bool))
        if type(node) is Comparison:
            return self._term(node)
        # A constraint of its own per unit is mostly a few terms ANDed (`gen >= 3 AND
        # rack != "r7"`): each is looked up here, without a call per term.
        terms = self._terms
        parts: list[BoolArray] = []
        for term in node.terms:  # type: ignore[union-attr]
            if type(term) is Comparison:
                key = _key(term)
                found = terms.get(key)
                if found is None:
                    found = self._term(term)
                else:
                    terms.move_to_end(key)
                parts.append(found)
            else:
                parts.append(self._holds(term))
        if len(parts) == 1:
            return parts[0]  # the same mask, shared (both are read-only)
        combine = np.logical_and if type(node) is All else np.logical_or
        combined = combine(parts[0], parts[1])
        for part in parts[2:]:
            combine(combined, part, out=combined)
        return _frozen(combined)

    def _term(self, node: Comparison) -> BoolArray:
        # Where a term is written does not change what it means: the key is what it says
        # (plain values, which hash and compare without a call into the dataclass).
        key = _key(node)
        found = _get(self._terms, key)
        if found is None:
            found = _frozen(self.columns.compare(node))
            _put(self._terms, key, found, self.limit)
        return found

    def __len__(self) -> int:
        return len(self._constraints) + len(self._terms)


def _key(node: Comparison) -> Hashable:
    literal = node.literal
    return (node.name, node.op, literal.kind, literal.text, literal.quoted, literal.range)


def _get(cache: OrderedDict[K, BoolArray], key: K) -> BoolArray | None:
    found = cache.get(key)
    if found is not None:
        cache.move_to_end(key)
    return found


def _put(cache: OrderedDict[K, BoolArray], key: K, mask: BoolArray, limit: int) -> None:
    cache[key] = mask
    if len(cache) > limit:
        cache.popitem(last=False)


def _frozen(mask: BoolArray) -> BoolArray:
    mask.flags.writeable = False
    return mask
