"""Workloads: what asks for places, and the units each one asks for."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

Mode = Literal["allocation", "mapping", "every"]


@dataclass(frozen=True, slots=True)
class Workload:
    """A request for `units` places.

    mode:
      allocation: each unit consumes capacity and stays where it was put.
      mapping: no capacity; a unit's owner is a pure function of (unit, live targets).
      every: one unit on every compatible target, like a DaemonSet or a Nomad system job.
    """

    name: str
    units: int = 1
    mode: Mode = "allocation"
    tags: frozenset[str] = frozenset()
    resources: Mapping[str, float] = field(default_factory=dict)

    def unit_key(self, index: int) -> str:
        return f"{self.name}/{index}"
