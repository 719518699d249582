"""Evaluating a parsed expression against one property set, in plain Python.

This is the meaning of the language (and the reference the vectorized path is tested
against). The rules, as Open Horizon's agbot applies them:

- a property that is absent makes every comparison on it false, != included;
- a number compares only with an unquoted numeric literal; a boolean only with an
  unquoted true/false (or 1/0, t/f, as Go's ParseBool reads them);
- ordering operators (< > <= >=) apply to numbers only; on anything else they are false;
- text is compared case-sensitively after trimming spaces and one pair of quotes, and
  == also matches any element of a comma-separated value;
- `in` is membership: the value is one of the listed ones; for a declared version it is
  range membership, and a bare version means "this version or newer"; an undeclared text
  value that reads as a version is range-tested only against a bracketed range;
- a declared list of strings makes != mean "is not an element" and `in` mean "shares an
  element with the list".
"""

from __future__ import annotations

import operator
from collections.abc import Mapping

from placed.model.properties import Property, parse_version, split_list, trim
from placed.policy.expressions.syntax import All, Comparison, Constraint, Literal, Node, Range


def holds(node: Node | None, properties: Mapping[str, Property]) -> bool:
    if node is None:
        return True
    if isinstance(node, Comparison):
        return compare(node, properties.get(node.name))
    if isinstance(node, All):
        return all(holds(term, properties) for term in node.terms)
    return any(holds(term, properties) for term in node.terms)


def satisfied(constraint: Constraint, properties: Mapping[str, Property]) -> bool:
    return holds(constraint.tree, properties)


ORDERING = ("<", ">", "<=", ">=", "=>", "=<")


def compare(comparison: Comparison, prop: Property | None) -> bool:
    if prop is None or prop.empty:
        # Absent makes every comparison false. So does empty text, which Open Horizon
        # cannot compare at all (its agbot fails on it).
        return False
    op, literal = comparison.op, comparison.literal
    kind = prop.kind
    if kind == "number":
        number = literal.number
        if number is None or op == "in":
            return False
        return bool(NUMERIC[op](float(prop.value), number))  # type: ignore[arg-type]
    if kind == "boolean":
        wanted = literal.boolean
        if wanted is None or op not in ("==", "!="):
            return False
        return (prop.value == wanted) == (op == "==")
    if op in ORDERING:
        return False
    text = literal.text if literal.quoted else trim(literal.text)
    # A declared list is the one kind held as a tuple (make_property builds it so).
    value = prop.value
    elements = value if isinstance(value, tuple) else split_list(str(value))
    if op == "==":
        return text in elements or (kind != "list" and trim(str(prop.value)) == text)
    if op == "!=":
        if kind == "list":
            return text not in elements
        return trim(str(prop.value)) != text
    return _member(kind, prop, literal, elements)


def _member(kind: str, prop: Property, literal: Literal, elements: tuple[str, ...]) -> bool:
    if kind == "version":
        version = parse_version(trim(str(prop.value)))
        span = version_range(literal)
        return version is not None and span is not None and span.contains(version)
    if kind == "list":
        wanted = set(literal.elements)
        return any(element in wanted for element in elements)
    if literal.kind == "range":
        version = parse_version(trim(str(prop.value)))
        return version is not None and literal.range is not None and literal.range.contains(version)
    return trim(str(prop.value)) in literal.elements


def version_range(literal: Literal) -> Range | None:
    """A range literal as is; a single version v as [v, INFINITY)."""
    if literal.range is not None:
        return literal.range
    if "," in literal.text:
        return None
    version = parse_version(literal.text)
    return None if version is None else Range(version, True, None, False)


# Numbers under each operator. Open Horizon evaluates `=>` and `=<` as equality. The same
# functions work on one float and on a numpy array of them.
NUMERIC = {
    "==": operator.eq,
    "=>": operator.eq,
    "=<": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    ">": operator.gt,
    "<=": operator.le,
    ">=": operator.ge,
}


def holds_if_known(node: Node | None, known: Mapping[str, Property]) -> bool | None:
    """Three-valued evaluation: a comparison on a property not in `known` is unknown (None),
    and AND/OR follow Kleene's logic. False means false whatever the unknown values are."""
    if node is None:
        return True
    if isinstance(node, Comparison):
        if node.name not in known:
            return None
        return compare(node, known[node.name])
    results = [holds_if_known(term, known) for term in node.terms]
    if isinstance(node, All):
        if any(result is False for result in results):
            return False
        return True if all(result is True for result in results) else None
    if any(result is True for result in results):
        return True
    return False if all(result is False for result in results) else None
