"""Juju's own files read as placed specs, unchanged: juju-deployer files (named
deployments, each with `services:`; the seed's `envExport:`), bundles (`applications:`
or `services:` with `machines:`), and what `juju status --format yaml` prints, for the
machines, containers and units that already exist.

Each service becomes an allocation workload whose units carry a `Directed` request (one
plan per unit, policy/directives.py); machines that exist become targets. Which entry
applies to which unit, and the order services are placed in, follow the tools:

- deployer: entry i is unit i's; a bare service name is the unit of that service with
  my own index, `svc=N` its N-th unit in numeric order; units without an entry get a new
  machine; services without `to:` are placed first, then those with one, each group by
  name (juju-deployer's order). Nested placement (a target that has its own `to:`) is an
  error, as the seed says.
- bundle: entry i is unit i's, a short list padded with its last entry; `svc/N` is the
  unit svc/N, a bare name hands out the target's units in order (a counter per target);
  declared machines are created first, in the natural order of their ids, and take the
  model's next numbers; applications are placed in name order, each after those it names.

Every problem of a file is reported at once, each at its line and column.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from placed.model import (
    Inventory,
    Location,
    Notice,
    Property,
    Running,
    Settings,
    Spec,
    Workload,
)
from placed.model.juju_constraints import ConstraintError, JujuConstraints, parse_constraints
from placed.policy.directives import DECLARED, DECLARED_CONSTRAINTS, Directed, UnitPlan
from placed.spec.collect import Collector
from placed.spec.errors import Problem, SourcePosition, SpecError, quoted
from placed.spec.juju.directives import (
    Directive,
    DirectiveError,
    NewMachine,
    OnMachine,
    ProviderPlacement,
    Style,
    UnitConstraints,
    WithUnit,
    parse_entry,
)
from placed.spec.source import Path, SourceMap, parse, read_bounded

MAX_UNITS = 100_000  # per service: a bundle of more is a mistake, not a deployment
# Per file: each unit of a Juju file may get a machine of its own, made during the plan,
# so the bound is that of a large model rather than of a spec's existing targets.
MAX_TOTAL_UNITS = 200_000


@dataclass(frozen=True, slots=True)
class KeyTable:
    """The keys the real tool accepts in one part of its file: those placed reads, and
    those it accepts and ignores (they change nothing about placement). A key in
    neither is a mistake, reported with a did-you-mean."""

    part: str
    source: str  # where the real tool defines the keys
    used: tuple[str, ...]
    ignored: tuple[str, ...]

    @property
    def accepted(self) -> tuple[str, ...]:
        return (*self.used, *self.ignored)


# juju/charm bundledata.go: the yaml tags of BundleData, ApplicationSpec, MachineSpec,
# OfferSpec, SaasSpec and ExposedEndpointSpec (Juju decodes a bundle strictly:
# bundledatasrc.go parseBundleParts). `services` is Juju 2's legacy name of
# `applications` (legacyBundleData), `force-machine` juju-deployer's legacy `to:`
# (deployer/service.py Service.unit_placement).
BUNDLE_KEYS = KeyTable(
    "bundle",
    "juju/charm bundledata.go BundleData",
    used=("applications", "services", "machines", "series"),
    ignored=("bundle", "saas", "default-base", "relations", "tags", "description"),
)
APPLICATION_KEYS = KeyTable(
    "application",
    "juju/charm bundledata.go ApplicationSpec",
    used=("num_units", "scale", "to", "constraints", "series", "force-machine"),
    ignored=(
        "charm",
        "channel",
        "revision",
        "base",
        "resources",
        "placement",
        "expose",
        "exposed-endpoints",
        "options",
        "annotations",
        "storage",
        "devices",
        "bindings",
        "offers",
        "plan",
        "trust",
    ),
)
MACHINE_KEYS = KeyTable(
    "machine",
    "juju/charm bundledata.go MachineSpec",
    used=("constraints", "series"),
    ignored=("annotations", "base"),
)
OFFER_KEYS = KeyTable(
    "offer", "juju/charm bundledata.go OfferSpec", used=(), ignored=("endpoints", "acl")
)
SAAS_KEYS = KeyTable("saas", "juju/charm bundledata.go SaasSpec", used=(), ignored=("url",))
EXPOSED_ENDPOINT_KEYS = KeyTable(
    "exposed endpoint",
    "juju/charm bundledata.go ExposedEndpointSpec",
    used=(),
    ignored=("expose-to-spaces", "expose-to-cidrs"),
)
# juju-deployer: deployer/config.py ConfigStack (include-config(s) at the top,
# `inherits`), deployer/deployment.py Deployment (series, services, relations,
# overrides, machines), deployer/service.py Service and deployer/charm.py
# Charm.from_service for a service's keys.
DEPLOYER_TOP_KEYS = ("include-config", "include-configs")
DEPLOYMENT_KEYS = KeyTable(
    "deployment",
    "juju-deployer deployer/config.py ConfigStack, deployer/deployment.py Deployment",
    used=("services", "series", "inherits"),
    ignored=("relations", "overrides", "machines"),
)
DEPLOYER_SERVICE_KEYS = KeyTable(
    "service",
    "juju-deployer deployer/service.py Service, deployer/charm.py Charm.from_service",
    used=("num_units", "to", "force-machine", "constraints", "series"),
    ignored=(
        "charm",
        "charm_url",
        "branch",
        "build",
        "options",
        "annotations",
        "expose",
        "resources",
        "bindings",
        "storage",
    ),
)
# placed's own additions: the seed writes `units:` for num_units, and without the
# charm's metadata `subordinate: true` says that a service is one.
PLACED_SERVICE_KEYS = ("units", "subordinate")
PLACED_APPLICATION_KEYS = ("subordinate",)

KEY_TABLES: dict[str, tuple[KeyTable, ...]] = {
    "bundle": (
        BUNDLE_KEYS,
        APPLICATION_KEYS,
        MACHINE_KEYS,
        OFFER_KEYS,
        SAAS_KEYS,
        EXPOSED_ENDPOINT_KEYS,
    ),
    "deployer": (DEPLOYMENT_KEYS, DEPLOYER_SERVICE_KEYS),
}


UNKNOWN_KEY = "unknown-key"


def check_keys(
    body: dict[Any, Any],
    table: KeyTable,
    path: Path,
    out: Collector,
    extra: tuple[str, ...] = (),
) -> None:
    """Every key of `body` that the real tool does not accept, as an error at the key."""
    accepted = (*table.accepted, *extra)
    for key in body:
        if isinstance(key, str) and key in accepted:
            continue
        name = str(key)
        close = difflib.get_close_matches(name, accepted, n=1, cutoff=0.6)
        if not close:
            close = difflib.get_close_matches(name.replace("_", "-"), accepted, n=1, cutoff=0.6)
        hint = (
            f"; did you mean {close[0]!r}?"
            if close
            else f"; {table.part} keys: {', '.join(sorted(accepted))}"
        )
        where = "" if not path else f"{path[-1]}: "
        out.add(
            f"{where}unknown {table.part} key {quoted(name)} ({table.source}){hint}",
            (*path, key),
            key=True,
            code=UNKNOWN_KEY,
        )


def juju_style(data: Any) -> Style | None:
    """Which Juju file `data` is, by its keys; None for anything else. A top-level
    `applications:` or `services:` is a bundle (Juju 2+; juju-deployer 0.11 reads it as
    a version 4 bundle too); deployments that hold `services:` or `inherits:` make a
    juju-deployer file."""
    if not isinstance(data, dict) or "inventory" in data:
        return None
    if isinstance(data.get("applications"), dict) or isinstance(data.get("services"), dict):
        return "bundle"
    deployments = [v for k, v in data.items() if k not in DEPLOYER_TOP_KEYS]
    if deployments and all(
        isinstance(value, dict) and ("services" in value or "inherits" in value)
        for value in deployments
    ):
        return "deployer"
    return None


# Cheap signs in the text that a YAML file is a Juju file: its machine ids may be
# unquoted numbers, which a native spec refuses as keys. A deployment's `services:`
# may come after its other keys (series:, inherits:...).
_JUJU_TEXT = re.compile(
    r"^(?:applications|machines|services):"
    r"|^[^\s#][^:\n]*:[ \t]*\n(?:[ \t]*\n|[ \t]*#[^\n]*\n|[ \t]+[^\s#][^\n]*\n)*?[ \t]+services:",
    re.MULTILINE,
)


def looks_like_juju_text(text: str) -> bool:
    return bool(_JUJU_TEXT.search(text[:65536])) and not re.search(
        r"^inventory:", text[:65536], re.MULTILINE
    )


class NotJuju(SpecError):
    """The text is not a Juju file (the automatic reader then tries a native spec)."""


class JujuFileError(SpecError):
    """A Juju file's problems, with the directives `validate --portable` refuses kept
    aside, so that it can report them together with the rest."""

    def __init__(self, source: str, problems: list[Problem], portability: list[Problem]) -> None:
        self.portability = portability
        super().__init__(source, problems)

    def with_portability(self) -> SpecError:
        merged = sorted(
            [*self.problems, *self.portability],
            key=lambda p: (p.position.line, p.position.column) if p.position else (0, 0),
        )
        return SpecError(self.source, merged)


@dataclass
class Status:
    """What already runs: machines (each with its containers) and units with the machine
    or container each is on (None: no machine yet)."""

    machines: dict[str, list[str]] = field(default_factory=dict)
    units: dict[str, dict[str, str | None]] = field(default_factory=dict)


def read_status(text: str, source: str) -> Status:
    """`juju status --format yaml`, unchanged (Juju 1.x says services, 2+ applications)."""
    documents = parse(text, source, any_keys=True)
    problems: list[Problem] = []
    status = Status()
    for data, sources in documents:
        out = Collector(sources, problems)
        if not isinstance(data, dict):
            out.add("expected the mapping `juju status --format yaml` prints", ())
            continue
        machines = data.get("machines") or {}
        if not isinstance(machines, dict):
            out.add("expected a mapping of machine ids", ("machines",))
            machines = {}
        for machine_id, body in machines.items():
            containers = (body or {}).get("containers") if isinstance(body, dict) else None
            status.machines[str(machine_id)] = [
                str(c) for c in (containers or {}) if isinstance(containers, dict)
            ]
        applications = data.get("applications", data.get("services")) or {}
        if not isinstance(applications, dict):
            out.add("expected a mapping of applications", ("applications",))
            applications = {}
        for name, body in applications.items():
            units = (body or {}).get("units") if isinstance(body, dict) else None
            found: dict[str, str | None] = {}
            for unit, where in (units or {}).items() if isinstance(units, dict) else ():
                machine = where.get("machine") if isinstance(where, dict) else None
                found[str(unit)] = str(machine) if machine is not None else None
            status.units[str(name)] = found
    if problems:
        raise SpecError(source, problems)
    return status


@dataclass
class Service:
    name: str
    path: Path
    units: int  # units to add
    existing: list[str]  # units that run already, in numeric order
    entries: list[tuple[Directive, Path]]
    has_to: bool
    constraints: JujuConstraints | None
    subordinate: bool
    series: str | None
    wanted: int = 0  # num_units as the file gives it
    listed: int = 0  # entries in its to:, good and bad
    to_key: str = "to"
    # Built on the first question: a service's units are asked for by every unit placed
    # beside them (5,000 units `to: [base]`). A Service is not changed once it is made.
    _names: tuple[str, ...] | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def first(self) -> int:
        """The number of the first unit to add: after every existing one."""
        return max((unit_number(u) for u in self.existing), default=-1) + 1

    def unit_names(self) -> tuple[str, ...]:
        """Every unit, existing and to add, in numeric order."""
        if self._names is None:
            first = self.first
            self._names = (
                *self.existing,
                *(f"{self.name}/{first + i}" for i in range(self.units)),
            )
        return self._names


def unit_number(unit: str) -> int:
    tail = unit.rsplit("/", 1)[-1]
    return int(tail) if tail.isdigit() else -1


def _machine_sort_key(machine_id: str) -> tuple[int, str]:
    return (int(machine_id), "") if machine_id.isdigit() else (1 << 62, machine_id)


def read_juju(
    text: str,
    source: str,
    status: Status | None = None,
    style: Style | None = None,
    overlays: Sequence[tuple[str, str]] = (),
    force: bool = False,
) -> list[Spec]:
    """The specs a Juju file describes (one per deployment of a deployer file). A
    bundle's later documents, and the `overlays` ((text, source) of --overlay files),
    are merged into it as `juju deploy --overlay` merges them. `force`: keys the tool
    does not know are warnings on the specs (`Spec.notices`), as `juju deploy` ignores
    them, instead of errors."""
    documents = parse(text, source, any_keys=True)
    problems: list[Problem] = []
    specs: list[Spec] = []
    first = style or juju_style(documents[0][0])
    if first == "bundle":
        _overlay_only_in_base(documents[0][0], Collector(documents[0][1], problems))
    if first == "bundle" and (len(documents) > 1 or overlays):
        parts = [(data, sources, "") for data, sources in documents]
        for overlay_text, overlay_source in overlays:
            parts.extend(
                (data, sources, overlay_source)
                for data, sources in parse(overlay_text, overlay_source, any_keys=True)
            )
        data, merged = merge_overlays(parts, problems)
        spec = _bundle(data, source, status, _FileCollector(merged, problems))
        if spec is not None:
            specs.append(spec)
        documents = []
    elif overlays:
        problems.append(
            Problem(
                "--overlay merges into a bundle (applications:); this is a juju-deployer file",
                position=documents[0][1].value(()),
            )
        )
    for data, sources in documents:
        out = Collector(sources, problems)
        found = style or juju_style(data)
        if found == "bundle":
            spec = _bundle(data, source, status, out)
            if spec is not None:
                specs.append(spec)
        elif found == "deployer":
            specs.extend(_deployments(data, source, status, out))
        else:
            raise NotJuju(
                source,
                [
                    Problem(
                        "not a Juju file: expected a bundle (applications: or services:) "
                        "or a juju-deployer file (deployments with services:)",
                        position=sources.value(()),
                    )
                ],
            )
    for spec in specs:
        total = sum(w.units for w in spec.workloads)
        if total > MAX_TOTAL_UNITS:
            problems.append(
                Problem(
                    f"{spec.name}: the services ask for {total:,} units together; placed "
                    f"plans at most {MAX_TOTAL_UNITS:,} per file"
                )
            )
    unknown = list(dict.fromkeys(p for p in problems if p.code == UNKNOWN_KEY))
    bundle = first == "bundle"
    if force:
        problems = [p for p in problems if p.code != UNKNOWN_KEY]
        specs = _with_key_notices(specs, unknown, source, bundle)
    elif unknown:
        problems.insert(0, Problem(_refusal(len(unknown), bundle)))
    if problems:
        # A padded entry is planned for several units: its mistake is told once.
        raise JujuFileError(source, list(dict.fromkeys(problems)), non_portable(specs))
    return specs


def _refusal(count: int, bundle: bool) -> str:
    """What the unknown keys listed after it mean, and how to read the file anyway."""
    keys = f"{count} key{'s' if count != 1 else ''}"
    if not bundle:
        return (
            f"{keys} the file format does not know (below): one may be misspelt; --force "
            "reads the file with each a warning"
        )
    return (
        f"{keys} the bundle schema does not know (below): juju deploy ignores such keys "
        "(juju deploy --dry-run lists them as fields it ignores), and placed refuses them, "
        "as one may be misspelt; --force reads the file as juju deploy does, each such key "
        "a warning"
    )


def _with_key_notices(
    specs: list[Spec], unknown: list[Problem], source: str, bundle: bool
) -> list[Spec]:
    """Each spec with a warning for each unknown key of its part of the file (a deployer
    file's deployment, or the whole file), at the key's file, line and column."""
    tail = "ignored, as juju deploy ignores it" if bundle else "ignored (--force)"
    found: list[tuple[str, Notice]] = []
    for problem in unknown:
        where = problem.file or source
        if problem.position is not None:
            where += f":{problem.position.line}:{problem.position.column}"
        # The list of keys helps to fix a typo; a warning keeps the did-you-mean only.
        message = _KEY_LIST.sub("", problem.message)
        found.append(
            (problem.key, Notice(UNKNOWN_KEY, f"{where}: {problem.key}: {message}; {tail}"))
        )
    names = {spec.name for spec in specs}

    def mine(spec: Spec, key: str) -> bool:
        owner = next((n for n in names if key == n or key.startswith(f"{n}.")), None)
        return owner is None or owner == spec.name

    return [
        replace(spec, notices=(*spec.notices, *(n for key, n in found if mine(spec, key))))
        for spec in specs
    ]


_KEY_LIST = re.compile(r"; [a-z ]+ keys: .*\Z", re.DOTALL)


# -- overlays --------------------------------------------------------------------------


class _MergedSources(SourceMap):
    """Where each part of a merged bundle was written: the document (and file) that
    last set it, found by the longest path prefix that one owns."""

    def __init__(self, base: SourceMap) -> None:
        super().__init__()
        self.owners: dict[Path, tuple[SourceMap, str]] = {(): (base, "")}

    def own(self, prefix: Path, sources: SourceMap, file: str) -> None:
        for path in [p for p in self.owners if p[: len(prefix)] == prefix and p != prefix]:
            del self.owners[path]
        self.owners[prefix] = (sources, file)

    def owner(self, path: Path) -> tuple[SourceMap, str]:
        for length in range(len(path), -1, -1):
            found = self.owners.get(tuple(path[:length]))
            if found is not None:
                return found
        return self.owners[()]

    def value(self, path: Path) -> SourcePosition | None:
        return self.owner(path)[0].value(path)

    def key(self, path: Path) -> SourcePosition | None:
        return self.owner(path)[0].key(path)

    def inside(self, path: Path, offset: int) -> SourcePosition | None:
        return self.owner(path)[0].inside(path, offset)

    def scalar_text(self, path: Path) -> str | None:
        return self.owner(path)[0].scalar_text(path)


class _FileCollector(Collector):
    """Problems of a merged bundle, each naming the file of the part it is about."""

    def __init__(self, sources: _MergedSources, problems: list[Problem]) -> None:
        super().__init__(sources, problems)
        self.merged = sources

    def add(self, message: str, path: Path, key: bool = False, code: str = "") -> None:
        super().add(message, path, key, code)
        self._name_file(path)

    def add_inside(self, message: str, path: Path, offset: int) -> None:
        super().add_inside(message, path, offset)
        self._name_file(path)

    def _name_file(self, path: Path) -> None:
        file = self.merged.owner(path)[1]
        if file:
            self.problems[-1] = replace(self.problems[-1], file=file)


# ApplicationSpec's map fields: an overlay merges them key by key (overlay.go
# mergeStructs); every other field it sets replaces the base's.
_MAP_FIELDS = frozenset(
    (
        "options",
        "annotations",
        "storage",
        "devices",
        "bindings",
        "resources",
        "offers",
        "exposed-endpoints",
    )
)
# Fields only an overlay may hold (overlay.go VerifyNoOverlayFieldsPresent, the
# source:"overlay-only" tags of bundledata.go).
_OVERLAY_ONLY = ("offers", "exposed-endpoints")


def _empty(value: Any) -> bool:
    return value is None or value == {} or value == [] or value == ""


def _overlay_only_in_base(data: Any, out: Collector) -> None:
    """The fields only an overlay may set, in the base bundle: errors."""
    for section in ("applications", "services"):
        apps = data.get(section) if isinstance(data, dict) else None
        for name, app in apps.items() if isinstance(apps, dict) else ():
            for field_name in _OVERLAY_ONLY:
                if isinstance(app, dict) and not _empty(app.get(field_name)):
                    out.add(
                        f"{name}: {field_name} can only appear in an overlay (juju/charm "
                        "overlay.go VerifyNoOverlayFieldsPresent)",
                        (section, name, field_name),
                        key=True,
                    )


def merge_overlays(
    parts: list[tuple[Any, SourceMap, str]], problems: list[Problem]
) -> tuple[dict[str, Any], _MergedSources]:
    """The base bundle (the first part) with each later part merged in, as juju/charm
    overlay.go ReadAndMergeBundleData and applyOverlay do: an application the overlay
    leaves empty is removed, a new one is added, one in both is merged field by field
    (maps key by key, an empty map clearing the base's, other fields replaced); saas
    alike; a series replaces the base's, relations are appended, machines replace the
    base's whole."""
    base, base_sources, _ = parts[0]
    merged = _MergedSources(base_sources)
    data: dict[str, Any] = dict(base) if isinstance(base, dict) else {}
    key = "applications" if isinstance(data.get("applications"), dict) else "services"
    data[key] = dict(data.get(key) or {})
    for overlay, sources, file in parts[1:]:
        if overlay is None:
            continue
        here = Collector(sources, [])
        if not isinstance(overlay, dict):
            here.add("an overlay is a mapping, as a bundle is", ())
            problems.extend(replace(p, file=file) for p in here.problems)
            continue
        check_keys(overlay, BUNDLE_KEYS, (), here)
        if "services" in overlay:
            here.add(
                "an overlay names applications under applications:, not the deprecated "
                "services: (overlay.go applyOverlay)",
                ("services",),
                key=True,
            )
        problems.extend(replace(p, file=file) for p in here.problems)
        for section in ("applications", "saas"):
            given = overlay.get(section)
            if not isinstance(given, dict):
                continue
            target = key if section == "applications" else "saas"
            current = dict(data.get(target) or {})
            for name, spec in given.items():
                if _empty(spec):
                    current.pop(name, None)
                    continue
                old = current.get(name)
                if not isinstance(old, dict) or not isinstance(spec, dict):
                    current[name] = spec
                    merged.own((target, name), sources, file)
                    continue
                new = dict(old)
                for field_name, value in spec.items():
                    if field_name in _MAP_FIELDS and isinstance(value, dict) and value:
                        inner = dict(new.get(field_name) or {})
                        for entry, entry_value in value.items():
                            if entry_value is None or entry_value in ({}, []):
                                inner.pop(entry, None)
                            else:
                                inner[entry] = entry_value
                        new[field_name] = inner
                    elif field_name in _MAP_FIELDS and _empty(value):
                        new[field_name] = {}
                    else:
                        new[field_name] = value
                    merged.own((target, name, field_name), sources, file)
                current[name] = new
            data[target] = current
        if isinstance(overlay.get("series"), str) and overlay["series"]:
            data["series"] = overlay["series"]
            merged.own(("series",), sources, file)
        if overlay.get("machines") is not None:
            data["machines"] = overlay["machines"]
            merged.own(("machines",), sources, file)
        if isinstance(overlay.get("relations"), list):
            data["relations"] = [*(data.get("relations") or []), *overlay["relations"]]
    return data, merged


# -- reading the parts ---------------------------------------------------------------


def constraints_of(value: Any, path: Path, out: Collector) -> JujuConstraints | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        out.add(f'constraints are a string such as "cores=8 mem=16G", got {quoted(value)}', path)
        return None
    try:
        return parse_constraints(value)
    except ConstraintError as error:
        out.add_inside(f"invalid constraints: {error}", path, error.column - 1)
        return None


def _count(
    body: dict[str, Any], keys: tuple[str, ...], default: int, path: Path, out: Collector
) -> int:
    for key in keys:
        if key in body:
            value = body[key]
            if type(value) is not int or not 0 <= value <= MAX_UNITS:
                out.add(
                    f"{key} is a whole number from 0 to {MAX_UNITS:,}, got {quoted(value)}",
                    (*path, key),
                )
                return default
            return value
    return default


def _entries(
    value: Any, style: Style, name: str, path: Path, out: Collector
) -> list[tuple[Directive, Path]]:
    """The good entries of a `to:` (each with its place); every bad one is reported, and
    the good ones are still checked, so that all mistakes show at once."""
    listed = value if isinstance(value, list) else [value]
    found: list[tuple[Directive, Path]] = []
    for index, entry in enumerate(listed):
        where = (*path, index) if isinstance(value, list) else path
        try:
            found.append((parse_entry(entry, style), where))
        except DirectiveError as bad:
            text = bad.text or str(entry)
            out.add(f"{name}: to entry {quoted(text)}: {bad.message}", where)
    return found


def _services(
    apps: dict[str, Any], path: Path, style: Style, status: Status | None, out: Collector
) -> dict[str, Service]:
    services: dict[str, Service] = {}
    for name, body in apps.items():
        where = (*path, name)
        if body is None:
            body = {}
        if not isinstance(body, dict):
            out.add(f"a service is a mapping (charm, num_units, to...), got {quoted(body)}", where)
            continue
        existing = sorted((status.units.get(name, {}) if status else {}), key=unit_number)
        if style == "bundle":
            _check_application(name, body, where, out)
            # Kubernetes bundles say scale for num_units (bundledata.go normalizeData).
            keys = ("num_units",) if "num_units" in body else ("scale",)
            wanted = _count(body, keys, 0, where, out)
            subordinate = not wanted or body.get("subordinate") is True
        else:
            wanted = _count(body, ("num_units", "units"), 1, where, out)
            subordinate = body.get("subordinate") is True
        # juju-deployer reads the legacy force-machine where there is no to:
        # (deployer/service.py Service.unit_placement).
        to_key = "to" if body.get("to") is not None else "force-machine"
        has_to = body.get(to_key) is not None
        series = body.get("series")
        services[name] = Service(
            name=name,
            path=where,
            units=max(0, wanted - len(existing)),
            existing=existing,
            entries=_entries(body.get(to_key), style, name, (*where, to_key), out)
            if has_to
            else [],
            has_to=has_to,
            constraints=constraints_of(body.get("constraints"), (*where, "constraints"), out),
            subordinate=subordinate,
            series=str(series) if isinstance(series, str) else None,
            wanted=wanted,
            listed=len(raw) if isinstance((raw := body.get(to_key)), list) else int(has_to),
            to_key=to_key,
        )
    return services


def _check_application(name: str, body: dict[Any, Any], where: Path, out: Collector) -> None:
    check_keys(body, APPLICATION_KEYS, where, out, PLACED_APPLICATION_KEYS)
    if body.get("num_units") and body.get("scale"):
        out.add(
            f"{name}: give num_units or scale, not both (bundledata.go normalizeData)",
            (*where, "scale"),
            key=True,
        )
    if body.get("placement") is not None:
        out.add(
            f"{name}: placement: is for Kubernetes bundles; a machine bundle places units "
            "with to: (bundledata.go normalizeData)",
            (*where, "placement"),
            key=True,
        )
    for section, table in (("offers", OFFER_KEYS), ("exposed-endpoints", EXPOSED_ENDPOINT_KEYS)):
        entries = body.get(section)
        for entry, spec in entries.items() if isinstance(entries, dict) else ():
            if isinstance(spec, dict):
                check_keys(spec, table, (*where, section, entry), out)


def _existing_inventory(status: Status | None, always: tuple[str, ...]) -> list[Location]:
    """Machines that exist (with their containers, as targets beside them)."""
    machines: dict[str, list[str]] = {machine: [] for machine in always}
    if status is not None:
        machines.update(status.machines)
    roots: list[Location] = []
    for machine_id in sorted(machines, key=_machine_sort_key):
        roots.append(Location(machine_id, "machine"))
        for container in machines[machine_id]:
            kind = container.split("/")[1] if container.count("/") == 2 else "lxd"
            roots.append(Location(container, kind))
    return roots


def first_machine(ids: list[str]) -> int:
    return max((int(m) for m in ids if m.isdigit()), default=-1) + 1


def container_base(ids: list[str]) -> dict[str, int]:
    base: dict[str, int] = {}
    for container in ids:
        parts = container.split("/")
        if len(parts) == 3 and parts[2].isdigit():
            key = f"{parts[0]}/{parts[1]}"
            base[key] = max(base.get(key, 0), int(parts[2]) + 1)
    return base


# -- juju-deployer -------------------------------------------------------------------


def _deployments(
    data: dict[str, Any], source: str, status: Status | None, out: Collector
) -> list[Spec]:
    if isinstance(data.get("services"), dict):  # one deployment, without a name
        return [s for s in [_deployment("", data, source, status, out, ())] if s is not None]
    specs = []
    for name in data:
        if name in DEPLOYER_TOP_KEYS:
            continue
        body = data[name]
        if isinstance(body, dict):
            check_keys(body, DEPLOYMENT_KEYS, (name,), out)
            own = body.get("services")
            for service, config in own.items() if isinstance(own, dict) else ():
                if isinstance(config, dict):
                    check_keys(
                        config,
                        DEPLOYER_SERVICE_KEYS,
                        (name, "services", service),
                        out,
                        PLACED_SERVICE_KEYS,
                    )
        resolved = _inherited(name, data, (name,), out)
        spec = _deployment(name, resolved, source, status, out, (name,))
        if spec is not None:
            specs.append(spec)
    return specs


def _inherited(name: str, data: dict[str, Any], path: Path, out: Collector) -> dict[str, Any]:
    """A deployment with what it `inherits:` merged in (each service's keys override)."""
    chain: list[str] = []
    current: str | None = name
    while current is not None:
        if current in chain:
            out.add(f"inherits: {' -> '.join([*chain, current])} is a cycle", (*path, "inherits"))
            break
        chain.append(current)
        body = data.get(current)
        if not isinstance(body, dict):
            out.add(f"inherits: no deployment named {quoted(current)}", (*path, "inherits"))
            break
        parent = body.get("inherits")
        if isinstance(parent, list):
            parent = parent[0] if parent else None
        current = parent if isinstance(parent, str) else None
    merged: dict[str, Any] = {"services": {}}
    for part in reversed(chain):
        body = data.get(part)
        if not isinstance(body, dict):
            continue
        for key, value in body.items():
            if key == "services" and isinstance(value, dict):
                for service, config in value.items():
                    base = merged["services"].get(service) or {}
                    merged["services"][service] = (
                        {**base, **config} if isinstance(config, dict) else config
                    )
            elif key != "inherits":
                merged[key] = value
    return merged


def _deployment(
    name: str,
    body: dict[str, Any],
    source: str,
    status: Status | None,
    out: Collector,
    path: Path,
) -> Spec | None:
    apps = body.get("services")
    if not isinstance(apps, dict):
        out.add("a deployment needs services: (a mapping of services)", path)
        return None
    services = _services(apps, (*path, "services"), "deployer", status, out)
    series = body.get("series") if isinstance(body.get("series"), str) else None
    roots = _existing_inventory(status, ("0",))
    machine_ids = [r.id for r in roots if r.kind == "machine"]
    container_ids = [r.id for r in roots if r.kind != "machine"]
    workloads = []
    # juju-deployer places services without `to:` first, then the rest, each by name; a
    # target is never itself placed (nested placement is an error), so this is also an
    # order in which every target comes first.
    for service in sorted(services.values(), key=lambda s: (s.has_to, s.name)):
        if service.subordinate:
            continue
        directed = _deployer_plans(service, services, status, out)
        directed = replace(
            directed,
            series=service.series or series,
            first_machine=first_machine(machine_ids),
            container_base=container_base(container_ids),
        )
        workloads.append(_workload(service, directed))
    return _spec(roots, workloads, source, name or "deployment", status)


def _deployer_plans(
    service: Service, services: dict[str, Service], status: Status | None, out: Collector
) -> Directed:
    plans: dict[str, UnitPlan] = {}
    names = service.unit_names()
    existing = set(service.existing)
    extra: list[str] = []
    beside: _Beside = {}
    for index, (entry, where) in enumerate(service.entries):
        if index >= len(names):
            # No unit to place, but still a mistake to report (an unknown target...).
            extra.append(str(entry))
            _plan(service, entry, index, where, services, status, out, "deployer", {}, beside)
            continue
        unit = names[index]
        if unit in existing:
            continue  # it runs already
        plan = _at(
            _plan(service, entry, index, where, services, status, out, "deployer", {}, beside),
            where,
            out,
        )
        if plan is not None:
            plans[unit] = plan
    return Directed(plans, new_machines=True, constraints=service.constraints, extra=tuple(extra))


# -- bundles -------------------------------------------------------------------------


def _bundle(
    data: dict[str, Any], source: str, status: Status | None, out: Collector
) -> Spec | None:
    key = "applications" if isinstance(data.get("applications"), dict) else "services"
    apps = data[key]
    check_keys(data, BUNDLE_KEYS, (), out)
    if isinstance(data.get("applications"), dict) and isinstance(data.get("services"), dict):
        out.add(
            "give applications: or the legacy services:, not both (juju/charm legacyBundleData)",
            ("services",),
            key=True,
        )
    saas = data.get("saas")
    for name, spec in saas.items() if isinstance(saas, dict) else ():
        if isinstance(spec, dict):
            check_keys(spec, SAAS_KEYS, ("saas", name), out)
    services = _services(apps, (key,), "bundle", status, out)
    declared_raw = data.get("machines") or {}
    if not isinstance(declared_raw, dict):
        out.add("machines: is a mapping of machine ids", ("machines",))
        declared_raw = {}
    roots = _existing_inventory(status, ())
    existing_ids = [r.id for r in roots if r.kind == "machine"]
    default_series = data.get("series") if isinstance(data.get("series"), str) else None
    specs: dict[str, tuple[JujuConstraints | None, str | None]] = {}
    named = [m for m in declared_raw if str(m).isdigit()]
    for bad in (m for m in declared_raw if not str(m).isdigit()):
        out.add(
            f"machine {quoted(bad)}: a bundle machine id is a number", ("machines", bad), key=True
        )
    for machine in sorted(named, key=int):
        body = declared_raw[machine] or {}
        where: Path = ("machines", machine)
        if isinstance(body, dict):
            check_keys(body, MACHINE_KEYS, where, out)
        constraints = (
            constraints_of(body.get("constraints"), (*where, "constraints"), out)
            if isinstance(body, dict)
            else None
        )
        series = body.get("series") if isinstance(body, dict) else None
        specs[str(machine)] = (constraints, series if isinstance(series, str) else default_series)
    _check_bundle_entries(services, specs, default_series, out)
    machine_map = _machine_map(services, specs, status)
    taken = {
        name: _assign(service, machine_map, status)
        for name, service in services.items()
        if not service.subordinate
    }
    needed = {
        entry.machine
        for assignment in taken.values()
        for _, (entry, _) in assignment
        if isinstance(entry, OnMachine)
    }
    # Declared machines are created first, in the natural order of their ids, and take
    # the model's next numbers; one an existing unit stands on is that unit's machine
    # (bundlechanges InferMachineMap).
    declared: dict[str, str] = dict(machine_map)
    notes: dict[str, list[tuple[str, str]]] = {}
    number = first_machine(existing_ids)
    for machine, (constraints, series) in specs.items():
        if machine in machine_map:
            continue
        if machine not in needed:
            if status is not None:
                # Juju refuses this (bundlechanges InconsistentMachineMapError); placed
                # says so rather than plan a machine nothing goes on.
                owner = next(
                    (
                        name
                        for name, service in sorted(services.items())
                        if any(
                            isinstance(e, OnMachine) and e.machine == machine
                            for e, _ in service.entries
                        )
                    ),
                    None,
                )
                if owner is not None:
                    notes.setdefault(owner, []).append(
                        (
                            "unmapped-machine",
                            f"bundle machine {machine}: what it hosts runs already, and no "
                            "existing unit tells which model machine it is; it is not added "
                            "(juju deploy asks for --map-machines here)",
                        )
                    )
            continue
        properties: dict[str, Property] = {DECLARED: Property(DECLARED, True)}
        if constraints is not None:
            properties[DECLARED_CONSTRAINTS] = Property(DECLARED_CONSTRAINTS, str(constraints))
        if isinstance(series, str):
            properties["series"] = Property("series", series)
        declared[machine] = str(number)
        roots.append(Location(str(number), "machine", properties=properties))
        number += 1
    order = _bundle_order(services, out)
    container_ids = [r.id for r in roots if r.kind not in ("machine",)]
    workloads = []
    for service in order:
        if service.subordinate:
            if service.has_to:
                out.add(
                    f"{service.name} is a subordinate (no num_units): it runs beside its "
                    "principal and takes no to:",
                    (*service.path, service.to_key),
                )
            continue
        directed = bundle_plans(service, services, declared, status, out, taken[service.name])
        directed = replace(
            directed,
            series=service.series or default_series,
            first_machine=number,
            container_base=container_base(container_ids),
            notes=tuple(notes.get(service.name, ())),
        )
        workloads.append(_workload(service, directed))
    return _spec(roots, workloads, source, "bundle", status)


def _check_bundle_entries(
    services: dict[str, Service],
    specs: Mapping[str, tuple[JujuConstraints | None, str | None]],
    default_series: str | None,
    out: Collector,
) -> None:
    """Juju's verifier on every entry, those past num_units included (juju/charm
    bundledata.go verifyPlacement), and the series a machine takes a unit of
    (juju/juju state/unit.go assignToMachine: "series does not match")."""
    used: set[str] = set()
    for service in services.values():
        if service.listed > service.wanted and not service.subordinate:
            out.add(
                f"{service.name}: too many units specified in unit placement: "
                f"{service.listed} to: entries for {service.wanted} unit"
                f"{'s' if service.wanted != 1 else ''} (juju deploy refuses the bundle)",
                (*service.path, service.to_key),
            )
        mine = service.series or default_series
        for entry, where in service.entries:
            if isinstance(entry, WithUnit):
                target = services.get(entry.service)
                if target is None:
                    out.add(
                        f"{service.name}: to entry {quoted(str(entry))}: placement refers to "
                        f"an application not defined in this bundle ({entry.service})",
                        where,
                    )
                elif entry.index is not None and entry.index >= target.wanted:
                    out.add(
                        f"{service.name}: to entry {quoted(str(entry))}: the bundle starts "
                        f"{target.wanted} unit{'s' if target.wanted != 1 else ''} of "
                        f"{entry.service}, so there is no {entry.service}/{entry.index}",
                        where,
                    )
            if not isinstance(entry, OnMachine):
                continue
            used.add(entry.machine)
            if entry.machine not in specs:
                out.add(
                    f"{service.name}: to entry {quoted(str(entry))}: machine "
                    f"{entry.machine} is not declared under machines:",
                    where,
                )
                continue
            theirs = specs[entry.machine][1]
            if entry.container is None and mine and theirs and mine != theirs:
                out.add(
                    f"{service.name}: to entry {quoted(str(entry))}: machine {entry.machine} "
                    f"is declared with series {theirs} and {service.name} deploys {mine}; "
                    "Juju puts a unit only on a machine of its series",
                    where,
                )
    for machine in specs:
        if machine not in used:
            out.add(
                f"machine {machine} is declared but no application is placed on it",
                ("machines", machine),
                key=True,
            )


def _top(machine: str) -> str:
    return machine.split("/", 1)[0]


def _unit_on(units: Mapping[str, str | None], machine: str, container: str | None) -> str | None:
    """A unit of these on the machine itself (no container), or in a container of that
    kind on it (bundlechanges model.go getAppUnitOnMachine)."""
    for unit in sorted(units, key=unit_number):
        where = units[unit]
        if where is None:
            continue
        parts = where.split("/")
        if container is None and where == machine:
            return unit
        if container is not None and len(parts) == 3 and parts[0:2] == [machine, container]:
            return unit
    return None


def _machine_map(
    services: dict[str, Service],
    specs: Mapping[str, object],
    status: Status | None,
) -> dict[str, str]:
    """Which declared machines are machines of the model already, as bundlechanges
    infers it (model.go InferMachineMap): a machine an entry names where a unit of that
    application already stands (in a container of the entry's kind) is that machine;
    then each other declared machine takes the machine of the first unit of an
    application placed on it that no entry has accounted for."""
    if status is None:
        return {}
    mapping: dict[str, str] = {}
    initial: set[str] = set()
    used: dict[str, set[str]] = {}
    unused: dict[str, list[Directive]] = {}
    for name in sorted(services):
        mine = status.units.get(name, {})
        left: list[Directive] = []
        for entry, _ in services[name].entries:
            if isinstance(entry, OnMachine) and entry.machine not in mapping:
                unit = _unit_on(mine, entry.machine, entry.container)
                if unit is not None and entry.machine in specs:
                    mapping[entry.machine] = entry.machine
                    initial.add(entry.machine)
                    used.setdefault(name, set()).add(unit)
                    continue
            left.append(entry)
        unused[name] = sorted(left, key=str)
    for machine in sorted(specs, key=int):
        if machine in mapping:
            continue
        found = None
        for name in sorted(services):
            if not any(isinstance(e, OnMachine) and e.machine == machine for e in unused[name]):
                continue
            mine = status.units.get(name, {})
            for unit in sorted(mine, key=unit_number):
                where = mine[unit]
                if where is None or unit in used.get(name, set()) or _top(where) in initial:
                    continue
                found = (name, unit, _top(where))
                break
            if found is not None:
                break
        if found is not None:
            name, unit, top = found
            mapping[machine] = top
            used.setdefault(name, set()).add(unit)
    return mapping


def _satisfied(entry: Directive, name: str, machine_map: Mapping[str, str], status: Status) -> bool:
    """Whether a unit of `name` that runs already stands where the entry asks
    (bundlechanges model.go unsatisfiedMachineAndUnitPlacements)."""
    mine = status.units.get(name, {})
    if isinstance(entry, OnMachine):
        machine = machine_map.get(entry.machine, entry.machine)
        return _unit_on(mine, machine, entry.container) is not None
    if isinstance(entry, WithUnit) and entry.index is not None:
        there = status.units.get(entry.service, {}).get(f"{entry.service}/{entry.index}")
        return there is not None and _unit_on(mine, there, entry.container) is not None
    return False


Assignment = list[tuple[str, tuple[Directive, Path]]]


def _pads(entries: list[tuple[Directive, Path]]) -> bool:
    """A short list is padded with its last entry when that entry can serve many units
    (new, kind:new, a bare application name), as Juju does; after a machine or an
    app/N entry the units left get default placement."""
    return bool(entries) and (
        isinstance(entries[-1][0], NewMachine)
        or (isinstance(entries[-1][0], WithUnit) and entries[-1][0].index is None)
    )


def _assign(service: Service, machine_map: Mapping[str, str], status: Status | None) -> Assignment:
    """The entry each unit to add takes in a bundle: entry i is unit i's when nothing
    runs; units that run use up the entries they satisfy, and the units to add take the
    others in order (bundlechanges handlers.go placeUnitsForApplication)."""
    entries = service.entries
    names = service.unit_names()[len(service.existing) :]
    left = entries
    if status is not None and service.existing:
        left = [e for e in entries if not _satisfied(e[0], service.name, machine_map, status)]
    found: Assignment = []
    for index, unit in enumerate(names):
        if index < len(left):
            found.append((unit, left[index]))
        elif _pads(entries):
            found.append((unit, entries[-1]))
    return found


def _bundle_order(services: dict[str, Service], out: Collector) -> list[Service]:
    """Name order, in passes: each application after every application it names."""
    needs = {
        name: {
            entry.service
            for entry, _ in service.entries
            if isinstance(entry, WithUnit) and entry.service in services
        }
        for name, service in services.items()
    }
    placed: list[str] = []
    remaining = sorted(services)
    while remaining:
        ready = [name for name in remaining if needs[name] <= set(placed)]
        if not ready:
            for name in remaining:
                service = services[name]
                loop = sorted(needs[name] & set(remaining))
                out.add(
                    f"{name}: its to: and {', '.join(loop)}'s form a cycle; each waits for "
                    "the other to be placed",
                    (*service.path, "to"),
                )
            break
        progressed = []
        for name in remaining:
            if needs[name] <= set(placed):
                placed.append(name)
                progressed.append(name)
        remaining = [name for name in remaining if name not in progressed]
    return [services[name] for name in placed]


def bundle_plans(
    service: Service,
    services: dict[str, Service],
    declared: Mapping[str, str] | None,
    status: Status | None,
    out: Collector,
    assignment: Assignment | None = None,
    positions: bool = True,
) -> Directed:
    """The plan of each unit to add. A bundle (`declared` given) passes the entry each
    unit takes (`_assign`); every other entry is still read for its mistakes. A native
    spec's `to:` gives entry i to unit i, units that run taking the first ones.
    `positions`: record each plan's line and column (a native spec does not: only a
    deployer file's --portable errors read them, and finding them composes the whole
    file's node tree, seconds at 100,000 targets)."""
    plans: dict[str, UnitPlan] = {}
    names = service.unit_names()
    existing = set(service.existing)
    entries = service.entries
    counters: dict[str, int] = {}
    beside: _Beside = {}

    def read(entry: Any, index: int, where: Path, counts: dict[str, int]) -> UnitPlan | None:
        return _plan(
            service, entry, index, where, services, status, out, "bundle", counts, beside, declared
        )

    if assignment is not None:
        used: set[Path] = set()
        for index, (unit, (entry, where)) in enumerate(assignment):
            used.add(where)
            plan = _at(read(entry, index, where, counters), where, out)
            if plan is not None:
                plans[unit] = plan
        for index, (entry, where) in enumerate(entries):
            if where not in used:
                read(entry, index, where, dict(counters))  # for its mistakes only
        return Directed(plans, new_machines=True, constraints=service.constraints, style="bundle")
    extra = [str(entry) for entry, _ in entries[len(names) :]]
    pads = _pads(entries)
    for index, unit in enumerate(names):
        if index >= len(entries) and not pads:
            break
        entry, where = entries[min(index, len(entries) - 1)]
        if unit in existing:
            continue
        plan = read(entry, index, where, counters)
        if positions:
            plan = _at(plan, where, out)
        if plan is not None:
            plans[unit] = plan
    return Directed(
        plans,
        new_machines=True,
        constraints=service.constraints,
        style="bundle",
        extra=tuple(extra),
    )


# -- one entry -----------------------------------------------------------------------


def _at(plan: UnitPlan | None, where: Path, out: Collector) -> UnitPlan | None:
    """The plan with the line and column of its entry (for --portable's errors)."""
    position = out.sources.value(where)
    if plan is None or position is None:
        return plan
    return replace(plan, at=(position.line, position.column))


# The units of each service named beside, with their set: read once per service placed,
# not once per unit (which made `to: [base]` quadratic in base's units).
_Beside = dict[str, tuple[Sequence[str], frozenset[str]]]


def _units_beside(
    name: str,
    target: Service | None,
    running: Mapping[str, str | None] | None,
    beside: _Beside,
) -> tuple[Sequence[str], frozenset[str]]:
    found = beside.get(name)
    if found is None:
        units = (
            target.unit_names() if target is not None else sorted(running or {}, key=unit_number)
        )
        found = beside[name] = (units, frozenset(units))
    return found


def _plan(
    service: Service,
    entry: Directive,
    index: int,
    where: Path,
    services: dict[str, Service],
    status: Status | None,
    out: Collector,
    style: Style,
    counters: dict[str, int],
    beside: _Beside,
    declared: Mapping[str, str] | None = None,
) -> UnitPlan | None:
    written = str(entry)
    if isinstance(entry, OnMachine):
        machine = entry.machine if declared is None else declared.get(entry.machine)
        if machine is None:
            return None  # reported with the machines section
        return UnitPlan(written, machine=machine, container=entry.container)
    if isinstance(entry, NewMachine):
        return UnitPlan(written, new=True, container=entry.container)
    if isinstance(entry, UnitConstraints):
        return UnitPlan(written, constraints=entry.constraints)
    if isinstance(entry, ProviderPlacement):
        # A unit's own constraint, which (like per-unit constraints) replaces the
        # service's for that unit.
        own = (
            JujuConstraints(zones=(entry.value,))
            if entry.kind == "zone"
            else JujuConstraints(maas_name=entry.value)
        )
        return UnitPlan(written, constraints=own)
    # Beside a unit of another service.
    name = f"{service.name}: to entry {quoted(written)}"
    if entry.service == service.name:
        out.add(f"{name}: a service cannot be placed beside itself (a cycle)", where)
        return None
    target = services.get(entry.service)
    running = status.units.get(entry.service) if status is not None else None
    if declared is not None and (
        target is None or (entry.index is not None and entry.index >= target.wanted)
    ):
        return None  # Juju's verifier refuses it: reported with the bundle's entries
    if target is None and not running:
        known = ", ".join(sorted(services)) or "none"
        out.add(f"{name}: no service named {quoted(entry.service)} (services: {known})", where)
        return None
    if target is not None and target.subordinate:
        out.add(
            f"{name}: {entry.service} is a subordinate; it has no machine of its own to "
            "place beside",
            where,
        )
        return None
    if style == "deployer" and target is not None and target.has_to:
        targets = ", ".join(str(e) for e, _ in target.entries) or "its to:"
        out.add(
            f"{name}: nested placement: {entry.service} has its own to: ({targets}), and "
            f"juju-deployer places no unit beside a unit that is itself placed "
            f"({service.name} -> {entry.service} -> ...)",
            where,
        )
        return None
    units, unit_set = _units_beside(entry.service, target, running, beside)
    if style == "deployer":
        ordinal = entry.index if entry.index is not None else index
        if ordinal >= len(units):
            return UnitPlan(
                written,
                container=entry.container,
                fallback=f"{entry.service} has {len(units)} unit{'s' if len(units) != 1 else ''}, "
                f"none with index {ordinal}",
                fallback_code="fewer-target-units",
            )
        return UnitPlan(written, beside=units[ordinal], container=entry.container)
    if entry.index is not None:
        wanted = f"{entry.service}/{entry.index}"
        if wanted not in unit_set:
            return UnitPlan(
                written,
                container=entry.container,
                fallback=f"{entry.service} has no unit {wanted}",
                fallback_code="fewer-target-units",
            )
        return UnitPlan(written, beside=wanted, container=entry.container)
    position = counters.get(entry.service, 0)
    counters[entry.service] = position + 1
    if position >= len(units):
        return UnitPlan(
            written,
            container=entry.container,
            fallback=f"{entry.service} has {len(units)} unit{'s' if len(units) != 1 else ''}, "
            f"all taken by earlier units of {service.name}",
            fallback_code="fewer-target-units",
        )
    return UnitPlan(written, beside=units[position], container=entry.container)


def _workload(service: Service, directed: Directed) -> Workload:
    return Workload(
        name=service.name,
        units=service.units,
        mode="allocation",
        requests=(directed,),
        first=service.first,
    )


def _spec(
    roots: list[Location],
    workloads: list[Workload],
    source: str,
    name: str,
    status: Status | None,
) -> Spec:
    known = {root.id for root in roots}
    running = tuple(
        Running(app, unit, machine)
        for app, units in (status.units.items() if status is not None else ())
        for unit, machine in sorted(units.items(), key=lambda pair: unit_number(pair[0]))
        if machine is not None and machine in known
    )
    return Spec(
        Inventory.from_roots(tuple(roots)), tuple(workloads), Settings(), source, name, running
    )


def non_portable(specs: list[Spec]) -> list[Problem]:
    """Directives that name a machine other than 0 (deployer style), as errors: what
    `placed validate --portable` refuses, as the charm store's validation would."""
    problems = []
    for spec in specs:
        for workload in spec.workloads:
            directed = workload.request(Directed)
            if directed is None or directed.style != "deployer":
                continue
            for unit, plan in directed.units.items():
                if plan.machine is not None and plan.machine != "0":
                    problems.append(
                        Problem(
                            f"{workload.name}: to entry {quoted(plan.written)} ({unit}) names "
                            f"machine {plan.machine}; only machine 0 is portable across "
                            "environments",
                            position=SourcePosition(*plan.at) if plan.at else None,
                        )
                    )
    return problems


def read_overlay(path: str) -> str:
    """The text of a bundle overlay file (raises SpecError)."""
    try:
        return read_bounded(path, path)
    except FileNotFoundError:
        raise SpecError(path, [Problem("no such file")]) from None
    except OSError as error:
        raise SpecError(path, [Problem(f"cannot read: {error.strerror or error}")]) from None


def load_status(path: str) -> Status:
    """A `juju status --format yaml` file (raises SpecError)."""
    try:
        text = read_bounded(path, path)
    except FileNotFoundError:
        raise SpecError(path, [Problem("no such file")]) from None
    except OSError as error:
        raise SpecError(path, [Problem(f"cannot read: {error.strerror or error}")]) from None
    return read_status(text, path)
