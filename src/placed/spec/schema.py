"""The spec format, version 1, as pydantic models. `placed schema` prints its JSON Schema."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

Tag = Annotated[
    str,
    StringConstraints(min_length=1, pattern=r"^[^\s,]+$"),
    Field(description="One tag: no spaces or commas. Write several as a YAML list."),
]
Identifier = Annotated[
    str,
    StringConstraints(min_length=1, pattern=r"^[^\s/]+$"),
    Field(description="An id: no spaces or slashes."),
]
PropertyValue = str | int | float | bool | list[str]
TagList = list[Tag]


class _Strict(BaseModel):
    # Unknown keys are errors (with a "did you mean"), and nothing is silently coerced:
    # "8" is not a number.
    model_config = ConfigDict(extra="forbid", strict=True)


class LocationSpec(_Strict):
    """A place in the inventory: a zone, rack, host, conductor, edge node... Locations
    without children are targets, where units land. Tags, properties and tag rules are
    inherited by everything below (a child's own property value wins)."""

    id: Identifier = Field(description="Unique across the whole inventory.")
    kind: str = Field("host", description="zone, pod, cluster, rack, host, conductor, node...")
    tags: TagList = Field(
        default_factory=list,
        description="What this location is or reaches (rack10, network1). A workload tag "
        "that matches one scores +1 (seed 001's first form).",
    )
    anti_tags: TagList = Field(
        default_factory=list,
        description="Seed 001's first-form 'anti-tags': shorthand for hard_anti_affinity.",
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
    properties: dict[str, PropertyValue] = Field(default_factory=dict)
    capacity: dict[str, float] | None = Field(
        None, description="Leaves only: resources units can consume, e.g. {cpu: 8, memory: 32}."
    )
    status: Literal["up", "down"] = Field("up", description="down takes everything below out.")
    children: list[LocationSpec] = Field(default_factory=list)


class WorkloadSpec(_Strict):
    """Something that needs places: a service, a VM flavour, a bare-metal node..."""

    name: Identifier
    units: int = Field(1, ge=1, description="How many units (ignored in every mode).")
    mode: Literal["allocation", "mapping", "every"] | None = Field(
        None,
        description="allocation: units consume capacity and stay put. mapping: no capacity, "
        "owner is a pure function of (unit, live targets). every: one unit per compatible "
        "target. Default: settings.default_mode.",
    )
    tags: TagList = Field(default_factory=list, description="Matched against target rules.")
    resources: dict[str, float] = Field(
        default_factory=dict, description="What each unit consumes (allocation and every)."
    )


class SettingsSpec(_Strict):
    default_mode: Literal["allocation", "mapping", "every"] = "allocation"


class SpecDocument(_Strict):
    """A placed spec: the inventory, the workloads and settings."""

    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        title="placed spec v1",
        json_schema_extra={"$id": "placed-spec-v1"},
    )

    version: Literal[1] = 1
    name: str | None = Field(
        None, description="Names this spec in output; needed when a file holds several."
    )
    inventory: list[LocationSpec] = Field(default_factory=list)
    workloads: list[WorkloadSpec] = Field(default_factory=list)
    settings: SettingsSpec = Field(default_factory=SettingsSpec)
