"""One field of the spec format, described from its JSON Schema, as `kubectl explain` does.

The schema is the single source: the same text an editor shows from `placed schema` is
what `placed explain-spec workloads.distinct` prints, so the two cannot drift apart.
A path names fields by their keys, dot-separated; a list is entered by its name alone
(`inventory.children.capacity`), and `[]` after a name is allowed and means the same.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from placed.spec.schema import spec_json_schema

_NO_DEFAULT = object()


class UnknownFieldError(ValueError):
    """A path that names no field; `column` is where the unknown name starts (1-based)."""

    def __init__(self, message: str, column: int) -> None:
        super().__init__(message)
        self.column = column


@dataclass(frozen=True, slots=True)
class Field:
    """One field: where it is, what it takes, and what it means."""

    path: str
    type: str
    description: str | None
    required: bool
    default: Any = _NO_DEFAULT
    fields: tuple[Field, ...] = field(default=())

    @property
    def has_default(self) -> bool:
        return self.default is not _NO_DEFAULT

    def to_dict(self) -> dict[str, Any]:
        return {
            "field": self.path,
            "type": self.type,
            "required": self.required,
            "default": self.default if self.has_default else None,
            "description": self.description,
            "fields": [
                {
                    "name": f.path.rsplit(".", 1)[-1],
                    "type": f.type,
                    "required": f.required,
                    "description": f.description,
                }
                for f in self.fields
            ],
        }


@cache
def _schema() -> dict[str, Any]:
    return spec_json_schema()


def _resolve(node: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        resolved: dict[str, Any] = _schema()["$defs"][ref.removeprefix("#/$defs/")]
        return resolved
    return node


def _without_null(node: dict[str, Any]) -> list[dict[str, Any]]:
    choices = node.get("anyOf")
    if not isinstance(choices, list):
        return [node]
    return [c for c in choices if c.get("type") != "null"]


def _name(ref: str) -> str:
    return ref.removeprefix("#/$defs/").removesuffix("Spec") or ref


def type_of(node: dict[str, Any]) -> str:
    """The schema's type in words: `list of Workload`, `string or list of string`."""
    choices = node.get("anyOf")
    if isinstance(choices, list):
        return " or ".join(dict.fromkeys(type_of(c) for c in choices))
    if "$ref" in node:
        return str(_name(node["$ref"]))
    if "enum" in node:
        return " | ".join(str(v) for v in node["enum"])
    if "const" in node:
        return repr(node["const"])
    kind = node.get("type")
    if kind == "array":
        items = node.get("items")
        return f"list of {type_of(items)}" if isinstance(items, dict) else "list"
    if kind == "object":
        values = node.get("additionalProperties")
        if isinstance(values, dict) and "properties" not in node:
            return f"mapping of name to {type_of(values)}"
        return "object"
    return str(kind) if kind else "any"


def _object_of(node: dict[str, Any]) -> dict[str, Any] | None:
    """The object whose fields a path continues into: through lists, refs and nulls."""
    for choice in _without_null(_resolve(node)):
        choice = _resolve(choice)
        if choice.get("type") == "array" and isinstance(choice.get("items"), dict):
            found = _object_of(choice["items"])
            if found is not None:
                return found
        elif isinstance(choice.get("properties"), dict):
            return choice
    return None


def _field(path: str, node: dict[str, Any], required: bool, with_fields: bool) -> Field:
    description = node.get("description") or _resolve(node).get("description")
    if description is None:
        for choice in _without_null(node):
            description = _resolve(choice).get("description")
            if description:
                break
    if description is None and isinstance(node.get("items"), dict):
        description = _resolve(node["items"]).get("description")
    children: tuple[Field, ...] = ()
    inner = _object_of(node) if with_fields else None
    if inner is not None:
        needed = set(inner.get("required", ()))
        children = tuple(
            _field(f"{path}.{name}" if path else name, child, name in needed, False)
            for name, child in inner["properties"].items()
        )
    default = node.get("default", _NO_DEFAULT)
    return Field(path, type_of(node), description, required, default, children)


def explain(path: str) -> Field:
    """The field at `path` (empty: the whole spec), with its fields if it has any."""
    root = _schema()
    if not path.strip():
        return _field("", root, True, True)
    node: dict[str, Any] = root
    required = True
    walked: list[str] = []
    column = 1
    for raw in path.split("."):
        name = raw.removesuffix("[]")
        inner = _object_of(node)
        if inner is None:
            where = ".".join(walked)
            raise UnknownFieldError(f"{where} has no fields; {name!r} cannot follow it", column)
        fields = inner["properties"]
        if name not in fields:
            close = difflib.get_close_matches(name, list(fields), n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            where = ".".join(walked) or "a spec"
            raise UnknownFieldError(
                f"{where} has no field {name!r}; {hint}its fields: {', '.join(fields)}", column
            )
        required = name in set(inner.get("required", ()))
        node = fields[name]
        walked.append(name)
        column += len(raw) + 1
    return _field(".".join(walked), node, required, True)
