"""What a plan produces, as plain records: no planner, no index, no numpy inside.

The output contract (JSON and reason text) is engine/report.py's; these are its input,
and what the service will store.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from placed.engine.state import CreatedTarget
from placed.model import Notice, Spec
from placed.model.dedications import Event
from placed.policy.base import Family


@dataclass(frozen=True, slots=True)
class Placement:
    workload: str
    unit: str
    target: str
    score: float
    feasible: int  # targets that passed every filter
    total: int
    tied: tuple[str, ...]  # the top-scoring targets when more than one, else empty
    via: str = "policy"
    # Bounded-load mapping (max_load): the per-target cap, and the targets the unit ranks
    # above the one it got (full ones), when it did not get its first choice.
    cap: int | None = None
    choice: int = 1
    ahead: tuple[str, ...] = ()
    container: str | None = None  # the kind of container the unit runs in (lxc, kvm...)
    note: str = ""  # how a policy put it there ("to lxc:wordpress: a new lxc container...")
    details: tuple[tuple[str, str], ...] = ()  # what else was decided (its disk's pool)


@dataclass(frozen=True, slots=True)
class Unplaced:
    workload: str
    unit: str
    summary: str
    filtered: dict[str, int]


Outcome = Placement | Unplaced


@dataclass(frozen=True, slots=True)
class DedicationCreated:
    """A resource a plan dedicated to an account on its own (implicit dedication)."""

    resource: str
    account: str
    implicit: bool = True
    domain: str = ""


@dataclass
class PlanResult:
    """A plan's outcomes and what the plan made along the way. It holds the spec it was
    planned from (to explain itself) and the families that planned it (for their score
    terms), never the planner."""

    spec: Spec
    families: tuple[Family, ...]
    outcomes: list[Outcome] = field(default_factory=list)
    warnings: list[Notice] = field(default_factory=list)
    new_targets: list[CreatedTarget] = field(default_factory=list)
    dedications_created: list[DedicationCreated] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)

    @property
    def placements(self) -> list[Placement]:
        return [o for o in self.outcomes if isinstance(o, Placement)]

    @property
    def unplaced(self) -> list[Unplaced]:
        return [o for o in self.outcomes if isinstance(o, Unplaced)]

    def by_unit(self) -> dict[str, Outcome]:
        return {o.unit: o for o in self.outcomes}
