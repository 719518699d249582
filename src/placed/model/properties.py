"""Typed properties (Open Horizon's property lists): a name, a value and a type.

Types: string, int, float, boolean, version, list of strings, or none declared (the value
decides: a YAML/JSON boolean is a boolean, a number a number, text a string). Nothing is
coerced: "4" is not an int and "true" is not a boolean.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

PropertyType = Literal["string", "int", "float", "boolean", "version", "list of strings"]
TYPES: tuple[PropertyType, ...] = (
    "string",
    "int",
    "float",
    "boolean",
    "version",
    "list of strings",
)
ALLOW_PRIVILEGED = "openhorizon.allowPrivileged"
# Version parts are kept below 2**20 so that a version packs into one comparable integer.
VERSION_PART_LIMIT = 1 << 20
_VERSION = re.compile(r"^(0|[1-9][0-9]*)(\.(0|[1-9][0-9]*)){0,2}$")


class PropertyError(ValueError):
    """A property that does not fit its declared type, or is malformed."""

    def __init__(self, name: str, message: str) -> None:
        self.name = name
        self.message = message
        super().__init__(f"property {name!r}: {message}" if name else message)


@dataclass(frozen=True, slots=True)
class Property:
    name: str
    value: str | float | bool | tuple[str, ...]
    declared: PropertyType | None = None
    # Given as a YAML/JSON list rather than one comma-separated string: placed's
    # extension, which `placed validate --dialect openhorizon` points out.
    written_as_list: bool = field(default=False, compare=False)

    @property
    def kind(self) -> Literal["number", "boolean", "string", "version", "list"]:
        """How comparisons treat the value."""
        if isinstance(self.value, bool):
            return "boolean"
        if isinstance(self.value, int | float):
            return "number"
        if self.declared == "version":
            return "version"
        if self.declared == "list of strings":
            return "list"
        return "string"

    @property
    def empty(self) -> bool:
        """Text that is blank after trimming: nothing a comparison can match."""
        return isinstance(self.value, str) and not trim(self.value)

    def plain(self) -> Any:
        """The value as a user wrote it (for messages and JSON output)."""
        if isinstance(self.value, tuple):
            return list(self.value)
        if isinstance(self.value, float) and self.value.is_integer() and self.declared == "int":
            return int(self.value)
        return self.value


Properties = Mapping[str, Property]


def parse_version(text: str) -> tuple[int, int, int] | None:
    """1 to 3 dot-separated numbers, no leading zeros; missing parts are 0."""
    text = text.strip()
    if not _VERSION.match(text):
        return None
    if any(len(part) > 7 for part in text.split(".")):
        return None  # past the part limit anyway, and int() of thousands of digits is slow
    parts = [int(part) for part in text.split(".")]
    if any(part >= VERSION_PART_LIMIT for part in parts):
        return None
    while len(parts) < 3:
        parts.append(0)
    return (parts[0], parts[1], parts[2])


def split_list(text: str) -> tuple[str, ...]:
    """A comma-separated value, each element trimmed of spaces and one pair of quotes."""
    return tuple(trim(element) for element in text.split(","))


def trim(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == '"' and text[-1] == '"':
        text = text[1:-1]
    return text.strip()


def make_property(name: Any, value: Any, declared: Any = None) -> Property:
    if not isinstance(name, str) or not name.strip():
        raise PropertyError("", f"a property needs a non-empty name, got {name!r}")
    if declared is not None and declared not in TYPES:
        allowed = ", ".join(TYPES)
        raise PropertyError(name, f"unknown type {declared!r}; use one of: {allowed}")
    if value is None:
        raise PropertyError(name, "has no value")
    if name == ALLOW_PRIVILEGED:
        # Open Horizon normalises this one: a boolean, or the text "true" or "false".
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            value = value.strip().lower() == "true"
        if not isinstance(value, bool) or declared not in (None, "boolean"):
            raise PropertyError(name, f"must be true or false, got {value!r}")
    if isinstance(value, bool):
        if declared not in (None, "boolean"):
            raise PropertyError(name, f"value {value!r} is a boolean, not a {declared}")
        return Property(name, value, declared)
    if isinstance(value, int | float):
        if declared not in (None, "int", "float"):
            raise PropertyError(name, f"value {value!r} is a number, not a {declared}")
        if isinstance(value, int) and abs(value) > 2**53:
            raise PropertyError(name, f"value {value} is too large to compare exactly")
        if not math.isfinite(value):
            raise PropertyError(name, f"value {value!r} is not a finite number")
        if declared == "int" and not float(value).is_integer():
            raise PropertyError(name, f"value {value!r} is not an integer")
        return Property(name, float(value), declared)
    if isinstance(value, list):
        if declared not in (None, "list of strings"):
            raise PropertyError(name, f"a list is not a {declared}")
        if not all(isinstance(item, str) for item in value):
            raise PropertyError(name, "a list of strings may hold only strings")
        return Property(name, tuple(trim(item) for item in value), "list of strings", True)
    if isinstance(value, str):
        if declared in ("int", "float", "boolean"):
            raise PropertyError(
                name, f"value {value!r} is text, not a{'n' if declared == 'int' else ''} {declared}"
            )
        if declared == "version":
            if parse_version(value) is None:
                raise PropertyError(
                    name,
                    f"{value!r} is not a version: 1 to 3 dot-separated numbers "
                    "without leading zeros, such as 1.2.3",
                )
            return Property(name, value.strip(), "version")
        if declared == "list of strings":
            return Property(name, split_list(value), "list of strings")
        return Property(name, value, declared)
    raise PropertyError(name, f"value of type {type(value).__name__} is not allowed")


def validate_properties(properties: Any) -> dict[str, Property]:
    """A mapping ({purpose: lab}) or Open Horizon's list form ([{name, value, type}])."""
    result: dict[str, Property] = {}
    if isinstance(properties, Mapping):
        items = [(name, value, None) for name, value in properties.items()]
    elif isinstance(properties, list):
        items = []
        for index, entry in enumerate(properties):
            if not isinstance(entry, Mapping):
                raise PropertyError("", f"item {index} of the list must be {{name, value, type}}")
            extra = sorted(set(entry) - {"name", "value", "type"})
            if extra:
                raise PropertyError(
                    str(entry.get("name", "")),
                    f"unknown key {extra[0]!r} (allowed: name, value, type)",
                )
            if "value" not in entry:
                raise PropertyError(str(entry.get("name", "")), "has no value")
            items.append((entry.get("name"), entry["value"], entry.get("type")))
    else:
        raise PropertyError("", "properties must be a mapping or a list of {name, value, type}")
    for name, value, declared in items:
        if name in result:
            raise PropertyError(name, "is given twice")
        result[name] = make_property(name, value, declared)
    return result
