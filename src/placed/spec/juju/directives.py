"""Juju placement directives (the `to:` key of a service), as typed values.

Two styles, one function each:

  deployer   juju-deployer's bundles: `[container:]target[=N]`, where target is a
             machine number or a service; `svc=N` is the N-th existing unit of svc in
             numeric order. Also `zone=NAME`, `maas=NODE` and `constraints: ...`.
  bundle     Juju's bundle format (charm.ParsePlacement):
             `[container:](service[/N] | machine | new)`; also the three above.

Both styles share one shape, `[kind:]target[(=|/)rest]`, matched by one regular
expression that always matches and only locates the parts; each style's function then
decides what the parts mean and says, with the column, what is wrong in user terms.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, TypeAlias

from placed.model.juju_constraints import (
    CONTAINERS,
    NAME,
    NODE,
    ConstraintError,
    Container,
    JujuConstraints,
    parse_constraints,
    quoted,
)

__all__ = [
    "CONTAINERS",
    "MAX_ENTRY_LENGTH",
    "Container",
    "Directive",
    "DirectiveError",
    "DirectivesError",
    "NewMachine",
    "OnMachine",
    "ProviderPlacement",
    "Style",
    "UnitConstraints",
    "WithUnit",
    "parse_bundle",
    "parse_deployer",
    "parse_entry",
    "parse_to",
]

Style: TypeAlias = Literal["deployer", "bundle"]

MAX_ENTRY_LENGTH = 1000
# Machine numbers and unit indexes: nine digits is far past any real model and keeps
# every index a small int.
MAX_INDEX_DIGITS = 9


class DirectiveError(ValueError):
    """An invalid placement entry. `column` is 1-based, into `text` (the entry as a
    string; a YAML int is read as its decimal digits)."""

    def __init__(self, message: str, column: int, text: str = "") -> None:
        self.message = message
        self.column = column
        self.text = text
        super().__init__(f"{message} (column {column})")


class DirectivesError(ValueError):
    """Every bad entry of a `to:` value, as (index into the list, error); a scalar
    `to:` is entry 0."""

    def __init__(self, errors: list[tuple[int, DirectiveError]]) -> None:
        self.errors = errors
        lines = [f"  to[{index}]: {error}" for index, error in errors]
        count = f"{len(errors)} bad placement" + ("" if len(errors) == 1 else "s")
        super().__init__("\n".join([f"{count} in to:", *lines]))


@dataclass(frozen=True, slots=True)
class OnMachine:
    """A unit on machine `machine` (digits), or in a new container on it."""

    machine: str
    container: Container | None = None

    @property
    def portable(self) -> bool:
        # juju-deployer: only machine 0 exists in every environment. Bundle-style
        # machine numbers name entries of the bundle's machines section instead.
        return self.machine == "0"

    def __str__(self) -> str:
        return _prefixed(self.container, self.machine)


@dataclass(frozen=True, slots=True)
class WithUnit:
    """A unit beside a unit of another service (or in a new container beside it).

    ordinal=True (deployer style): `index` counts the service's existing units in
    numeric order of their unit numbers, from 0; a bare `svc` pairs units by position.
    ordinal=False (bundle style): `index` is the unit number, as in svc/N; a bare `svc`
    takes the next unit number after the previous entry for svc. index None: bare.
    """

    service: str
    index: int | None = None
    container: Container | None = None
    ordinal: bool = False

    def __str__(self) -> str:
        if self.index is None:
            target = self.service
        else:
            target = f"{self.service}{'=' if self.ordinal else '/'}{self.index}"
        return _prefixed(self.container, target)


@dataclass(frozen=True, slots=True)
class NewMachine:
    """Bundle style `new`: a unit on a new machine, or in a container on one."""

    container: Container | None = None

    def __str__(self) -> str:
        return _prefixed(self.container, "new")


@dataclass(frozen=True, slots=True)
class ProviderPlacement:
    """A placement the cloud provider reads: an availability zone, or a MAAS node."""

    kind: Literal["zone", "maas"]
    value: str

    def __str__(self) -> str:
        return f"{self.kind}={self.value}"


@dataclass(frozen=True, slots=True)
class UnitConstraints:
    """A unit on a new machine chosen by these constraints (juju-deployer's proposed
    per-unit syntax, `constraints: cpu-cores=8`)."""

    constraints: JujuConstraints

    def __str__(self) -> str:
        return f"constraints: {self.constraints}"


Directive: TypeAlias = OnMachine | WithUnit | NewMachine | ProviderPlacement | UnitConstraints


def _prefixed(container: Container | None, target: str) -> str:
    return f"{container}:{target}" if container else target


# ---------------------------------------------------------------- the shared shape

# Always matches; the groups only locate the parts. kind cannot hold '/' or '=', so
# that in `zone=a:b` the ':' is found inside the zone name, where it is wrong.
_SHAPE = re.compile(
    r"(?:(?P<kind>[^:/=]*):)?(?P<target>[^/=]*)(?:(?P<sep>[/=])(?P<rest>.*))?", re.DOTALL
)
_CONSTRAINTS = re.compile(r"constraints:\s*")
_DIGITS = re.compile(r"[0-9]+")
# Juju's names.IsValidApplication.
_SERVICE = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]*[a-z][a-z0-9]*)*")
_SERVICE_CHAR = re.compile(r"[a-z0-9-]")
_PROVIDERS = ("zone", "maas")


@dataclass(frozen=True, slots=True)
class _Parts:
    kind: str | None
    target: str
    target_column: int
    sep: str | None
    rest: str
    rest_column: int


class _Entry:
    """One entry being parsed: its text, for every error's message and column."""

    def __init__(self, text: str) -> None:
        self.text = text

    def error(self, reason: str, column: int) -> DirectiveError:
        return DirectiveError(
            f"{quoted(self.text)} is not a placement: {reason}", column, self.text
        )

    def prelude(self) -> Directive | None:
        """The checks both styles make first; a UnitConstraints when that is the entry."""
        text = self.text
        if len(text) > MAX_ENTRY_LENGTH:
            raise self.error(
                f"it is longer than {MAX_ENTRY_LENGTH} characters", MAX_ENTRY_LENGTH + 1
            )
        if not text.strip():
            raise self.error(
                "it is empty; give a machine number or a service name, as in 0 or wordpress",
                1,
            )
        prefix = _CONSTRAINTS.match(text)
        if prefix is not None:
            return self.unit_constraints(prefix.end())
        if _CONSTRAINTS.match(text.lower()):
            raise self.error("write 'constraints:' in lower case", 1)
        blank = next(offset for offset, char in enumerate(text + " ") if char.isspace())
        if blank < len(text):
            raise self.error("a placement has no blanks", blank + 1)
        return None

    def unit_constraints(self, start: int) -> UnitConstraints:
        body = self.text[start:]
        try:
            constraints = parse_constraints(body)
        except ConstraintError as error:
            raise DirectiveError(
                f"{quoted(self.text)} has bad constraints: {error.message}",
                start + error.column,
                self.text,
            ) from None
        if constraints.is_empty:
            raise self.error(
                "'constraints:' needs at least one key=value after it, as in constraints: mem=16G",
                start + 1,
            )
        return UnitConstraints(constraints)

    def parts(self) -> _Parts:
        match = _SHAPE.fullmatch(self.text)
        assert match is not None, "the shape matches any text"
        target = match.group("target")
        colon = target.find(":")
        if colon >= 0:
            raise self.error(
                "only one ':' may appear, after a container kind, as in lxc:wordpress",
                match.start("target") + colon + 1,
            )
        return _Parts(
            kind=match.group("kind"),
            target=target,
            target_column=match.start("target") + 1,
            sep=match.group("sep"),
            rest=match.group("rest") or "",
            rest_column=(match.start("rest") + 1) if match.group("sep") else 0,
        )

    def container(self, parts: _Parts) -> Container | None:
        kind = parts.kind
        if kind is None:
            return None
        for known in CONTAINERS:
            if kind == known:
                if not parts.target and parts.sep is None:
                    raise self.error(
                        f"nothing follows '{kind}:'; name a machine or a service, as in "
                        f"{kind}:0 or {kind}:wordpress",
                        len(kind) + 2,
                    )
                return known
        if not kind:
            raise self.error(
                "nothing comes before ':'; a container kind goes there, as in lxc:wordpress",
                1,
            )
        hint = ""
        if kind.lower() in CONTAINERS:
            hint = f" (container kinds are lower case: {kind.lower()})"
        elif kind in _PROVIDERS:
            hint = f" ({kind} is written {kind}=NAME)"
        raise self.error(f"unknown container kind {quoted(kind)}; use lxc, lxd or kvm{hint}", 1)

    def provider(self, parts: _Parts, container: Container | None) -> ProviderPlacement:
        kind: Literal["zone", "maas"] = "zone" if parts.target == "zone" else "maas"
        if container is not None:
            raise self.error(
                f"a container kind cannot come before {kind}=; "
                f"the provider chooses the machine, as in {kind}={_example(kind)}",
                1,
            )
        value = parts.rest
        what = "an availability zone" if kind == "zone" else "a MAAS node name"
        if not value:
            raise self.error(
                f"nothing follows '{kind}='; give {what}, as in {kind}={_example(kind)}",
                parts.rest_column,
            )
        pattern = NAME if kind == "zone" else NODE
        if not pattern.fullmatch(value):
            allowed = "'.', '_', '/', '-'" if kind == "zone" else "'.', '_', '-'"
            bad = _first_bad(value, pattern)
            raise self.error(
                f"{quoted(value)} is not {what}: it starts with a letter or digit and has "
                f"letters, digits and {allowed}",
                parts.rest_column + bad,
            )
        return ProviderPlacement(kind, value)

    def machine(self, parts: _Parts) -> str:
        number = parts.target
        self.number(number, parts.target_column, "a machine number")
        if parts.sep == "=":
            raise self.error(
                "'=N' picks a unit of a service, and a machine has no units to pick; "
                f"write {number} alone",
                parts.rest_column - 1,
            )
        if parts.sep == "/":
            raise self.error(
                "a machine number takes no '/N'; to put the unit in a container on "
                f"machine {number}, write lxd:{number}",
                parts.rest_column - 1,
            )
        return number

    def number(self, digits: str, column: int, what: str) -> int:
        if len(digits) > MAX_INDEX_DIGITS:
            raise self.error(f"{what} has at most {MAX_INDEX_DIGITS} digits", column)
        if len(digits) > 1 and digits.startswith("0"):
            raise self.error(
                f"{what} has no leading zeros: write {int(digits)}, not {digits}",
                column,
            )
        return int(digits)

    def index(self, parts: _Parts) -> int:
        if parts.sep == "=":
            number, what, example = "an index", "an index after '='", "wordpress=2"
        else:
            number, what, example = "a unit number", "a unit number after '/'", "wordpress/2"
        if not _DIGITS.fullmatch(parts.rest):
            if not parts.rest:
                raise self.error(
                    f"nothing follows '{parts.sep}'; {what} must be a number, as in {example}",
                    parts.rest_column,
                )
            raise self.error(f"{what} must be a number, as in {example}", parts.rest_column)
        return self.number(parts.rest, parts.rest_column, number)

    def service(self, parts: _Parts) -> str:
        name, column = parts.target, parts.target_column
        if not name:
            example = "wordpress=2" if parts.sep == "=" else "wordpress/2"
            raise self.error(
                f"nothing names the service before '{parts.sep}', as in {example}", column
            )
        if _SERVICE.fullmatch(name):
            return name
        for offset, char in enumerate(name):
            if not _SERVICE_CHAR.fullmatch(char):
                raise self.error(_bad_service_char(name, char), column + offset)
        if not ("a" <= name[0] <= "z"):
            raise self.error(
                f"{quoted(name)} is not a service name: it must start with a lower-case letter",
                column,
            )
        offset = 0
        for part in name.split("-")[1:]:
            offset = name.index("-", offset) + 1
            if not any("a" <= char <= "z" for char in part):
                raise self.error(
                    f"{quoted(name)} is not a service name: each part after a hyphen needs "
                    "a letter (mysql-b2 is a name, mysql-2 and mysql- are not)",
                    column + offset - 1,
                )
        raise AssertionError("a name that Juju's pattern rejects breaks one of the rules")


def _bad_service_char(name: str, char: str) -> str:
    if char == ",":
        return (
            "a ',' separates placements only on the juju command line; "
            "give each one as its own entry of the to: list"
        )
    if "A" <= char <= "Z":
        return f"{quoted(name)} is not a service name: service names are lower case"
    return (
        f"{quoted(name)} is not a service name: {char!r} cannot appear in it "
        "(use lower-case letters, digits and hyphens)"
    )


def _first_bad(value: str, pattern: re.Pattern[str]) -> int:
    """The offset of the first character that breaks the pattern: the longest
    prefix that still matches ends just before it."""
    for end in range(len(value), 0, -1):
        if pattern.fullmatch(value[:end]):
            return end
    return 0


def _example(kind: str) -> str:
    return "us-east-1a" if kind == "zone" else "node1.maas"


# ---------------------------------------------------------------- the two styles


def _common(text: str) -> Directive | tuple[_Entry, _Parts, Container | None]:
    """What both styles read alike (constraints, zone=, maas=, a machine number), or
    the located parts for the style to decide."""
    entry = _Entry(text)
    early = entry.prelude()
    if early is not None:
        return early
    parts = entry.parts()
    container = entry.container(parts)
    if parts.target in _PROVIDERS and parts.sep == "=":
        return entry.provider(parts, container)
    if _DIGITS.fullmatch(parts.target):
        return OnMachine(entry.machine(parts), container)
    return entry, parts, container


def parse_deployer(text: str) -> Directive:
    """juju-deployer style: `[lxc|lxd|kvm:](machine | service[=N])`, `zone=NAME`,
    `maas=NODE` or `constraints: key=value ...`. Raises DirectiveError."""
    common = _common(text)
    if not isinstance(common, tuple):
        return common
    entry, parts, container = common
    if parts.target == "new":
        raise entry.error(
            "'new' is bundle style; in deployer style a unit without an entry gets a new machine",
            parts.target_column,
        )
    if parts.sep == "/":
        raise entry.error(
            "deployer style picks a unit with '=', as in wordpress=2; wordpress/2 is bundle style",
            parts.rest_column - 1,
        )
    # The index first: in '=x' the number is what is wrong, whatever the name.
    index = entry.index(parts) if parts.sep == "=" else None
    return WithUnit(entry.service(parts), index, container, ordinal=True)


def parse_bundle(text: str) -> Directive:
    """Juju bundle style: `[lxc|lxd|kvm:](service[/N] | machine | new)`, `zone=NAME`,
    `maas=NODE` or `constraints: key=value ...`. Raises DirectiveError."""
    common = _common(text)
    if not isinstance(common, tuple):
        return common
    entry, parts, container = common
    if parts.target == "new":
        if parts.sep is not None:
            raise entry.error(
                f"'new' takes no '{parts.sep}N'; write new, or lxd:new for a container "
                "on a new machine",
                parts.rest_column - 1,
            )
        return NewMachine(container)
    if parts.sep == "=":
        raise entry.error(
            "bundle style names a unit with '/', as in wordpress/2; wordpress=2 is deployer style",
            parts.rest_column - 1,
        )
    index = entry.index(parts) if parts.sep == "/" else None
    return WithUnit(entry.service(parts), index, container, ordinal=False)


_PARSERS = {"deployer": parse_deployer, "bundle": parse_bundle}


def parse_entry(value: object, style: Style) -> Directive:
    """One entry of a `to:` list as YAML gives it: text, or an int read as a machine
    number. Raises DirectiveError for anything else."""
    parse = _PARSERS.get(style)
    if parse is None:
        raise ValueError(f"unknown placement style {style!r}; use 'deployer' or 'bundle'")
    if isinstance(value, bool):
        word = "true" if value else "false"
        raise DirectiveError(
            f"YAML read this placement as the boolean {word} (it reads yes, no, on, off, "
            "true and false that way); quote it if a service has that name",
            1,
            word,
        )
    if isinstance(value, int):
        if value < 0:
            raise DirectiveError(
                "a machine number cannot be negative; machines are numbered from 0", 1, ""
            )
        if value >= 10**MAX_INDEX_DIGITS:
            # Not rendered: a huge int's digits are both the mistake and too long to show.
            raise DirectiveError(f"a machine number has at most {MAX_INDEX_DIGITS} digits", 1, "")
        return parse(str(value))
    if isinstance(value, float):
        raise DirectiveError(
            f"YAML read this placement as the number {value!r}; a machine number is whole, as in 1",
            1,
            repr(value),
        )
    if value is None:
        raise DirectiveError(
            "the placement is empty; give a machine number or a service name, as in 0 or wordpress",
            1,
            "",
        )
    if not isinstance(value, str):
        raise DirectiveError(
            f"a placement is text or a whole number, not a {_kind_of(value)}", 1, ""
        )
    return parse(value)


def _kind_of(value: object) -> str:
    if isinstance(value, dict):
        return "mapping"
    if isinstance(value, list | tuple):
        return "list (to: lists may not nest)"
    return type(value).__name__


def parse_to(value: object, style: Style) -> list[Directive]:
    """The `to:` key: a scalar or a list of entries; None (no key) is no placements.
    Every bad entry is reported at once in a DirectivesError."""
    if value is None:
        return []
    entries: list[object] = list(value) if isinstance(value, list | tuple) else [value]
    directives: list[Directive] = []
    errors: list[tuple[int, DirectiveError]] = []
    for index, entry in enumerate(entries):
        try:
            directives.append(parse_entry(entry, style))
        except DirectiveError as error:
            errors.append((index, error))
    if errors:
        raise DirectivesError(errors)
    return directives
