"""YAML (and JSON, its subset) read into plain data, remembering where each key and value
stood so that any later error can name file:line:column."""

from __future__ import annotations

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
    try:
        roots = [
            root for root in yaml.compose_all(text, Loader=yaml.SafeLoader) if root is not None
        ]
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        position = SourcePosition(mark.line + 1, mark.column + 1) if mark else None
        message = f"not valid YAML: {error.problem or error.context}"
        raise SpecError(source, [Problem(message, position=position)]) from None
    except yaml.YAMLError as error:
        raise SpecError(source, [Problem(f"not valid YAML: {error}")]) from None
    if not roots:
        raise SpecError(source, [Problem("the spec is empty; it needs at least an inventory")])
    documents = []
    for root in roots:
        sources = SourceMap()
        documents.append((_convert(root, (), sources, source), sources))
    return documents


_SCALARS = yaml.SafeLoader("")


def _convert(node: yaml.Node, path: Path, sources: SourceMap, source: str) -> Any:
    sources.values[path] = _position(node)
    if isinstance(node, yaml.MappingNode):
        result: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = (
                _SCALARS.construct_object(key_node)
                if isinstance(key_node, yaml.ScalarNode)
                else None
            )
            if not isinstance(key, str | int | float | bool):
                raise SpecError(
                    source,
                    [Problem("a mapping key must be a plain value", position=_position(key_node))],
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
            result[key] = _convert(value_node, (*path, key), sources, source)
        return result
    if isinstance(node, yaml.SequenceNode):
        return [_convert(item, (*path, i), sources, source) for i, item in enumerate(node.value)]
    try:
        return _SCALARS.construct_object(node, deep=True)
    except yaml.YAMLError as error:
        raise SpecError(source, [Problem(str(error), position=_position(node))]) from None


def dotted(path: Path) -> str:
    """inventory[0].children[1].tags: how a path reads in a message."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out
