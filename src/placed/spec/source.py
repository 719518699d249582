"""YAML (and JSON, its subset) read into plain data, remembering where each key and value
stood so that any later error can name file:line:column."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import yaml

from placed.spec.errors import Problem, SourcePosition, SpecError

Path = tuple[str | int, ...]


@dataclass
class SourceMap:
    values: dict[Path, SourcePosition] = field(default_factory=dict)
    keys: dict[Path, SourcePosition] = field(default_factory=dict)

    def value(self, path: Path) -> SourcePosition | None:
        """Where the value at `path` stands, or the nearest enclosing value that does."""
        for end in range(len(path), -1, -1):
            position = self.values.get(path[:end])
            if position is not None:
                return position
        return None

    def key(self, path: Path) -> SourcePosition | None:
        return self.keys.get(path) or self.value(path)


def _position(node: yaml.Node) -> SourcePosition:
    return SourcePosition(node.start_mark.line + 1, node.start_mark.column + 1)


def parse(text: str, source: str) -> list[tuple[Any, SourceMap]]:
    """Each YAML document in `text` as (data, where each part of it stood)."""
    if "\t" in text and _is_json(text):
        # YAML forbids tabs where JSON allows them; outside strings (where JSON has none)
        # a space means the same and keeps every column.
        text = text.replace("\t", " ")
    try:
        roots = [
            root
            for root in yaml.compose_all(text, Loader=yaml.SafeLoader)
            if root is not None and not _is_empty(root)
        ]
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        position = SourcePosition(mark.line + 1, mark.column + 1) if mark else None
        message = f"not valid YAML: {error.problem or error.context}"
        if error.problem and error.context and error.context_mark:
            # Where the unfinished part began, e.g. the bracket an error at the end left open.
            start = error.context_mark
            message += f" ({error.context} at line {start.line + 1}, column {start.column + 1})"
        raise SpecError(source, [Problem(message, position=position)]) from None
    except yaml.YAMLError as error:
        raise SpecError(source, [Problem(f"not valid YAML: {error}")]) from None
    if not roots:
        raise SpecError(
            source,
            [
                Problem(
                    "the spec is empty; it needs at least an inventory",
                    position=SourcePosition(1, 1),
                )
            ],
        )
    documents = []
    for root in roots:
        sources = SourceMap()
        documents.append((_convert(root, (), sources, source, set()), sources))
    return documents


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def _is_empty(node: yaml.Node) -> bool:
    """A document with nothing in it, such as the one after a trailing `---`."""
    return isinstance(node, yaml.ScalarNode) and node.tag == _NULL and node.value == ""


_NULL = "tag:yaml.org,2002:null"
_MERGE = "tag:yaml.org,2002:merge"
_SCALARS = yaml.SafeLoader("")


def _scalar(node: yaml.Node, source: str) -> Any:
    # Calling the tag's constructor directly keeps no per-node bookkeeping in the shared
    # loader (construct_object would remember every scalar, forever, in every thread).
    # The stubs leave the constructors' type open; every one takes a loader and a node.
    constructors: dict[str | None, Callable[[yaml.SafeLoader, yaml.Node], Any]]
    constructors = yaml.SafeLoader.yaml_constructors
    constructor = constructors.get(node.tag, constructors[None])
    try:
        return constructor(_SCALARS, node)
    except yaml.YAMLError as error:
        # A marked error's full text repeats the place as '"<unicode string>", line 2'.
        message = getattr(error, "problem", None) or str(error)
        raise SpecError(source, [Problem(message, position=_position(node))]) from None


def _convert(node: yaml.Node, path: Path, sources: SourceMap, source: str, inside: set[int]) -> Any:
    if id(node) in inside:
        # An alias to a node that contains it: the data would never end.
        raise SpecError(
            source,
            [
                Problem(
                    "this alias refers to a node that contains it; the data would be endless",
                    key=dotted(path),
                    position=sources.key(path),
                )
            ],
        )
    sources.values[path] = _position(node)
    if isinstance(node, yaml.MappingNode | yaml.SequenceNode):
        inside.add(id(node))
        try:
            return _collection(node, path, sources, source, inside)
        finally:
            inside.discard(id(node))
    return _scalar(node, source)


def _collection(
    node: yaml.MappingNode | yaml.SequenceNode,
    path: Path,
    sources: SourceMap,
    source: str,
    inside: set[int],
) -> Any:
    if isinstance(node, yaml.MappingNode):
        result: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE:
                raise SpecError(
                    source,
                    [
                        Problem(
                            "YAML merge keys (<<) are not supported; write the keys out",
                            key=dotted(path),
                            position=_position(key_node),
                        )
                    ],
                )
            if not isinstance(key_node, yaml.ScalarNode):
                raise SpecError(
                    source,
                    [Problem("a mapping key must be a plain value", position=_position(key_node))],
                )
            key = _scalar(key_node, source)
            if not isinstance(key, str):
                # Every key of a spec is text; YAML reads yes, 1 or 2024-01-01 otherwise.
                message = f"a key must be text, but {key_node.value!r} reads as {key!r}; quote it"
                raise SpecError(
                    source, [Problem(message, key=dotted(path), position=_position(key_node))]
                )
            if key in result:
                first = sources.keys[(*path, key)]
                raise SpecError(
                    source,
                    [
                        Problem(
                            f"duplicate key {key!r} (first at line {first.line})",
                            key=dotted((*path, key)),
                            position=_position(key_node),
                        )
                    ],
                )
            sources.keys[(*path, key)] = _position(key_node)
            result[key] = _convert(value_node, (*path, key), sources, source, inside)
        return result
    return [
        _convert(item, (*path, i), sources, source, inside) for i, item in enumerate(node.value)
    ]


def dotted(path: Path) -> str:
    """inventory[0].children[1].tags: how a path reads in a message."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out
