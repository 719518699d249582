"""placed: a placement engine that explains every decision.

The Python API for constraint expressions (Open Horizon compatible):

    >>> import placed
    >>> placed.evaluate('purpose == "lab" && cpu > 2', {"purpose": "lab", "cpu": 4})
    True
    >>> placed.evaluate(["cpu > 2", "gpu == true"], [{"name": "cpu", "value": 4}])
    False
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from placed.model.properties import Property, PropertyError, validate_properties
from placed.policy.expressions import ExpressionError, parse_constraint
from placed.policy.expressions.evaluate import satisfied

try:
    __version__ = version("placed")
except PackageNotFoundError:  # running from a source tree without an install
    __version__ = "0.0.0+unknown"


def evaluate(
    expression: str | Sequence[str], properties: Mapping[str, Any] | Sequence[Mapping[str, Any]]
) -> bool:
    """Whether `properties` satisfy `expression`.

    expression: one constraint string, or a list of them (ANDed); empty is true.
    properties: a mapping ({"purpose": "lab"}) or Open Horizon's list form
    ([{"name": "purpose", "value": "lab", "type": "string"}]).

    Raises ExpressionError (with .column and .kind) for invalid text and PropertyError
    for a property that does not fit its type.
    """
    constraint = parse_constraint(expression if isinstance(expression, str) else list(expression))
    return satisfied(constraint, validate_properties(properties))


__all__ = [
    "ExpressionError",
    "Property",
    "PropertyError",
    "__version__",
    "evaluate",
    "validate_properties",
]
