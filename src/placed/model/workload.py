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

    def request(self, kind: type[Request]) -> Request | None:
        for found in self.requests:
            if isinstance(found, kind):
                return found
        return None

    def unit_key(self, index: int) -> str:
        return f"{self.name}/{index}"
