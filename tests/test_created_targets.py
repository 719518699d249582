"""Targets created during a plan, through a family's fallback: the hook Juju's "new
machine" will use. A family defined here creates a machine sized for a unit that fits
nowhere; later units may land on it, the output lists it, and the reference agrees."""

from __future__ import annotations

import json
import zlib
from dataclasses import replace
from typing import ClassVar, Self

import numpy as np
from numpy.typing import NDArray

from placed.engine.planner import Placement, Planner
from placed.engine.reference import reference_plan
from placed.engine.report import plan_document
from placed.model import TagRules, Target, Workload
from placed.policy.base import (
    BoolArray,
    Bound,
    Created,
    Family,
    FamilyState,
    Filter,
    IndexView,
    PlanView,
    Reason,
    Retry,
    World,
)
from placed.policy.deployment import Deployment
from placed.policy.registry import FAMILIES
from placed.policy.tags import tags_of
from placed.spec import load_spec_text


class NewMachine(Family):
    """A unit that fits nowhere gets a new machine with twice what it asks for."""

    name = "new-machine"
    seed = "test"

    def bind(self, index: IndexView) -> Bound:
        return Bound()

    def fallback(
        self, workload: Workload, unit: str, state: PlanView, created: int
    ) -> Created | None:
        if "no-new" in tags_of(workload):
            return None
        size = {name: 2 * amount for name, amount in workload.resources.items()}
        machine = Target(
            f"new-{created + 1}",
            "machine",
            frozenset({"fresh"}),
            {},
            TagRules(soft_affinity=frozenset({"fresh"})),
            size,
            True,
            ancestors=(("zone", "z1"),),
        )
        wanted = " ".join(f"{k}={v:g}" for k, v in sorted(size.items()))
        return Created(machine, constraints=wanted, via="new-machine")


FAMILIES_WITH_FALLBACK = (*FAMILIES, NewMachine())

SPEC = """
inventory:
  - id: z1
    kind: zone
    children: [{id: m0, kind: machine, capacity: {cpu: 4}}]
workloads:
  - {name: big, units: 3, resources: {cpu: 3}}
  - {name: small, units: 2, resources: {cpu: 2}, tags: [fresh]}
  - {name: stuck, units: 1, resources: {cpu: 99}, tags: [no-new]}
"""


def test_a_fallback_creates_targets_that_later_units_use() -> None:
    spec = load_spec_text(SPEC)
    result = Planner(spec, FAMILIES_WITH_FALLBACK).plan()
    where = {o.unit: o.target for o in result.placements}
    # big/0 fits m0; big/1 gets new-1 (6 cpu), big/2 fits what new-1 has left.
    assert where["big/0"] == "m0"
    assert where["big/1"] == "new-1"
    assert where["big/2"] == "new-1"
    # small scores +1 on the created machines (soft affinity); new-1 has no room left,
    # so small/0 gets a machine of its own and small/1 lands beside it.
    assert where["small/0"] == "new-2" and where["small/1"] == "new-2"
    vias = {o.unit: o.via for o in result.placements}
    assert vias["big/1"] == "new-machine" and vias["big/2"] == "policy"
    (stuck,) = result.unplaced
    assert stuck.summary == "0/3 targets available: 3 have insufficient cpu"

    data = plan_document(result)
    assert data["new_targets"] == [
        {"id": "new-1", "kind": "machine", "for": "big/1", "constraints": "cpu=6", "parent": None},
        {
            "id": "new-2",
            "kind": "machine",
            "for": "small/0",
            "constraints": "cpu=4",
            "parent": None,
        },
    ]
    reasons = {p["unit"]: p["reason"] for p in data["placements"]}
    assert reasons["big/1"].endswith("created for it (new-machine)")
    assert reasons["small/1"].startswith("score 1 (+fresh)")
    json.dumps(data)


def test_the_reference_creates_the_same_targets() -> None:
    spec = load_spec_text(SPEC)
    fast = [
        (o.unit, o.target if isinstance(o, Placement) else None, getattr(o, "summary", None))
        for o in Planner(spec, FAMILIES_WITH_FALLBACK).plan().outcomes
    ]
    expected = [
        (o.unit, o.target, o.summary) for o in reference_plan(spec, families=FAMILIES_WITH_FALLBACK)
    ]
    assert fast == expected


def test_created_targets_are_judged_by_the_static_rules_too() -> None:
    # A constraint on the workload: the created machine (no properties) fails it, so the
    # unit stays unplaced even after the fallback, and the summary counts both targets.
    spec = load_spec_text(SPEC)
    (big, *_) = spec.workloads
    wanted = Deployment(constraints=('purpose == "lab"',))
    picky = replace(big, name="picky", units=1, requests=(*big.requests, wanted))
    spec = replace(spec, workloads=(picky,))
    result = Planner(spec, FAMILIES_WITH_FALLBACK).plan()
    (unplaced,) = result.unplaced
    assert unplaced.filtered == {"constraint": 2}
    assert unplaced.summary.startswith("0/2 targets available: 2 fail purpose == ")
    assert [made.target.id for made in result.new_targets] == ["new-1"]


def test_without_a_fallback_nothing_is_created() -> None:
    result = Planner(load_spec_text(SPEC)).plan()
    assert result.new_targets == [] and plan_document(result)["new_targets"] == []
    assert [o.unit for o in result.unplaced] == ["big/1", "big/2", "small/0", "small/1", "stuck/0"]


class Owners(FamilyState):
    """Owned's plan state: an owner code per target, -1 for none."""

    def __init__(self, owner: NDArray[np.intp]) -> None:
        self.owner = owner

    @classmethod
    def start(cls, plan: PlanView) -> Self:
        return cls(np.full(plan.size, -1, dtype=np.intp))

    def copy(self) -> Self:
        return type(self)(self.owner.copy())

    def grown(self, position: int, target: Target) -> None:
        self.owner = np.append(self.owner, -1)


class Owned(Family):
    """A toy of CloudStack's implicit dedication: a workload may use only targets it owns;
    when it owns none with room, the fallback makes the first free unowned target its
    own (an owner in its plan state) and asks for the unit to be judged again."""

    name = "owned"
    seed = "test"

    class OwnTargets(Filter):
        name = "owned"
        summary = "the target belongs to someone else, or to nobody"

        def prepare(self, workload: Workload) -> int:
            return _owner_of(workload)

        def keep(self, prepared: int, state: PlanView) -> BoolArray:
            mine: BoolArray = state.family_state(Owners).owner == prepared
            return mine

        def reason(
            self, workload: Workload, target: Target, position: int, state: PlanView
        ) -> Reason:
            return Reason(self.name, "is not the workload's", "are not the workload's")

        def judge(self, workload: Workload, target: Target, world: World) -> Reason | None:
            raise NotImplementedError  # the fast path alone is under test here

    filter_types: ClassVar[tuple[type[Filter], ...]] = (OwnTargets,)

    def bind(self, index: IndexView) -> Bound:
        return Bound(filters=(Owned.OwnTargets(),))

    def fallback(
        self, workload: Workload, unit: str, state: PlanView, created: int
    ) -> Retry | None:
        owners = state.family_state(Owners)
        free = np.flatnonzero((owners.owner == -1) & (state.free[0] >= 1))
        if free.size == 0:
            return None
        owners.owner[int(free[0])] = _owner_of(workload)
        return Retry("implicit dedication")


def _owner_of(workload: Workload) -> int:
    """A workload's owner code, the same in every process: `hash` of a string is salted
    per process, and one salt in a thousand gave `a` and `b` the same code (b then took
    a's target)."""
    return zlib.crc32(workload.name.encode()) % 1000


def test_a_retry_fallback_changes_the_state_and_the_unit_is_judged_again() -> None:
    spec = load_spec_text(
        """
inventory:
  - {id: h1, capacity: {cpu: 2}}
  - {id: h2, capacity: {cpu: 2}}
workloads:
  - {name: a, units: 3, resources: {cpu: 1}}
  - {name: b, units: 2, resources: {cpu: 1}}
"""
    )
    result = Planner(spec, (*FAMILIES, Owned())).plan()
    where = {o.unit: o.target for o in result.placements}
    # a takes h1 (2 units), then h2 for its third; b finds nothing left to own.
    assert where == {"a/0": "h1", "a/1": "h1", "a/2": "h2"}
    assert [o.unit for o in result.unplaced] == ["b/0", "b/1"]
    # The new family comes after capacity in this registry: h1 is full, h2 is a's.
    assert result.unplaced[0].summary == (
        "0/2 targets available: 1 is not the workload's, 1 has insufficient cpu"
    )
