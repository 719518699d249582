"""Reading the Open Horizon parts of a spec: typed properties, constraint expressions and
services, each problem reported at its place in the file."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from placed.model import Property, PropertyError, Service
from placed.model.properties import make_property
from placed.policy.builtins import read_only_reason
from placed.policy.expressions import ExpressionError, parse
from placed.spec.errors import Problem
from placed.spec.schema import ServiceSpec
from placed.spec.source import Path, SourceMap, dotted


class Collector:
    """Gathers problems with their positions, so that every problem is reported at once."""

    def __init__(self, sources: SourceMap, problems: list[Problem]) -> None:
        self.sources = sources
        self.problems = problems

    def add(self, message: str, path: Path, key: bool = False) -> None:
        position = self.sources.key(path) if key else self.sources.value(path)
        self.problems.append(Problem(message, dotted(path), position))


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return f"a boolean {value!r}"
    if isinstance(value, int):
        return f"an integer {value!r}"
    if isinstance(value, float):
        return f"a number {value!r}"
    if isinstance(value, str):
        return f"a string {value!r}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return "nothing (null)" if value is None else type(value).__name__


def properties(raw: Any, path: Path, owner: str, out: Collector) -> dict[str, Property]:
    """A mapping {name: value} or the list form [{name, value, type}], strictly typed."""
    entries: list[tuple[Any, Any, Any, Path]] = []
    if isinstance(raw, Mapping):
        for name, value in raw.items():
            entries.append((name, value, None, (*path, name)))
    elif isinstance(raw, list):
        for index, item in enumerate(raw):
            where = (*path, index)
            if not isinstance(item, Mapping):
                out.add(f"expected {{name, value, type}}, got {_kind(item)}", where)
                continue
            unknown = sorted(set(item) - {"name", "value", "type"})
            for key in unknown:
                message = f"unknown key {key!r}; a property has name, value and type"
                out.add(message, (*where, key), key=True)
            if "name" not in item or "value" not in item:
                missing = "name" if "name" not in item else "value"
                out.add(f"missing required key {missing!r}", where)
                continue
            entries.append((item["name"], item["value"], item.get("type"), (*where, "value")))
    else:
        wanted = "a mapping {name: value} or a list of {name, value, type}"
        out.add(f"expected {wanted}, got {_kind(raw)}", path)
        return {}
    result: dict[str, Property] = {}
    for name, value, declared, where in entries:
        if not _plain_value(value, where, out):
            continue
        try:
            prop = make_property(name, value, declared)
        except PropertyError as error:
            out.add(error.message, where)
            continue
        reason = read_only_reason(prop.name, owner)
        if reason:
            out.add(reason, where)
        elif prop.name in result:
            out.add(f"property {prop.name!r} is given twice", where)
        else:
            result[prop.name] = prop
    return result


def _plain_value(value: Any, where: Path, out: Collector) -> bool:
    if isinstance(value, str | int | float | bool):
        return True
    if isinstance(value, list):
        bad = [i for i, item in enumerate(value) if not isinstance(item, str)]
        for i in bad:
            out.add(f"expected a string, got {_kind(value[i])}", (*where, i))
        return not bad
    wanted = "a string, a number, a boolean or a list of strings"
    out.add(f"expected {wanted}, got {_kind(value)}", where)
    return False


def constraints(raw: str | list[str], path: Path, out: Collector) -> tuple[str, ...]:
    texts = [raw] if isinstance(raw, str) else list(raw)
    for index, text in enumerate(texts):
        where = path if isinstance(raw, str) else (*path, index)
        try:
            parse(text)
        except ExpressionError as error:
            out.add(f"invalid constraint: {error.render()}", where)
    return tuple(text for text in texts if text.strip())


def service(spec: ServiceSpec, path: Path, out: Collector) -> Service:
    return Service(
        url=spec.url,
        org=spec.org,
        version=spec.version,
        arch=spec.arch,
        namespace=spec.namespace,
        properties=properties(spec.properties, (*path, "properties"), "service", out),
        constraints=constraints(spec.constraints, (*path, "constraints"), out),
    )
