"""Evaluating an expression over all targets at once: numpy over property columns.

Each property name becomes a column over all targets: what kind of value each target has
(absent, number, boolean, text, version, list), the numbers as floats, booleans, text
interned to integer codes, versions packed into one comparable integer, and for each
comma-separated element the targets whose value holds it. A comparison is then a few
array operations, whatever the number of targets.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

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
    # For a value of several elements (a list, "tpu,gps"), each element's targets; a
    # value that is one element (most: an id, "lab") is found by its code in `single`.
    elements: dict[str, NDArray[np.intp]] = field(default_factory=dict)
    kinds: frozenset[int] = frozenset()  # which kinds occur at all, to skip the others
    single: NDArray[np.int32] = field(default_factory=lambda: np.zeros(0, dtype=np.int32))


# A property as a target has it, or a built-in's plain value (a target's id, its cpu),
# made a Property only once per distinct value by `make`.
Value = Property | str | float | bool
Make = Callable[[str, Value], Property]


def _no_plain_values(name: str, value: Value) -> Property:
    raise TypeError(f"{name}: {value!r} is not a Property (give PropertyColumns a `make`)")


class PropertyColumns:
    """`property_sets`: each target's properties by name. Building reads each target's
    values once and describes each distinct value once (a fleet repeats its values: ten
    versions, four purposes), so it costs a pass over the values, not a Property each."""

    def __init__(
        self, property_sets: Iterable[Mapping[str, Value]], make: Make = _no_plain_values
    ) -> None:
        # Per name: the positions that have it and which distinct value each has, as C
        # integers (a list would hold an int object per target and column: a hundred
        # thousand targets of a dozen properties made a million of them to throw away).
        found: dict[str, tuple[array[int], array[int], dict[Any, int], list[Value]]] = {}
        size = 0
        for position, properties in enumerate(property_sets):
            size = position + 1
            for name, value in properties.items():
                table = found.get(name)
                if table is None:
                    table = found[name] = (array("q"), array("q"), {}, [])
                positions, entries, seen, distinct = table
                # The type is part of the key: True == 1.0, yet they are different values.
                key = (
                    (value.value.__class__, value.value, value.declared)
                    if isinstance(value, Property)
                    else (value.__class__, value)
                )
                entry = seen.get(key)
                if entry is None:
                    entry = seen[key] = len(distinct)
                    distinct.append(value)
                positions.append(position)
                entries.append(entry)
        self.size = size
        self.columns = {
            name: self._column(name, *found[name][:2], found[name][3], make)
            for name in sorted(found)
        }

    def _column(
        self,
        name: str,
        positions: array[int],
        entries: array[int],
        distinct: list[Value],
        make: Make,
    ) -> Column:
        size = self.size
        count = len(distinct)
        kinds = np.zeros(count, dtype=np.int8)
        numbers = np.full(count, np.nan)
        booleans = np.full(count, -1, dtype=np.int8)
        wholes = np.full(count, -1, dtype=np.int32)
        versions = np.full(count, -1, dtype=np.int64)
        singles = np.full(count, -1, dtype=np.int32)
        codes: dict[str, int] = {}
        several: dict[int, set[str]] = {}  # entry -> its elements, where it has more than one
        for entry, value in enumerate(distinct):
            prop = value if isinstance(value, Property) else make(name, value)
            if prop.empty:
                continue  # absent: nothing a comparison can match
            kind = _KINDS[prop.kind]
            kinds[entry] = kind
            if kind == NUMBER:
                numbers[entry] = float(prop.value)  # type: ignore[arg-type]
            elif kind == BOOLEAN:
                booleans[entry] = int(bool(prop.value))
            else:
                if kind == LIST:
                    elements = tuple(prop.value)  # type: ignore[arg-type]
                    whole = ",".join(elements)
                else:
                    whole = trim(str(prop.value))
                    elements = split_list(str(prop.value))
                    version = parse_version(whole)
                    if version is not None:
                        versions[entry] = pack(version)
                code = wholes[entry] = codes.setdefault(whole, len(codes))
                held = set(elements)
                if held == {whole}:
                    singles[entry] = code
                elif held:
                    several[entry] = held
        at = np.frombuffer(positions, dtype=np.int64).astype(np.intp)
        which = np.frombuffer(entries, dtype=np.int64).astype(np.intp)

        def spread(values: NDArray[Any], fill: Any) -> NDArray[Any]:
            blank = np.isnan(values) if fill != fill else values == fill
            if blank.all():
                # No target has this kind of value here (a text column's numbers): one
                # read-only value seen at every position, which takes no memory per target.
                return np.broadcast_to(np.array(fill, dtype=values.dtype), (size,))
            out = np.full(size, fill, dtype=values.dtype)
            out[at] = values[which]
            return out

        column = Column(
            kind=spread(kinds, 0),
            number=spread(numbers, np.nan),
            boolean=spread(booleans, -1),
            whole=spread(wholes, -1),
            version=spread(versions, -1),
            codes=codes,
            single=spread(singles, -1),
        )
        if several:
            holders: dict[str, list[NDArray[np.intp]]] = {}
            order = np.argsort(which, kind="stable")
            starts = np.searchsorted(which[order], np.arange(count + 1))
            for entry, held in several.items():
                having = at[order[starts[entry] : starts[entry + 1]]]
                for element in held:
                    holders.setdefault(element, []).append(having)
            column.elements = {
                key: np.sort(np.concatenate(parts)) for key, parts in holders.items()
            }
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
        code = column.codes.get(element)
        mask = column.single == code if code is not None else np.zeros(self.size, dtype=bool)
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
                shared |= self._holding(column, element)
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
