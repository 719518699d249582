"""A whole placement problem: inventory, workloads and settings."""

from __future__ import annotations

from dataclasses import dataclass

from placed.model.dedications import Dedication, Event, Offering
from placed.model.inventory import Inventory
from placed.model.notice import Notice
from placed.model.storage import Storage
from placed.model.tenancy import Tenancy
from placed.model.workload import Mode, Workload


@dataclass(frozen=True, slots=True)
class Settings:
    default_mode: Mode = "allocation"
    implicit_dedication: bool = True  # seed 004's implicit.dedication.enable
    now: str | None = None  # the time events carry (ISO-8601), None: no time


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
    # Seed 004: the domain tree and accounts, the dedications in force, and the events
    # applying the spec's dedications made.
    tenancy: Tenancy | None = None
    dedications: tuple[Dedication, ...] = ()
    events: tuple[Event, ...] = ()
    offerings: tuple[Offering, ...] = ()
    storage: Storage | None = None  # primary storage pools (seed 004)
    # What a reader of a tool's own files let through with a warning (a Juju file read
    # with --force: each key juju deploy ignores; hzn's variables defined nowhere).
    notices: tuple[Notice, ...] = ()
