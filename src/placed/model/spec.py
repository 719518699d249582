"""A whole placement problem: inventory, workloads and settings."""

from __future__ import annotations

from dataclasses import dataclass

from placed.model.inventory import Inventory
from placed.model.workload import Mode, Workload


@dataclass(frozen=True, slots=True)
class Settings:
    default_mode: Mode = "allocation"


@dataclass(frozen=True, slots=True)
class Running:
    """A unit that already runs somewhere (a Juju status): the plan starts from it."""

    workload: str
    unit: str
    target: str


@dataclass(frozen=True)
class Spec:
    inventory: Inventory
    workloads: tuple[Workload, ...]
    settings: Settings = Settings()
    source: str = "<spec>"
    name: str = "spec"
    running: tuple[Running, ...] = ()
