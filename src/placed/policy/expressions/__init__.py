"""Constraint expressions, Open Horizon compatible: parse once, evaluate per property set
(the reference) or over columns of all targets at once (the fast path)."""

from placed.policy.expressions.syntax import (
    All,
    Any_,
    Comparison,
    Constraint,
    ExpressionError,
    Literal,
    parse,
    parse_constraint,
)

__all__ = [
    "All",
    "Any_",
    "Comparison",
    "Constraint",
    "ExpressionError",
    "Literal",
    "parse",
    "parse_constraint",
]
