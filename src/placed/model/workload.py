"""Workloads: what asks for places, and the units each one asks for."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, TypeVar

from placed.model.properties import Property

Mode = Literal["allocation", "mapping", "every"]
Request = TypeVar("Request")


@dataclass(frozen=True, slots=True)
class Service:
    """An Open Horizon service a workload deploys, with its own (service) policy."""

    url: str
    org: str = ""
    version: str = ""
    arch: str = ""
    # A namespace embedded in the service's operator definition (not best practice).
    namespace: str | None = None
    properties: Mapping[str, Property] = field(default_factory=dict)
    constraints: tuple[str, ...] = ()
    # Needs privileged mode (a node that does not allow it refuses the service).
    privileged: bool = False
    # Where it has a deployment: "device" (Open Horizon's `deployment`), "cluster"
    # (`clusterDeployment`).
    runs_on: tuple[str, ...] = ("device", "cluster")
    # The services it requires (Open Horizon's requiredServices), each with its own: a
    # device runs them beside it, so they must fit the device too.
    requires: tuple[Service, ...] = ()

    def with_requirements(self) -> tuple[Service, ...]:
        """This service and every service it requires, directly or not, each once."""
        found: dict[int, Service] = {}
        stack = [self]
        while stack:
            service = stack.pop(0)
            if id(service) not in found:
                found[id(service)] = service
                stack.extend(service.requires)
        return tuple(found.values())


@dataclass(frozen=True, slots=True)
class Workload:
    """A request for `units` places.

    mode:
      allocation: each unit consumes capacity and stays where it was put.
      mapping: no capacity; a unit's owner is a pure function of (unit, live targets),
        unless max_load caps the load (see engine/balance.py).
      every: one unit on every compatible target, like a DaemonSet or a Nomad system job.

    The fields here are what every workload has. What it asks of one policy family
    (its tags, its Open Horizon deployment policy, `distinct`...) is that family's
    request object in `requests`, found with `request(Kind)`.
    """

    name: str
    units: int = 1
    mode: Mode = "allocation"
    resources: Mapping[str, float] = field(default_factory=dict)
    # mapping only: no target holds more than max_load x the mean number of units.
    max_load: float | None = None
    requests: tuple[object, ...] = ()
    # The number of the first unit: units that already run (Juju's wordpress/0..2) keep
    # theirs, and the units a plan adds are numbered after them.
    first: int = 0
    # The requests by their exact type: families look theirs up for every target the
    # reference judges, so the lookup is one dict access.
    _by_kind: dict[type, object] = field(init=False, repr=False, compare=False)
    # The types of its requests: workloads that ask the same kinds of things skip the
    # same policy filters, which the pipeline works out once per set of kinds.
    kinds: frozenset[type] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        by_kind = {type(found): found for found in self.requests}
        object.__setattr__(self, "_by_kind", by_kind)
        object.__setattr__(self, "kinds", frozenset(by_kind))

    def request(self, kind: type[Request]) -> Request | None:
        """This workload's request of that (exact) type, if it has one."""
        # Keyed by the exact type, so what is found is a `kind` (no cast(): this runs for
        # every target the reference judges, and a call is most of its cost).
        return self._by_kind.get(kind)  # type: ignore[return-value]

    def unit_key(self, index: int) -> str:
        return f"{self.name}/{self.first + index}"


# How a spread or affinity term binds: a rule that rejects targets, or a preference.
TermMode = Literal["hard", "preferred"]


@dataclass(frozen=True, slots=True)
class SpreadTerm:
    """`spread: {over: LEVEL, max_skew: N}`: Kubernetes' topology spread constraint over one
    level. `weight` ranks a preferred term against the workload's other preferences."""

    over: str
    max_skew: int = 1
    mode: TermMode = "hard"
    weight: int = 1


@dataclass(frozen=True, slots=True)
class Spread:
    """A workload's spread terms, in the order written."""

    terms: tuple[SpreadTerm, ...]


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    """`near:` or `avoid:` one workload's units under the same ancestor at `level`.

    `mirrored` marks an avoid term the loader added to this workload because the other
    workload's own term avoids this one (Kubernetes' symmetric anti-affinity): its
    explanation names the workload that asked."""

    workload: str
    level: str
    mode: TermMode = "hard"
    weight: int = 1
    mirrored: bool = False


@dataclass(frozen=True, slots=True)
class Near:
    """A workload's affinity terms: its units go where another workload's units are."""

    terms: tuple[AffinityTerm, ...]


@dataclass(frozen=True, slots=True)
class Avoid:
    """A workload's anti-affinity terms: its units stay away from another's units."""

    terms: tuple[AffinityTerm, ...]
