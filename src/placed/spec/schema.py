"""The spec format, version 1, as pydantic models. `placed schema` prints its JSON Schema."""

from __future__ import annotations

import datetime
import unicodedata
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    GetJsonSchemaHandler,
    StringConstraints,
    WithJsonSchema,
    model_validator,
)
from pydantic.json_schema import DEFAULT_REF_TEMPLATE, GenerateJsonSchema, JsonSchemaValue
from pydantic_core import CoreSchema, core_schema

from placed.model.properties import TYPES

# A stated bound rather than a plan that never ends: a million units of one workload is
# past any fleet placed has met, and a spec's units together stay within MAX_TOTAL_UNITS.
MAX_UNITS = 1_000_000
MAX_TOTAL_UNITS = 10_000_000
# A target is stale only after this many heartbeats in a row were missed.
HEARTBEAT_BEATS = 3


def visible(text: str) -> str:
    """One Unicode form (NFC), so that the two spellings of "café" are one name, and no
    invisible or direction-changing character (a name must read as it is)."""
    if text.isascii() and text.isprintable():
        return text  # the common case, and already NFC with nothing hidden
    text = unicodedata.normalize("NFC", text)
    hidden = [c for c in text if unicodedata.category(c) in ("Cf", "Cc", "Co", "Cs")]
    if hidden:
        names = ", ".join(f"U+{ord(c):04X} {unicodedata.name(c, 'control')}" for c in hidden[:3])
        raise ValueError(f"contains a character that does not show ({names}); remove it")
    return text


# The characters `visible` refuses (Unicode's Cc, Cf and Co, as this Python's Unicode data
# has them; Cs, a lone surrogate, cannot travel in UTF-8), as ranges of code points:
# the JSON Schema's patterns refuse them too, so that a client, an editor or a fuzzer
# knows such a name is refused (tests/test_identifiers_and_messages.py checks the table
# against unicodedata).
HIDDEN_RANGES = (
    (0x0000, 0x001F),
    (0x007F, 0x009F),
    (0x00AD, 0x00AD),
    (0x0600, 0x0605),
    (0x061C, 0x061C),
    (0x06DD, 0x06DD),
    (0x070F, 0x070F),
    (0x0890, 0x0891),
    (0x08E2, 0x08E2),
    (0x180E, 0x180E),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x2064),
    (0x2066, 0x206F),
    (0xE000, 0xF8FF),
    (0xFEFF, 0xFEFF),
    (0xFFF9, 0xFFFB),
    (0x110BD, 0x110BD),
    (0x110CD, 0x110CD),
    (0x13430, 0x13438),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0001, 0xE0001),
    (0xE0020, 0xE007F),
    (0xF0000, 0xFFFFD),
    (0x100000, 0x10FFFD),
)


def _class(ranges: tuple[tuple[int, int], ...]) -> str:
    """Ranges as the members of a regular expression's class (each character itself:
    none of these is special there)."""
    return "".join(chr(a) if a == b else f"{chr(a)}-{chr(b)}" for a, b in ranges)


# The two private-use planes (15 and 16) are 131,068 characters, which a generator of
# strings from a pattern (hypothesis, under schemathesis) lists one by one for a class,
# every time it reads the pattern: a lookahead says the same for nothing.
_PLANES = tuple((a, b) for a, b in HIDDEN_RANGES if a >= 0xF0000)
HIDDEN = _class(tuple(r for r in HIDDEN_RANGES if r not in _PLANES))
NOT_IN_PLANES = f"(?![{_class(_PLANES)}])"


class _Shows:
    """A name's JSON Schema refuses what `visible` refuses: its pattern `^[^...]+$`
    becomes `^(?:(?!PLANES)[^HIDDEN...])+$`, and a name with no pattern gets one. Only
    the schema: the validator itself is `visible`, whose error names the character."""

    def __get_pydantic_json_schema__(
        self, core_schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        schema = handler(core_schema)
        pattern = schema.get("pattern")
        if pattern == r"^\S+$":
            pattern = r"^[^\s]+$"
        if pattern is None:
            pattern = "^[^]+$"
        assert pattern.startswith("^[^") and pattern.endswith("]+$"), pattern
        schema["pattern"] = f"^(?:{NOT_IN_PLANES}[^{HIDDEN}{pattern[3:-2]})+$"
        return schema


class _UnitShape:
    """A unit name's JSON Schema says its form, WORKLOAD/N, as the reader checks it
    (`spec/juju/native.py`): the name's pattern, then a slash and a whole number. Only
    the schema: the reader's error says what to write."""

    def __get_pydantic_json_schema__(
        self, core_schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        schema = handler(core_schema)
        pattern = schema["pattern"]
        assert pattern.endswith(")+$"), pattern
        schema["pattern"] = pattern[:-1] + "/[0-9]+$"
        return schema


# A list whose items name themselves (an id, a name): two equal items name one thing
# twice, which the reader refuses; the schema says so. It cannot say that two items
# differing elsewhere must not share the name: the reader's rule alone.
UNIQUE_ITEMS: dict[str, Any] = {"uniqueItems": True}


# The longest name or identifier (a target, a workload, a domain, a tag...): a DNS name's
# and a Kubernetes object's bound. The service's routes take the same (service/*.py).
MAX_NAME = 253
# A unit is named WORKLOAD/N.
MAX_UNIT_NAME = MAX_NAME + 21

Tag = Annotated[
    str,
    StringConstraints(min_length=1, max_length=MAX_NAME, pattern=r"^[^\s,]+$"),
    AfterValidator(visible),
    _Shows(),
    Field(description="One tag: no spaces or commas. Write several as a YAML list."),
]
Identifier = Annotated[
    str,
    StringConstraints(min_length=1, max_length=MAX_NAME, pattern=r"^[^\s/]+$"),
    AfterValidator(visible),
    _Shows(),
    Field(description="An id: no spaces or slashes."),
]
# A target's id may hold slashes: a container is named after its machine (1/lxc/0).
TargetId = Annotated[
    str,
    StringConstraints(min_length=1, max_length=MAX_NAME, pattern=r"^\S+$"),
    AfterValidator(visible),
    _Shows(),
    Field(description="An id: no spaces (a container's may have slashes, as in 1/lxc/0)."),
]
# A name that must say something: a kind, a resource, a namespace.
Name = Annotated[
    str, StringConstraints(min_length=1, max_length=MAX_NAME), AfterValidator(visible), _Shows()
]
UnitName = Annotated[
    str,
    StringConstraints(min_length=1, max_length=MAX_UNIT_NAME),
    AfterValidator(visible),
    _Shows(),
    _UnitShape(),
]
TagList = list[Tag]

_PROPERTY_VALUE = {
    "anyOf": [
        {"type": "string"},
        {"type": "number"},
        {"type": "boolean"},
        {"type": "array", "items": {"type": "string"}},
    ]
}
# Typed properties are checked by placed.model.properties (strictly, naming the property),
# so pydantic takes them as they are; the JSON Schema still shows both accepted shapes.
Properties = Annotated[
    Any,
    WithJsonSchema(
        {
            "description": "A mapping {name: value}, or Open Horizon's list form "
            "[{name, value, type}] with type one of string, int, float, boolean, version, "
            "list of strings.",
            "anyOf": [
                {"type": "object", "additionalProperties": _PROPERTY_VALUE},
                {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["name", "value"],
                        "additionalProperties": False,
                        "properties": {
                            "name": {"type": "string"},
                            "value": _PROPERTY_VALUE,
                            "type": {"enum": list(TYPES)},
                        },
                    },
                },
            ],
        }
    ),
]
Constraints = Annotated[
    str | list[str],
    Field(
        description="Constraint expressions (Open Horizon syntax), ANDed: a string or a list "
        'of strings, e.g. [\'purpose == "lab"\', "openhorizon.cpu >= 2"].'
    ),
]


NodeKind = Literal["device", "cluster"]
NODE_KINDS: tuple[NodeKind, ...] = ("device", "cluster")


def _whole(value: Any) -> Any:
    """5.0 as 5: JSON (and so JSON Schema's "integer") has one kind of number, and a
    client may write a count as 5.0. Anything else is left to the strict int."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


# A count: strict (no "8", no true), but a number with nothing after its point is one.
Whole = Annotated[int, BeforeValidator(_whole)]


class _Strict(BaseModel):
    # Unknown keys are errors (with a "did you mean"), and nothing is silently coerced:
    # "8" is not a number.
    model_config = ConfigDict(extra="forbid", strict=True)


class LocationSpec(_Strict):
    """A place in the inventory: a zone, rack, host, conductor, edge node... Locations
    without children are targets, where units land. Tags, properties and tag rules are
    inherited by everything below (a child's own property value wins)."""

    id: TargetId = Field(description="Unique across the whole inventory.")
    kind: Name = Field("host", description="zone, pod, cluster, rack, host, conductor, node...")
    tags: TagList = Field(
        default_factory=list,
        description="What this location is or reaches (rack10, network1). A workload tag "
        "that matches one scores +1 (the Ironic RFE's first form).",
    )
    anti_tags: TagList = Field(
        default_factory=list,
        description="The Ironic RFE's first-form 'anti-tags': shorthand for hard_anti_affinity.",
    )
    hard_affinity: TagList = Field(
        default_factory=list, description="Tags a workload must all carry to land here."
    )
    hard_anti_affinity: TagList = Field(
        default_factory=list, description="Tags a workload must not carry to land here."
    )
    soft_affinity: TagList = Field(
        default_factory=list, description="Each workload tag listed here scores +1."
    )
    soft_anti_affinity: TagList = Field(
        default_factory=list,
        description="Each workload tag listed here scores -1 (it wins over soft_affinity).",
    )
    properties: Properties = Field(default_factory=dict)
    constraints: Constraints = Field(
        default_factory=list, description="What a workload must satisfy to land here."
    )
    scope: Literal["device", "cluster", "namespace"] | None = Field(
        None,
        description="Open Horizon agent: a device, a cluster-scoped agent, or an agent scoped "
        "to one namespace.",
    )
    namespace: Name | None = Field(
        None, description="The cluster agent's namespace (default openhorizon-agent)."
    )
    arch: str | None = Field(None, description="openhorizon.arch, e.g. amd64.")
    hardware_id: str | None = Field(None, description="openhorizon.hardwareId.")
    kubernetes_version: str | None = Field(None, description="openhorizon.kubernetesVersion.")
    capacity: dict[Name, float] | None = Field(
        None, description="Leaves only: resources units can consume, e.g. {cpu: 8, memory: 32}."
    )
    status: Literal["up", "down"] = Field("up", description="down takes everything below out.")
    children: list[LocationSpec] = Field(default_factory=list, json_schema_extra=UNIQUE_ITEMS)


# A workload's spread, near or avoid terms: a handful in practice; bounded all the same.
MAX_TERMS = 16
MAX_WEIGHT = 1000


class SpreadSpec(_Strict):
    """One topology spread constraint (Kubernetes' topologySpreadConstraints)."""

    over: Identifier = Field(
        description="The level: any location kind the inventory uses, or target."
    )
    max_skew: Whole = Field(
        1,
        ge=1,
        le=MAX_UNITS,
        description="No location at the level holds more than this many units above the "
        "location with the fewest (of those with a target the workload's filters keep).",
    )
    mode: Literal["hard", "preferred"] = Field(
        "hard", description="hard: a rule (units stay unplaced); preferred: a score."
    )
    weight: Annotated[int | None, BeforeValidator(_whole)] = Field(
        None, ge=1, le=MAX_WEIGHT, description="preferred only: the score's weight (default 1)."
    )


class AffinitySpec(_Strict):
    """One affinity (near) or anti-affinity (avoid) term to a workload's units."""

    workload: Identifier = Field(description="The workload whose units count (may be itself).")
    level: Identifier = Field(
        description="Same location of this kind (host, rack, zone, ...), or target for the "
        "same target."
    )
    mode: Literal["hard", "preferred"] = Field(
        "hard", description="hard: a rule (units stay unplaced); preferred: a score."
    )
    weight: Annotated[int | None, BeforeValidator(_whole)] = Field(
        None,
        ge=1,
        le=MAX_WEIGHT,
        description="preferred only: the score per unit of the workload there (default 1).",
    )


SpreadTerms = SpreadSpec | Annotated[list[SpreadSpec], Field(min_length=1, max_length=MAX_TERMS)]
AffinityTerms = (
    AffinitySpec | Annotated[list[AffinitySpec], Field(min_length=1, max_length=MAX_TERMS)]
)


class WorkloadSpec(_Strict):
    """Something that needs places: a service, a VM flavour, a bare-metal node..."""

    name: Identifier
    units: Whole = Field(
        1,
        ge=1,
        le=MAX_UNITS,
        description=f"How many units (ignored in every mode), at most {MAX_UNITS:,}.",
    )
    mode: Literal["allocation", "mapping", "every"] | None = Field(
        None,
        description="allocation: units consume capacity and stay put. mapping: no capacity, "
        "owner is a pure function of (unit, live targets). every: one unit per compatible "
        "target. Default: settings.default_mode.",
    )
    tags: TagList = Field(default_factory=list, description="Matched against target rules.")
    resources: dict[Name, float] = Field(
        default_factory=dict, description="What each unit consumes (allocation and every)."
    )
    properties: Properties = Field(
        default_factory=dict, description="The deployment policy's properties."
    )
    constraints: Constraints = Field(
        default_factory=list, description="The deployment policy's constraints on targets."
    )
    service: ServiceSpec | None = Field(None, description="The service a policy deploys.")
    services: list[ServiceSpec] = Field(
        default_factory=list, description="The services a pattern deploys."
    )
    pattern: bool = Field(False, description="An Open Horizon pattern rather than a policy.")
    cluster_namespace: Name | None = Field(
        None, description="Where the service goes on a cluster (Open Horizon clusterNamespace)."
    )
    distinct: Identifier | None = Field(
        None,
        description="allocation only: no two units under the same location of this kind "
        "(host, rack, zone, any kind the inventory uses, or target for each target "
        "itself). A hard rule: units that find no free value stay unplaced.",
    )
    spread: SpreadTerms | None = Field(
        None,
        description="allocation only: spread units over a level with a max skew, as "
        "Kubernetes' topology spread constraints: {over: zone, max_skew: 1, mode: hard}, "
        "or a list of them.",
    )
    near: AffinityTerms | None = Field(
        None,
        description="allocation only: units go under the same location as a unit of "
        "another workload: {workload: db, level: zone, mode: hard}, or a list of them.",
    )
    avoid: AffinityTerms | None = Field(
        None,
        description="allocation only: units stay out of locations that hold a unit of a "
        "workload (itself, for one per location): {workload: web, level: target}, or a "
        "list. Symmetric: the avoided workload's units also stay away from this one's.",
    )
    to: str | Whole | list[str | Whole] | None = Field(
        None,
        description="allocation only: Juju placement directives, entry i for unit i: a "
        "target id, WORKLOAD/N (on the target that holds that unit), WORKLOAD (its units "
        "in turn), new (a new machine), any of these after lxc:, lxd: or kvm: (a new "
        "container there), zone=NAME, maas=NODE, or 'constraints: cores=8 mem=16G'. Units "
        "without an entry are placed by the other policies (or on a new machine each, "
        "with new_machines).",
    )
    juju_constraints: str | None = Field(
        None,
        description="Juju constraints (cores=8 mem=16G tags=ssd ...) the targets of units "
        "without their own must meet, or a new machine gets.",
    )
    account: Identifier | None = Field(
        None, description="The tenant account the VMs belong to (CloudStack)."
    )
    offering: Identifier | None = Field(
        None,
        description="The service offering: the VMs' cpu and memory, and whether they ask "
        "for dedicated hosts.",
    )
    new_machines: bool = Field(
        False,
        description="Units without a to: entry get a new machine each (Juju's default "
        "placement) instead of an existing target.",
    )
    max_load: float | None = Field(
        None,
        ge=1.0,
        allow_inf_nan=False,
        description="mapping only: no target holds more than max_load times the mean number "
        "of units (rounded down, never below the mean rounded up). A unit whose first "
        "choice is full takes its next. Changes still move only a lost target's units, "
        "or units to a joining target, but owners then depend on the order of changes.",
    )


class ServiceSpec(_Strict):
    """An Open Horizon service and its service policy."""

    url: str
    org: str = ""
    version: str = ""
    arch: str = ""
    namespace: str | None = Field(
        None, description="A namespace embedded in the operator definition (not best practice)."
    )
    privileged: bool = Field(
        False,
        description="The service needs privileged mode: a node whose "
        "openhorizon.allowPrivileged is false refuses it.",
    )
    runs_on: list[NodeKind] = Field(
        default_factory=lambda: list(NODE_KINDS),
        description="Where the service has a deployment: device (Open Horizon's "
        "`deployment`), cluster (`clusterDeployment`), or both.",
    )
    properties: Properties = Field(default_factory=dict)
    constraints: Constraints = Field(default_factory=list)
    requires: list[ServiceSpec] = Field(
        default_factory=list,
        description="The services it requires (Open Horizon's requiredServices): on a "
        "device they run beside it, so each must fit the device too (its deployment, "
        "architecture and privilege); an edge cluster does not run them.",
    )


def iso_time(value: Any) -> Any:
    """settings.now as one ISO-8601 text. YAML reads an unquoted time as a datetime and a
    quoted one as text: both are taken. A time without a UTC offset is refused: it would
    name a different instant on every machine that reads the spec."""
    if isinstance(value, datetime.datetime):
        parsed = value
    elif isinstance(value, datetime.date):
        day = value.isoformat()
        raise ValueError(f"{day} is a date, not a time: write {day}T00:00:00Z")
    elif isinstance(value, str):
        try:
            # RFC 3339 (the schema's date-time) lets its T and Z be lower case.
            parsed = datetime.datetime.fromisoformat(value.upper())
        except ValueError:
            raise ValueError(
                f"{value!r} is not an ISO-8601 time: write one as 2026-12-01T09:00:00Z"
            ) from None
    else:
        return value  # None, or a type the field refuses with its own message
    if parsed.tzinfo is None:
        raise ValueError(
            f"{parsed.isoformat()} has no UTC offset: add one, as in {parsed.isoformat()}Z"
        )
    return parsed.isoformat()


class SettingsSpec(_Strict):
    default_mode: Literal["allocation", "mapping", "every"] = "allocation"
    now: Annotated[
        str | None,
        BeforeValidator(iso_time),
        # RFC 3339's date-time (an ISO-8601 time with its offset), as the schema says it.
        WithJsonSchema({"anyOf": [{"type": "string", "format": "date-time"}, {"type": "null"}]}),
    ] = Field(
        default=None,
        description="The time every event of a plan or simulation carries (ISO-8601, with "
        "its UTC offset): two runs of one spec print the same bytes. Without it, events "
        'carry "time": null.',
    )
    implicit_dedication: bool = Field(
        default=True,
        description="CloudStack's implicit.dedication.enable: a dedicated request that "
        "finds no host takes an empty, undedicated one for its account. A location's "
        "property implicit.dedication.enable overrides it below that location.",
    )
    heartbeat_interval_s: float = Field(
        default=10.0,
        gt=0,
        le=86400,
        description="placed serve: how often each target is expected to heartbeat, in seconds.",
    )
    heartbeat_timeout_s: float = Field(
        default=40.0,
        gt=0,
        le=864000,
        description="placed serve: a target without a heartbeat for this long (seconds) is "
        "stale and its units move; at least 3 times heartbeat_interval_s, so one or two "
        "lost heartbeats never move anything.",
    )
    disruption_guard_min_targets: Whole = Field(
        default=3,
        ge=1,
        le=1_000_000,
        description="placed serve: the disruption guard holds back a sweep in which most "
        "heartbeating targets look stale at once only when at least this many targets "
        "heartbeat; with fewer (a small edge site), a silent target is taken down as usual.",
    )

    @model_validator(mode="after")
    def _timeout_outlasts_beats(self) -> SettingsSpec:
        if self.heartbeat_timeout_s < HEARTBEAT_BEATS * self.heartbeat_interval_s:
            raise ValueError(
                f"heartbeat_timeout_s {self.heartbeat_timeout_s:g} is under "
                f"{HEARTBEAT_BEATS} x heartbeat_interval_s {self.heartbeat_interval_s:g}: "
                "a target would be declared dead after fewer than "
                f"{HEARTBEAT_BEATS} missed heartbeats"
            )
        return self


class DomainSpec(_Strict):
    """A domain of the tenancy tree: its accounts and its subdomains."""

    accounts: list[Identifier] = Field(default_factory=list, json_schema_extra=UNIQUE_ITEMS)
    children: dict[Identifier, DomainSpec] = Field(default_factory=dict)


class TenancySpec(_Strict):
    """The domain tree under ROOT and the accounts of each domain (CloudStack)."""

    domains: dict[Identifier, DomainSpec] = Field(
        default_factory=dict, description="The domains directly under ROOT."
    )
    accounts: list[Identifier] = Field(
        default_factory=list, description="ROOT's own accounts.", json_schema_extra=UNIQUE_ITEMS
    )


class OfferingSpec(_Strict):
    """A CloudStack service offering: what a VM takes, and whether it asks for dedication."""

    name: Identifier
    cpu: float = Field(0, ge=0, allow_inf_nan=False)
    memory: float = Field(0, ge=0, allow_inf_nan=False)
    disk: float = Field(0, ge=0, allow_inf_nan=False)
    dedicated: bool = False
    implicit: Literal["strict", "preferred"] = Field(
        "strict",
        description="strict: a dedicated request only ever lands on dedicated hosts. "
        "preferred: it may fall back to a shared host when none is dedicated or free.",
    )


class StoragePoolSpec(_Strict):
    """A primary storage pool: zone-wide or cluster-wide (CloudStack dedicated resources)."""

    id: TargetId
    scope: Literal["zone", "cluster"]
    at: TargetId = Field(description="The zone or cluster whose hosts reach it.")
    capacity: float = Field(ge=0, allow_inf_nan=False, description="GB a VM's disk takes from.")


class DedicationSpec(_Strict):
    """A zone, pod, cluster or host given to a domain, or to one account of it."""

    resource: TargetId
    domain: Identifier
    account: Identifier | None = None
    implicit: bool = Field(
        False,
        description="A host an account's dedicated VM took by implicit dedication (the "
        "service's world writes these: its stored rows); it names a host and an account.",
    )


class SpecDocument(_Strict):
    """A placed spec: the inventory, the workloads and settings."""

    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        title="placed spec v1",
        json_schema_extra={"$id": "placed-spec-v1"},
    )

    version: Literal[1] = 1
    name: Annotated[str, StringConstraints(max_length=MAX_NAME)] | None = Field(
        None, description="Names this spec in output; needed when a file holds several."
    )
    inventory: list[LocationSpec] = Field(default_factory=list, json_schema_extra=UNIQUE_ITEMS)
    workloads: list[WorkloadSpec] = Field(default_factory=list, json_schema_extra=UNIQUE_ITEMS)
    settings: SettingsSpec = Field(default_factory=SettingsSpec)
    tenancy: TenancySpec | None = Field(None, description="Domains and accounts (CloudStack).")
    offerings: list[OfferingSpec] = Field(default_factory=list, json_schema_extra=UNIQUE_ITEMS)
    storage: list[StoragePoolSpec] = Field(
        default_factory=list,
        description="Primary storage pools, dedicable like hosts.",
        json_schema_extra=UNIQUE_ITEMS,
    )
    dedications: list[DedicationSpec] = Field(
        default_factory=list,
        description="Applied in order as the root admin, through the dedication rules.",
    )
    running: list[RunningSpec] = Field(
        default_factory=list,
        description="Units that already run: the plan starts from them, directives resolve "
        "against them, and new units of their workload are numbered after them.",
        json_schema_extra=UNIQUE_ITEMS,
    )


class RunningSpec(_Strict):
    """A unit that already runs on a target."""

    unit: UnitName = Field(description="WORKLOAD/N")
    target: TargetId


WorkloadSpec.model_rebuild()
SpecDocument.model_rebuild()
DomainSpec.model_rebuild()


class _SpecJsonSchema(GenerateJsonSchema):
    """Pydantic writes a mapping whose keys have a pattern (a capacity's resources, a
    tenancy's domains) as `patternProperties`, which says nothing of a key that does not
    match: any such key would be valid. The reader refuses it, so the schema says so: the
    pattern goes with the keys' other bounds in `propertyNames`."""

    def dict_schema(self, schema: core_schema.DictSchema) -> JsonSchemaValue:
        found = super().dict_schema(schema)
        patterns = found.pop("patternProperties", None)
        if patterns:
            ((pattern, values),) = patterns.items()
            found["propertyNames"] = {**found.get("propertyNames", {}), "pattern": pattern}
            found["additionalProperties"] = values
        return found


def spec_json_schema(ref_template: str = DEFAULT_REF_TEMPLATE) -> dict[str, Any]:
    """The spec format's JSON Schema (`placed schema`, the OpenAPI document's components)."""
    return SpecDocument.model_json_schema(
        ref_template=ref_template, schema_generator=_SpecJsonSchema
    )
