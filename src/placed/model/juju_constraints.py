"""Juju constraint strings, such as "cores=8 mem=16G tags=ssd,^virtual", as typed values.

The text is what `juju deploy --constraints` and bundles take: blank-separated key=value
pairs, a blank inside a value escaped as a backslash and a blank. Keys and value rules
follow Juju's core/constraints package; sizes are stored as whole MiB, rounded up, as
Juju stores them. Where this parser is stricter than Juju (names of tags, zones and
spaces; bounded numbers) it says why in the error.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, fields
from fractions import Fraction
from typing import Literal, TypeAlias

Container: TypeAlias = Literal["lxc", "lxd", "kvm"]
# Juju's `container=none` asks for a machine that is not a container.
ConstraintContainer: TypeAlias = Literal["lxc", "lxd", "kvm", "none"]

CONTAINERS: tuple[Container, ...] = ("lxc", "lxd", "kvm")

# Past this a value is a mistake or hostile, and a message must not echo it whole.
MAX_CONSTRAINTS_LENGTH = 4096
MAX_DIGITS = 18
# Juju keeps sizes in a uint64 of MiB; rounding 18 digits of P past that would wrap.
MAX_MIB = 2**63 - 1

# Juju's supported architectures, old and new names alike: bundles written for Juju 1
# say arm and ppc64.
ARCHES = ("amd64", "arm", "arm64", "armhf", "i386", "ppc64", "ppc64el", "riscv64", "s390x")

_MIB_PER = {"": 1, "M": 1, "G": 1024, "T": 1024**2, "P": 1024**3}

# A token runs to the next blank that is not escaped.
_TOKEN = re.compile(r"(?:\\ |\S)+")
_PAIR = re.compile(r"(?P<key>[^=]*)(?P<equals>=?)(?P<value>.*)", re.DOTALL)
_UINT = re.compile(r"[0-9]+")
_SIZE = re.compile(r"(?P<number>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?P<suffix>[MGTP]?)")
# Zone and node names: AWS us-east-1a, GCE us-central1-b, vSphere cluster/host, MAAS
# node1.maas.
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]*")
NODE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
# MAAS tag names, plus the few marks other providers' tags use.
_TAG = re.compile(r"[A-Za-z0-9_.:@+-]+")
# On Kubernetes a tag is an affinity label, KEY=VALUE, its key prefixed "pod.", "anti-pod."
# or "node." (the default) and both sides Kubernetes label text, which has '/' (juju's
# caas/kubernetes/provider/application ApplyWorkloadConstraints; COS Lite's overlays write
# tags=anti-pod.app.kubernetes.io/name=loki,anti-pod.topology-key=kubernetes.io/hostname).
_LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]*")
_LABEL_VALUE = re.compile(r"[A-Za-z0-9._/-]*")
# Juju's names.IsValidSpace.
_SPACE = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_VIRT_TYPE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
# Go's strconv.ParseBool, which Juju uses.
_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})


def quoted(text: str, limit: int = 60) -> str:
    """The text in quotes for a message; long text as an excerpt, so that a message
    never repeats a whole hostile value."""
    if len(text) <= limit:
        return repr(text)
    return f"{text[: limit - 20]!r}… ({len(text)} characters)"


class ConstraintError(ValueError):
    """An invalid constraint string. `column` is 1-based, into `text`."""

    def __init__(self, message: str, column: int, text: str = "") -> None:
        self.message = message
        self.column = column
        self.text = text
        super().__init__(f"{message} (column {column})")


@dataclass(frozen=True, slots=True)
class JujuConstraints:
    """Parsed constraints; None is unset. Sizes are MiB. Tags and spaces keep Juju's
    '^' on the names they exclude; see the included/excluded properties."""

    arch: str | None = None
    container: ConstraintContainer | None = None
    cores: int | None = None
    cpu_power: int | None = None
    nested_virtualization: bool | None = None
    instance_role: str | None = None
    instance_type: str | None = None
    mem: int | None = None
    root_disk: int | None = None
    root_disk_source: str | None = None
    tags: tuple[str, ...] | None = None
    spaces: tuple[str, ...] | None = None
    virt_type: str | None = None
    zones: tuple[str, ...] | None = None
    allocate_public_ip: bool | None = None
    image_id: str | None = None
    # Not a Juju key: juju-deployer's proposed per-unit syntax names a MAAS node this way.
    maas_name: str | None = None

    @property
    def is_empty(self) -> bool:
        return all(getattr(self, field.name) is None for field in fields(self))

    @property
    def tags_included(self) -> tuple[str, ...]:
        return _signed(self.tags, negated=False)

    @property
    def tags_excluded(self) -> tuple[str, ...]:
        return _signed(self.tags, negated=True)

    @property
    def spaces_included(self) -> tuple[str, ...]:
        return _signed(self.spaces, negated=False)

    @property
    def spaces_excluded(self) -> tuple[str, ...]:
        return _signed(self.spaces, negated=True)

    def __str__(self) -> str:
        """Juju's canonical form: keys in Juju's order, sizes in M, booleans as
        true/false, blanks in values escaped."""
        parts = []
        for key, attribute, _ in _KEYS:
            value = getattr(self, attribute)
            if value is not None:
                parts.append(f"{key}={_render(key, value)}")
        return " ".join(parts)


def _signed(names: tuple[str, ...] | None, *, negated: bool) -> tuple[str, ...]:
    if names is None:
        return ()
    return tuple(name[1:] if negated else name for name in names if name.startswith("^") == negated)


def _render(key: str, value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return ",".join(value)
    if key in ("mem", "root-disk"):
        return f"{value}M"
    return str(value).replace(" ", "\\ ")


# ---------------------------------------------------------------- value parsers
#
# Each takes the value as written (never empty: empty means unset, handled before) and
# the 1-based column where it starts, and returns the typed value or raises.

_Parse: TypeAlias = Callable[[str, str, int, str], object]


def _fail(message: str, column: int, text: str) -> ConstraintError:
    return ConstraintError(message, column, text)


def _uint(key: str, value: str, column: int, text: str) -> int:
    if not _UINT.fullmatch(value):
        raise _fail(
            f"{quoted(value)} is not a count for {key}: write a whole number of 0 or more, "
            f"as in {key}=8",
            column,
            text,
        )
    if len(value) > MAX_DIGITS:
        raise _fail(f"{key} has more than {MAX_DIGITS} digits", column, text)
    return int(value)


def _size(key: str, value: str, column: int, text: str) -> int:
    match = _SIZE.fullmatch(value)
    if match is None:
        lower = _SIZE.fullmatch(value[:-1]) if value[-1:] in ("m", "g", "t", "p") else None
        hint = f"; suffixes are upper case: {value[:-1]}{value[-1].upper()}" if lower else ""
        raise _fail(
            f"{quoted(value)} is not a size for {key}: write a number with an optional M, G, "
            f"T or P suffix, as in {key}=16G{hint}",
            column,
            text,
        )
    number, suffix = match.group("number"), match.group("suffix")
    if sum(char.isdigit() for char in number) > MAX_DIGITS:
        raise _fail(f"{key} has more than {MAX_DIGITS} digits", column, text)
    # Exact arithmetic: 1.1G is 1126.4 MiB and rounds up to 1127, as Juju's does.
    mib = math.ceil(Fraction(number) * _MIB_PER[suffix])
    if mib > MAX_MIB:
        raise _fail(f"{key}={value} is more than Juju can hold ({MAX_MIB} MiB)", column, text)
    return mib


def _bool(key: str, value: str, column: int, text: str) -> bool:
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise _fail(f"{key} takes true or false, not {quoted(value)}", column, text)


def _arch(key: str, value: str, column: int, text: str) -> str:
    if value not in ARCHES:
        raise _fail(
            f"unknown architecture {quoted(value)}; use one of {', '.join(ARCHES)}", column, text
        )
    return value


def _container(key: str, value: str, column: int, text: str) -> ConstraintContainer:
    kinds: tuple[ConstraintContainer, ...] = (*CONTAINERS, "none")
    for kind in kinds:
        if value == kind:
            return kind
    raise _fail(f"unknown container kind {quoted(value)}; use lxc, lxd, kvm or none", column, text)


@dataclass(frozen=True, slots=True)
class _Rule:
    """What a kind of name may look like, and how to say so."""

    pattern: re.Pattern[str]
    allowed: re.Pattern[str]  # one character that may appear somewhere
    what: str
    rule: str
    example: str = "name"


_ZONE = _Rule(
    NAME,
    re.compile(r"[A-Za-z0-9._/-]"),
    "a zone name",
    "a zone name starts with a letter or digit and has letters, digits, '.', '_', '/', '-'",
)
_NODE_NAME = _Rule(
    NODE,
    re.compile(r"[A-Za-z0-9._-]"),
    "a MAAS node name",
    "a node name starts with a letter or digit and has letters, digits, '.', '_', '-'",
)
_TAG_NAME = _Rule(
    _TAG,
    re.compile(r"[A-Za-z0-9_.:@+-]"),
    "a tag",
    "a tag has letters, digits and the marks _ . : @ + -",
    "virtual",
)
_SPACE_NAME = _Rule(
    _SPACE,
    re.compile(r"[a-z0-9-]"),
    "a space name",
    "a space name has lower-case letters and digits, with single hyphens between them",
    "dmz",
)
_VIRT = _Rule(
    _VIRT_TYPE,
    re.compile(r"[A-Za-z0-9._-]"),
    "a virtualisation type",
    "a virtualisation type starts with a letter or digit and has letters, digits, '.', '_', '-'",
)


def _check_name(name: str, rule: _Rule, key: str, column: int, text: str) -> None:
    if rule.pattern.fullmatch(name):
        return
    for offset, char in enumerate(name):
        if not rule.allowed.fullmatch(char):
            if char == "\\":
                reason = f"blanks cannot appear in {rule.what}"
            else:
                reason = f"{char!r} cannot appear in {rule.what}"
            raise _fail(f"{quoted(name)} in {key}: {reason}", column + offset, text)
    raise _fail(f"{quoted(name)} is not {rule.what} in {key}: {rule.rule}", column, text)


def _check_label(tag: str, key: str, column: int, text: str) -> None:
    """A Kubernetes affinity tag, KEY=VALUE: juju itself takes any tag text, and its
    Kubernetes provider splits each on '=' and refuses one that is not two parts."""
    label, _, value = tag.partition("=")
    if "=" in value:
        raise _fail(
            f"{quoted(tag)} in {key}: an affinity tag is KEY=VALUE with a single '=' "
            "(juju's Kubernetes provider refuses it: invalid affinity constraints)",
            column + len(label) + 1 + value.index("="),
            text,
        )
    if not _LABEL.fullmatch(label):
        raise _fail(
            f"{quoted(tag)} in {key}: {quoted(label)} is not a label; an affinity tag is "
            "[pod.|anti-pod.|node.]KEY=VALUE, the key starting with a letter or digit, with "
            "letters, digits, '.', '_', '/', '-'",
            column,
            text,
        )
    if not _LABEL_VALUE.fullmatch(value):
        bad = next(c for c in value if not _LABEL_VALUE.fullmatch(c))
        raise _fail(
            f"{quoted(tag)} in {key}: {bad!r} cannot appear in a label value (letters, "
            "digits, '.', '_', '/', '-')",
            column + len(label) + 1 + value.index(bad),
            text,
        )


def _word(rule: _Rule) -> _Parse:
    def parse(key: str, value: str, column: int, text: str) -> str:
        _check_name(value, rule, key, column, text)
        return value

    return parse


def _free_text(key: str, value: str, column: int, text: str) -> str:
    # Providers name instance types and datastores as they please; only the escape
    # for a blank has a meaning here, and a stray backslash would not survive a
    # round trip through Juju's own rendering.
    for offset, char in enumerate(value):
        if char == "\\" and value[offset + 1 : offset + 2] != " ":
            raise _fail(
                f"a backslash in {key} only escapes a blank, as in {key}=a\\ b",
                column + offset,
                text,
            )
        if not char.isprintable():
            raise _fail(f"{key} has an unprintable character {char!r}", column + offset, text)
    return value.replace("\\ ", " ")


def _names(rule: _Rule, *, negatable: bool) -> _Parse:
    def parse(key: str, value: str, column: int, text: str) -> tuple[str, ...]:
        names = []
        offset = 0
        for name in value.split(","):
            here = column + offset
            offset += len(name) + 1
            if not name:
                raise _fail(
                    f"an empty name in {key}: separate names with single commas, as in {key}=a,b",
                    here,
                    text,
                )
            negated = name.startswith("^")
            if negated and not negatable:
                raise _fail(f"{key} cannot exclude with '^'; list the ones to use", here, text)
            if name == "^":
                raise _fail(f"'^' needs a name after it, as in {key}=^{rule.example}", here, text)
            bare = name[1:] if negated else name
            if rule is _TAG_NAME and "=" in bare:
                _check_label(bare, key, here + int(negated), text)
            else:
                _check_name(bare, rule, key, here + int(negated), text)
            names.append(name)
        return tuple(names)

    return parse


# Juju's order, which String() renders in; cpu-cores is read as cores.
_KEYS: tuple[tuple[str, str, _Parse], ...] = (
    ("arch", "arch", _arch),
    ("container", "container", _container),
    ("cores", "cores", _uint),
    ("cpu-power", "cpu_power", _uint),
    ("nested-virtualization", "nested_virtualization", _bool),
    ("instance-role", "instance_role", _free_text),
    ("instance-type", "instance_type", _free_text),
    ("mem", "mem", _size),
    ("root-disk", "root_disk", _size),
    ("root-disk-source", "root_disk_source", _free_text),
    ("tags", "tags", _names(_TAG_NAME, negatable=True)),
    ("spaces", "spaces", _names(_SPACE_NAME, negatable=True)),
    ("virt-type", "virt_type", _word(_VIRT)),
    ("zones", "zones", _names(_ZONE, negatable=False)),
    ("allocate-public-ip", "allocate_public_ip", _bool),
    ("image-id", "image_id", _free_text),
    ("maas-name", "maas_name", _word(_NODE_NAME)),
)
_BY_KEY = {key: (attribute, parse) for key, attribute, parse in _KEYS}
ALIASES = {"cpu-cores": "cores"}
KNOWN_KEYS = tuple(sorted([*_BY_KEY, *ALIASES]))


def parse_constraints(text: str) -> JujuConstraints:
    """Parse a Juju constraint string. Empty text, and an empty value (`arch=`), mean
    unset. Raises ConstraintError naming the key or value at fault, with its column."""
    if len(text) > MAX_CONSTRAINTS_LENGTH:
        raise ConstraintError(
            f"constraints {quoted(text)} are longer than {MAX_CONSTRAINTS_LENGTH} characters",
            MAX_CONSTRAINTS_LENGTH + 1,
            text,
        )
    values: dict[str, object] = {}
    seen: dict[str, str] = {}  # canonical key -> key as written
    for token in _TOKEN.finditer(text):
        column = token.start() + 1
        pair = _PAIR.fullmatch(token.group())
        assert pair is not None, "the pair pattern matches any text"
        key, value = pair.group("key"), pair.group("value")
        if not pair.group("equals"):
            raise ConstraintError(
                f"{quoted(token.group())} is not a constraint: write key=value, as in mem=16G",
                column,
                text,
            )
        if not key:
            raise ConstraintError(
                f"{quoted(token.group())} has no key before '=': write key=value, as in mem=16G",
                column,
                text,
            )
        canonical = ALIASES.get(key, key)
        if canonical not in _BY_KEY:
            raise ConstraintError(_unknown(key), column, text)
        if canonical in seen:
            first = seen[canonical]
            same = (
                f"{quoted(key)} is given twice"
                if first == key
                else f"{quoted(key)} repeats {quoted(first)} ({_alias_note(key, first)})"
            )
            raise ConstraintError(f"{same}; give each constraint once", column, text)
        seen[canonical] = key
        attribute, parse = _BY_KEY[canonical]
        if value:
            values[attribute] = parse(key, value, column + len(key) + 1, text)
    return JujuConstraints(**values)  # type: ignore[arg-type]


def _alias_note(key: str, first: str) -> str:
    alias, canonical = (key, first) if key in ALIASES else (first, key)
    return f"{alias} is another name for {canonical}"


def _unknown(key: str) -> str:
    close = difflib.get_close_matches(key.lower(), KNOWN_KEYS, n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"unknown constraint {quoted(key)}{hint}; known keys: {', '.join(KNOWN_KEYS)}"
