"""Evaluating an expression over all targets at once: numpy over property columns.

Each property name becomes a column over all targets: what kind of value each target has
(absent, number, boolean, text, version, list), the numbers as floats, booleans, text
interned to integer codes, versions packed into one comparable integer, and for each
comma-separated element the targets whose value holds it. A comparison is then a few
array operations, whatever the number of targets.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from placed.model.properties import Property, parse_version, split_list, trim
from placed.policy.expressions.evaluate import NUMERIC, ORDERING, version_range
from placed.policy.expressions.syntax import All, Comparison, Constraint, Node, Range

ABSENT, NUMBER, BOOLEAN, STRING, VERSION, LIST = range(6)
_KINDS = {"number": NUMBER, "boolean": BOOLEAN, "string": STRING, "version": VERSION, "list": LIST}
BoolArray = NDArray[np.bool_]


def pack(version: tuple[int, int, int]) -> int:
    return (version[0] << 40) | (version[1] << 20) | version[2]


@dataclass
class Column:
    kind: NDArray[np.int8]
    number: NDArray[np.float64]
    boolean: NDArray[np.int8]
    whole: NDArray[np.int32]  # code of the trimmed text, -1 where not text
    version: NDArray[np.int64]  # packed version where the text reads as one, else -1
    codes: dict[str, int] = field(default_factory=dict)
    elements: dict[str, NDArray[np.intp]] = field(default_factory=dict)
    kinds: frozenset[int] = frozenset()  # which kinds occur at all, to skip the others


class PropertyColumns:
    def __init__(self, property_sets: Sequence[Mapping[str, Property]]) -> None:
        self.size = len(property_sets)
        names = sorted({name for properties in property_sets for name in properties})
        self.columns = {name: self._column(name, property_sets) for name in names}

    def _column(self, name: str, property_sets: Sequence[Mapping[str, Property]]) -> Column:
        size = self.size
        column = Column(
            kind=np.zeros(size, dtype=np.int8),
            number=np.full(size, np.nan),
            boolean=np.full(size, -1, dtype=np.int8),
            whole=np.full(size, -1, dtype=np.int32),
            version=np.full(size, -1, dtype=np.int64),
        )
        holders: dict[str, list[int]] = {}
        # Building columns walks every target once; it is index construction, not a query.
        for position, properties in enumerate(property_sets):
            prop = properties.get(name)
            if prop is None or prop.empty:
                continue
            kind = _KINDS[prop.kind]
            column.kind[position] = kind
            if kind == NUMBER:
                column.number[position] = float(prop.value)  # type: ignore[arg-type]
            elif kind == BOOLEAN:
                column.boolean[position] = int(bool(prop.value))
            else:
                if kind == LIST:
                    elements = tuple(prop.value)  # type: ignore[arg-type]
                    whole = ",".join(elements)
                else:
                    whole = trim(str(prop.value))
                    elements = split_list(str(prop.value))
                    version = parse_version(whole)
                    if version is not None:
                        column.version[position] = pack(version)
                column.whole[position] = column.codes.setdefault(whole, len(column.codes))
                for element in set(elements):
                    holders.setdefault(element, []).append(position)
        column.elements = {key: np.array(value, dtype=np.intp) for key, value in holders.items()}
        column.kinds = frozenset(int(kind) for kind in np.unique(column.kind))
        return column

    def holds(self, node: Node | None) -> BoolArray:
        if node is None:
            return np.ones(self.size, dtype=bool)
        if isinstance(node, Comparison):
            return self.compare(node)
        parts = [self.holds(term) for term in node.terms]
        reduce = np.logical_and.reduce if isinstance(node, All) else np.logical_or.reduce
        mask: BoolArray = reduce(parts)
        return mask

    def satisfied(self, constraint: Constraint) -> BoolArray:
        return self.holds(constraint.tree)

    def compare(self, comparison: Comparison) -> BoolArray:
        column = self.columns.get(comparison.name)
        out = np.zeros(self.size, dtype=bool)
        if column is None:
            return out  # absent everywhere: every comparison is false
        op, literal = comparison.op, comparison.literal
        number = literal.number
        if number is not None and op != "in":
            # NaN marks "not a number here"; it compares false except under !=.
            result = NUMERIC[op](column.number, number) & ~np.isnan(column.number)
            out |= (column.kind == NUMBER) & result
        wanted = literal.boolean
        if wanted is not None and op in ("==", "!="):
            same = column.boolean == int(wanted)
            out |= (column.kind == BOOLEAN) & (same if op == "==" else ~same)
        if op in ORDERING:
            return out
        text = literal.text
        if op == "==":
            out |= self._holding(column, text) & (column.kind >= STRING)
        elif op == "!=":
            is_list = column.kind == LIST
            out |= is_list & ~self._holding(column, text)
            code = column.codes.get(text, -2)
            out |= ((column.kind == STRING) | (column.kind == VERSION)) & (column.whole != code)
        else:
            # A range literal is a range, never a value to find among the listed ones.
            elements = () if literal.kind == "range" else literal.elements
            out |= self._member(column, literal.kind, elements, version_range(literal))
            if literal.kind == "range" and literal.range is not None:
                out |= (column.kind == STRING) & _within(column.version, literal.range)
        return out

    def _holding(self, column: Column, element: str) -> BoolArray:
        mask = np.zeros(self.size, dtype=bool)
        positions = column.elements.get(element)
        if positions is not None:
            mask[positions] = True
        return mask

    def _member(
        self, column: Column, literal_kind: str, elements: tuple[str, ...], span: Range | None
    ) -> BoolArray:
        out = np.zeros(self.size, dtype=bool)
        if span is not None and VERSION in column.kinds:
            out |= (column.kind == VERSION) & _within(column.version, span)
        wanted = [column.codes[e] for e in elements if e in column.codes]
        if wanted and STRING in column.kinds:
            # A few equality passes beat np.isin's sort for the short lists people write.
            if len(wanted) <= 8:
                found = column.whole == wanted[0]
                for code in wanted[1:]:
                    found |= column.whole == code
            else:
                found = np.isin(column.whole, wanted)
            out |= (column.kind == STRING) & found
        if LIST in column.kinds:
            shared = np.zeros(self.size, dtype=bool)
            for element in elements:
                positions = column.elements.get(element)
                if positions is not None:
                    shared[positions] = True
            out |= (column.kind == LIST) & shared
        return out


def _within(packed: NDArray[np.int64], span: Range) -> BoolArray:
    low = pack(span.low)
    valid = packed >= 0
    above = packed >= low if span.low_inclusive else packed > low
    if span.high is None:
        return valid & above
    high = pack(span.high)
    below = packed <= high if span.high_inclusive else packed < high
    return valid & above & below
