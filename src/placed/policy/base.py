"""What every policy family plugs into.

A family is one module in `policy/` that declares a `Family`: the filters that remove
targets, the scorers that rank the rest, and (optionally) a fallback for a unit nothing
can take. `policy/registry.py` lists the families in order; the pipeline, the reference
oracle, `placed check` and the README's filter table all read that list.

A filter sees one workload and all targets at once and returns a boolean mask (True keeps
the target); a scorer returns a float array. Both are numpy over columns. Each also
judges one target in plain Python (`judge`), written next to the fast path: the reference
oracle uses those judgements, and so do targets created during a plan, which the columns
built at bind time do not cover. For a rejected target a filter says why, in words.

A family that keeps something of its own while a plan runs (owners, counts, numbers
handed out) declares a `FamilyState` next to its filters: the plan state holds one per
family, made on first use, copied on fork and told as units land and leave, and the
filters (`state.family_state(Kind)`) and their one-target judges
(`world.family_state(Kind)`) read the same object.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, Self, TypeVar

import numpy as np
from numpy.typing import NDArray

from placed.model import Notice, Spec, Target, Workload
from placed.model.dedications import Event

BoolArray = NDArray[np.bool_]
FloatArray = NDArray[np.float64]
Codes = NDArray[np.intp]
Counts = NDArray[np.int32]


@dataclass(frozen=True, slots=True)
class Reason:
    """Why one filter rejected one target.

    `singular` and `plural` carry the same phrase for one target ("lacks required tag
    datacenter1") and for a count of them ("4 lack required tag datacenter1"), so that
    summaries read like kube-scheduler's. Targets whose phrases are equal are grouped;
    `detail` holds what would split groups ("needs 8 cpu, 2 free").
    """

    filter: str
    singular: str
    plural: str
    detail: str = ""

    @property
    def text(self) -> str:
        return f"{self.singular} ({self.detail})" if self.detail else self.singular


class Level(Protocol):
    """One topology level (a `kind` of location, or "target"): each target's ancestor of
    that kind as an integer code. Code 0 means "no ancestor of that kind"."""

    @property
    def name(self) -> str: ...

    @property
    def ids(self) -> Sequence[str | None]: ...  # code -> location id; ids[0] is None

    @property
    def column(self) -> Codes: ...


class IndexView(Protocol):
    """What a family binds its columns to: the targets the inventory declares."""

    @property
    def targets(self) -> Sequence[Target]: ...

    @property
    def resources(self) -> tuple[str, ...]: ...

    def level(self, name: str) -> Level | None: ...


class FamilyState(ABC):
    """What one family keeps while a plan runs, beside the generic plan state: one entry
    of the plan state's key -> state store, as kube-scheduler's CycleState holds a
    plugin's state. The key is the class itself: `state.family_state(Kind)` makes one
    with `start` the first time a plan asks (a plan that never uses the family pays
    nothing), and the same object after that.

    The plan state calls the hooks: `copy` on `fork()`, `added` / `removed` as a unit
    lands or leaves (only for a class that overrides one of them), `grown` when the plan
    creates a target. A state must never hold the plan state itself: a fork would then
    read the original."""

    @classmethod
    @abstractmethod
    def start(cls, plan: PlanView) -> Self:
        """This family's state for a plan that has none yet, as it stands now (units
        placed and targets created before the first use included)."""

    @abstractmethod
    def copy(self) -> Self:
        """A copy to change without touching this one (the plan state's `fork()`)."""

    def added(self, unit: str, group: str, position: int) -> None:
        """`unit` of `group` landed at `position`."""
        return None

    def removed(self, unit: str, group: str, position: int) -> None:
        """`unit` of `group` left `position`."""
        return None

    def grown(self, position: int, target: Target) -> None:
        """The plan created `target` at `position`: arrays over targets grow by one."""
        return None

    def taken_in(self, position: int, target: Target) -> None:
        """A target of the index was taken in at `position` (engine PlanState.extend_to:
        a live world's inventory grew): arrays over targets grow by one, holding what the
        index says of it. As for a created target unless the family reads more of it."""
        self.grown(position, target)


State = TypeVar("State", bound=FamilyState)


class PlanView(Protocol):
    """What a filter or scorer may read of the plan state while a plan runs. Arrays cover
    every target, those created during the plan included. What only one family keeps
    (owners, tallies, machine numbers) is in that family's state: `family_state`."""

    @property
    def size(self) -> int: ...

    @property
    def index(self) -> IndexView: ...  # the targets the inventory declares

    @property
    def up(self) -> BoolArray: ...

    @property
    def free(self) -> FloatArray: ...  # one row per resource name, one column per target

    @property
    def resources(self) -> tuple[str, ...]: ...

    def level_column(self, level: str) -> Codes: ...

    def level_id(self, level: str, code: int) -> str | None: ...

    def counts(self, group: str, level: str) -> Counts:
        """Units of `group` per value code of `level` (index 0 is always 0)."""
        ...

    def first_unit(self, group: str, level: str, code: int) -> str | None:
        """The first unit of `group` that landed under that value, if any is there."""
        ...

    @property
    def judging(self) -> str | None: ...  # the unit being judged, in allocation mode

    def position(self, target_id: str) -> int | None: ...

    def target(self, position: int) -> Target: ...

    def where(self, unit: str) -> int | None:
        """The position `unit` landed at, if it is placed."""
        ...

    @property
    def units(self) -> Mapping[str, tuple[str, int]]: ...  # unit -> (group, position)

    def created_for(self, unit: str) -> int | None:
        """The position of the target created for `unit`, if one was."""
        ...

    def family_state(self, kind: type[State]) -> State:
        """The state family `kind` keeps in this plan, made on first use."""
        ...

    def notice(self, notice: Notice) -> None:
        """Report a warning found while planning (kept once)."""
        ...

    def annotate(self, unit: str, via: str, note: str) -> None:
        """Say how a policy is placing `unit`, for its placement's reason."""
        ...

    def event(self, event: Event) -> None:
        """Record an event (a dedication made, a request that failed)."""
        ...

    def detail(self, unit: str, key: str, value: str) -> None:
        """Something decided for a unit besides its target (the pool of its disk)."""
        ...


class World(Protocol):
    """One target's surroundings, read in plain Python (the reference oracle's view)."""

    def is_up(self, target: Target) -> bool: ...

    def free(self, target: Target) -> Mapping[str, float]: ...

    def placed(self, group: str) -> Sequence[tuple[str, Target]]:
        """(unit, target) of every unit of `group` placed so far, in the order placed."""
        ...

    @property
    def judging(self) -> str | None: ...  # the unit being judged, in allocation mode

    def where(self, unit: str) -> Target | None:
        """The target `unit` landed on, if it is placed."""
        ...

    def created_for(self, unit: str) -> Target | None:
        """The target created for `unit` during the plan, if one was."""
        ...

    def position(self, target: Target) -> int:
        """Where the target sits in the plan's arrays (to read a family state's)."""
        ...

    def family_state(self, kind: type[State]) -> State:
        """The state family `kind` keeps in this plan, as the plan state has it."""
        ...

    def statically_kept(self, workload: Workload) -> Sequence[Target]:
        """The inventory's targets that the workload's static filters keep (those whose
        verdict never changes during a plan): where its units could go at all. Spread
        takes its eligible domains from these, as kube-scheduler's nodeAffinityPolicy
        Honor does."""
        ...


class Tracker(Protocol):
    """One workload's verdicts of a `local` filter followed through a block of its units
    (engine/block.py), without touching the plan state."""

    def land(self, position: int) -> bool:
        """One more unit lands at `position`: whether the target still passes."""
        ...


class Unchanged:
    """The tracker of a filter whose verdicts no landing changes (a target that is down
    stays down): the engine leaves it out."""

    def land(self, position: int) -> bool:
        return True


UNCHANGED = Unchanged()


class Filter(ABC):
    """Removes targets. `prepare` runs once per workload (None: nothing to check for it,
    at no cost per unit); `keep` once per unit, or once per workload if `static`."""

    name: ClassVar[str]
    summary: ClassVar[str]  # one line for the README's table of filters
    # A static filter's mask depends only on the workload, never on the plan state, so
    # the pipeline computes it once per workload instead of once per unit.
    static: ClassVar[bool] = False
    # The request type without which a workload passes every target (no tags: nothing
    # is forbidden). The pipeline and the reference skip the filter for such workloads.
    needs: ClassVar[type | None] = None
    # A unit that lands changes this filter's verdicts at most at the target it lands on
    # (capacity does; `distinct` over racks does not). Only then can the engine follow a
    # workload's units without judging every target again (see `tracker`).
    local: ClassVar[bool] = False

    @abstractmethod
    def prepare(self, workload: Workload) -> Any | None: ...

    @abstractmethod
    def keep(self, prepared: Any, state: PlanView) -> BoolArray: ...

    def tracker(self, prepared: Any, state: PlanView) -> Tracker | None:
        """A `local` filter's verdicts followed unit by unit from the state as it stands,
        exactly as `keep` would give them after each landing (the same float arithmetic
        as the consumer's reserve); None: the filter cannot say, so the workload's units
        are judged one at a time."""
        return None

    @abstractmethod
    def reason(self, workload: Workload, target: Target, position: int, state: PlanView) -> Reason:
        """Why this filter rejects the target at `position` (called only for those)."""

    @abstractmethod
    def judge(self, workload: Workload, target: Target, world: World) -> Reason | None:
        """The same rule for one target, in plain Python: None keeps it."""

    def with_static(self, prepared: Any, keep: BoolArray, index: IndexView) -> Any:
        """What `prepare` gave, told which of the index's targets the workload's static
        filters keep (called once per workload, for a filter that reads the plan state):
        a rule over where the workload could go at all (spread's eligible domains) takes
        it from here. The default: nothing to add."""
        return prepared

    def phrases(self, workload: Workload, positions: Codes, state: PlanView) -> Codes | None:
        """For targets of the index this filter rejects (`positions`, ascending), a code
        each, such that targets with equal codes have reasons in equal words (the same
        `filter`, `singular` and `plural`; the detail may differ). A summary then builds
        one reason per code, not per target: numpy counts the rest. None (the default):
        no grouping known, every target's reason is built."""
        return None


class Consumer(ABC):
    """A filter whose units use something up on the target they land on."""

    @abstractmethod
    def reserve(self, prepared: Any, state: Any, positions: int | NDArray[np.intp]) -> None:
        """Take a unit's share at `positions` from the plan state's columns."""

    def can_release(self, prepared: Any) -> bool:
        """Whether `release` can give back what a unit of this request took: a live
        world takes a leaving unit off in place only when every consumer can."""
        return False

    def release(self, prepared: Any, state: Any, position: int) -> None:
        """Give back what one unit took at `position` (the inverse of `reserve`), for a
        unit leaving the live world."""
        raise NotImplementedError(f"{type(self).__name__} cannot give back a unit's share")


class Scorer(ABC):
    """Ranks the targets the filters kept; higher is better. A static scorer's score
    depends only on the workload (computed once); one that reads the plan state sets
    `static = False` and implements `score_in` and `judge_in` instead."""

    name: ClassVar[str]
    summary: ClassVar[str]
    # The request type without which a workload scores 0 everywhere.
    needs: ClassVar[type | None] = None
    static: ClassVar[bool] = True

    # A non-static scorer whose scores a landing unit of the same workload changes at
    # most at the target it lands on (tenant-affinity's tallies do; soft spread's domain
    # counts do not). Only then can the engine follow a workload's units with `score_at`
    # for the landed target instead of scoring every target again.
    local: ClassVar[bool] = False

    def score_in(self, prepared: Any, state: PlanView) -> FloatArray:
        """The scores as the plan state stands (non-static scorers)."""
        return self.score(prepared)

    def score_at(self, prepared: Any, state: PlanView, position: int) -> float:
        """A `local` scorer's score at one position, as `score_in` gives it there (the
        same float)."""
        return float(self.score_in(prepared, state)[position])

    def judge_in(self, workload: Workload, target: Target, world: World) -> float:
        """One target's score as the plan state stands (non-static scorers)."""
        return self.judge(workload, target)

    @abstractmethod
    def prepare(self, workload: Workload) -> Any | None: ...

    @abstractmethod
    def score(self, prepared: Any) -> FloatArray: ...

    @abstractmethod
    def judge(self, workload: Workload, target: Target) -> float:
        """The same score for one target, in plain Python."""


@dataclass(frozen=True, slots=True)
class Created:
    """A target a fallback asks the planner to create, and the unit it is created for."""

    target: Target
    constraints: str = ""  # what the target was created to satisfy, for new_targets
    via: str = "fallback"
    parent: str | None = None  # the machine a container is created on
    # Targets to create first, for the same unit (the new machine of `lxd:new`).
    before: tuple[Target, ...] = ()


@dataclass(frozen=True, slots=True)
class Retry:
    """A fallback changed the plan state (CloudStack's implicit dedication makes an empty
    host the requester's own): judge the unit again, once."""

    why: str


Fallback = Created | Retry


@dataclass(frozen=True, slots=True)
class Bound:
    """A family bound to one index: its filters and scorers in pipeline order."""

    filters: tuple[Filter, ...] = ()
    scorers: tuple[Scorer, ...] = ()


class Family(ABC):
    """A policy family: one module, one entry in the registry."""

    name: ClassVar[str]
    seed: ClassVar[str]  # the design document it comes from ("001"), or "core"
    filter_types: ClassVar[tuple[type[Filter], ...]] = ()
    scorer_types: ClassVar[tuple[type[Scorer], ...]] = ()

    @abstractmethod
    def bind(self, index: IndexView) -> Bound:
        """Build this family's columns over the index's targets."""

    def explain(self, workload: Workload, target: Target) -> str:
        """The terms this family adds to one target's score, for a placement's reason
        ("+rack10 -rack20"); empty when it scores nothing. Plain Python: a plan result
        explains itself with the families alone, without their columns."""
        return ""

    def describe(self, workload: Workload, target: Target) -> dict[str, Any]:
        """What this family adds to a placement's document (the namespace an edge cluster
        deploys into); nothing by default. Plain Python over the workload and target."""
        return {}

    def lint(self, spec: Spec) -> list[Notice]:
        """What is valid in this family's terms but probably not what the author meant
        (`placed validate` and every plan's warnings). The default: nothing."""
        return []

    def fallback(
        self, workload: Workload, unit: str, state: PlanView, created: int
    ) -> Fallback | None:
        """Called when no target can take `unit`: a target to create for it (Juju's new
        machine), a change to the state after which to judge again (implicit
        dedication), or None. `created` is how many targets the plan has created so far,
        for naming. The default: no fallback."""
        return None

    def unplaced(self, workload: Workload, unit: str, state: PlanView, summary: str) -> None:
        """Called when `unit` ends unplaced, after any fallback, with its summary: a
        family that records failures (CloudStack's failure events) does it here, once
        per unit. The default: nothing."""
        return None


def plural_noun(noun: str, items: list[str]) -> str:
    return f"{noun}{'s' if len(items) > 1 else ''} {', '.join(items)}"
