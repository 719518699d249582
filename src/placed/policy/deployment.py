"""What an Open Horizon workload asks (seed 002): its deployment policy's (or pattern's)
properties and constraints, the services it deploys and the namespace it wants. The
constraint, target-constraint and namespace filters all read it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from placed.model import Property, Service, Workload


@dataclass(frozen=True, slots=True)
class Deployment:
    properties: Mapping[str, Property] = field(default_factory=dict)
    constraints: tuple[str, ...] = ()
    # One service for a deployment policy, several for a pattern.
    services: tuple[Service, ...] = ()
    pattern: bool = False
    cluster_namespace: str | None = None


# What a workload that is no Open Horizon deployment asks: nothing.
NONE = Deployment()


def deployment_of(workload: Workload) -> Deployment:
    return workload.request(Deployment) or NONE
