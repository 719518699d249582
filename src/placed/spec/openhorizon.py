"""The Open Horizon sections of a spec (seed 002): typed properties, constraint
expressions, services and patterns, and agent fields on locations, each problem
reported at its place in the file."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from placed.model import Agent, Property, PropertyError, Service
from placed.model.properties import ALLOW_PRIVILEGED, TYPES, make_property
from placed.policy.builtins import read_only_reason
from placed.policy.deployment import NONE, Deployment
from placed.policy.expressions import ExpressionError, parse
from placed.spec.collect import Collector
from placed.spec.errors import quoted
from placed.spec.schema import LocationSpec, ServiceSpec, WorkloadSpec
from placed.spec.source import Path


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return f"a boolean {quoted(value)}"
    if isinstance(value, int):
        return f"an integer {quoted(value)}"
    if isinstance(value, float):
        return f"a number {quoted(value)}"
    if isinstance(value, str):
        return f"a string {quoted(value)}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return "nothing (null)" if value is None else type(value).__name__


def properties(raw: Any, path: Path, owner: str, out: Collector) -> dict[str, Property]:
    """A mapping {name: value} or the list form [{name, value, type}], strictly typed."""
    entries: list[tuple[Any, Any, Any, Path]] = []
    whole: tuple[Any, ...] | None = None
    if type(raw) is dict:
        # The same mapping as an earlier one gives the same properties: a fleet has a few
        # hundred sets of them. Types are part of the key (True == 1) and floats are left
        # out (0.0 == -0.0, and each is shown as written).
        kinds = tuple(map(type, raw.values()))
        if _WHOLE_TYPES.issuperset(kinds):
            whole = ("mapping", owner, kinds, tuple(raw.items()))
            same: dict[str, Property] | None = _SHARED.get(whole)
            if same is not None:
                return same
    if isinstance(raw, Mapping):
        if all(type(v) in _SCALAR_TYPES for v in raw.values()):
            fast = _plain_scalars(raw, owner)
            if fast is not None:
                if whole is not None:
                    _share_mapping(whole, fast)
                return fast
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
                message = f"unknown key {quoted(key)}; a property has name, value and type"
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
        if (
            type(value) is str
            and declared is None
            and type(name) is str
            and name.strip()
            and name != ALLOW_PRIVILEGED
        ):
            # The common case, as make_property would build it, without its checks for
            # every other kind of value: inventories hold many thousands of these.
            prop = Property(name, value)
        elif declared is not None and declared not in TYPES:
            # The mistake is in the type, so point there rather than at the value.
            allowed = ", ".join(TYPES)
            out.add(
                f"unknown type {quoted(declared)}; use one of: {allowed}", (*where[:-1], "type")
            )
            continue
        elif not _plain_value(value, where, out):
            continue
        else:
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


_SCALAR_TYPES = (str, bool, int, float)
_WHOLE_TYPES = frozenset({str, bool, int})


def _share_mapping(whole: tuple[Any, ...], result: dict[str, Property]) -> None:
    """Keep `result` for the mapping `whole` was made from, keyed by the kept properties'
    own names and values (equal to the mapping's), not by the texts just read: those are
    garbage once the spec is built, and a kept one would hold its page of the read."""
    tag, owner, kinds, _ = whole
    if len(_SHARED) >= _SHARED_KEPT:
        _SHARED.clear()
    _SHARED[(tag, owner, kinds, tuple((p.name, p.value) for p in result.values()))] = result


def _plain_scalars(raw: Mapping[Any, Any], owner: str) -> dict[str, Property] | None:
    """{name: scalar} as make_property types it (no declared type), or None for the
    general path to handle, and report, anything unusual. Inventories hold many thousands
    of these, so this skips what only other kinds of value need."""
    result: dict[str, Property] = {}
    for name, value in raw.items():
        if type(name) is not str or not name.strip():
            return None
        if name.startswith(("placed.", "openhorizon.")):
            return None  # built-ins and allowPrivileged: the general path checks them
        kind = type(value)
        if kind is int:
            if abs(value) > 2**53:
                return None
            value = float(value)
        elif kind is float and not math.isfinite(value):
            return None
        # The sign too: -0.0 == 0.0, yet each is shown as written.
        key = (name, kind, value, math.copysign(1.0, value) if kind is float else 0)
        prop = _SHARED.get(key)
        if prop is None:
            prop = Property(name, value)
            if len(_SHARED) >= _SHARED_KEPT:
                _SHARED.clear()
            _SHARED[key] = prop
        result[name] = prop
    # The same values under the same names: one mapping for all the targets that have
    # them. Keyed by the shared Properties' ids, which the kept mapping keeps alive.
    shape = ("properties", *map(id, result.values()))
    same = _SHARED.get(shape)
    if same is None:
        if len(_SHARED) >= _SHARED_KEPT:
            _SHARED.clear()
        same = _SHARED[shape] = result
    kept: dict[str, Property] = same
    return kept


# A fleet repeats its property values (four purposes, ten versions) and its agents:
# targets share one frozen value each instead of holding copies. Bounded; it starts
# again when full, so unique values cannot make it grow without end.
_SHARED: dict[tuple[Any, ...], Any] = {}
_SHARED_KEPT = 20_000  # a service keeps it between loads: kept small


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
            out.add_inside(f"invalid constraint: {error.render()}", where, error.column - 1)
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
        privileged=spec.privileged,
        runs_on=tuple(dict.fromkeys(spec.runs_on)),
        requires=tuple(
            service(required, (*path, "requires", index), out)
            for index, required in enumerate(spec.requires)
        ),
    )


def agent(spec: LocationSpec, path: Path, out: Collector) -> Agent:
    """What the location's agent reports about itself."""
    if spec.scope in (None, "device") and any((spec.namespace, spec.kubernetes_version)):
        out.add(
            "namespace and kubernetes_version belong to cluster agents; set scope: "
            "cluster or scope: namespace",
            path,
        )
    key = (
        "agent",
        spec.scope or "device",
        spec.namespace,
        spec.arch,
        spec.hardware_id,
        spec.kubernetes_version,
    )
    found = _SHARED.get(key)
    if found is None:
        found = Agent(*key[1:])
        if len(_SHARED) >= _SHARED_KEPT:
            _SHARED.clear()
        _SHARED[key] = found
    shared: Agent = found
    return shared


def services(spec: WorkloadSpec, path: Path, out: Collector) -> tuple[Service, ...]:
    """The service a deployment policy deploys, or a pattern's services."""
    if spec.service is not None and spec.services:
        out.add("give either service (a policy) or services (a pattern), not both", path)
    if len(spec.services) > 1 and not spec.pattern:
        out.add(
            "a deployment policy deploys one service; set pattern: true for several",
            (*path, "services"),
        )
    found = [spec.service] if spec.service is not None else spec.services
    key = "service" if spec.service is not None else "services"
    result = tuple(
        service(s, (*path, key) if key == "service" else (*path, key, i), out)
        for i, s in enumerate(found)
    )
    # A pattern whose services embed different namespaces is legal (issue 11): on a
    # cluster-scoped node each service goes to its own, and a namespace-scoped node never
    # takes a pattern without a cluster_namespace. `placed validate` warns about it, and
    # `placed check` lists it as a conflict where a namespace-scoped node would take it
    # (issue 15; policy/namespaces.py namespace_findings).
    return result


def deployment(spec: WorkloadSpec, path: Path, out: Collector) -> Deployment | None:
    """The workload's Open Horizon deployment policy or pattern, if it is one."""
    found = Deployment(
        properties=properties(spec.properties, (*path, "properties"), "deployment", out),
        constraints=constraints(spec.constraints, (*path, "constraints"), out),
        services=services(spec, path, out),
        pattern=spec.pattern,
        cluster_namespace=spec.cluster_namespace,
    )
    return None if found == NONE else found
