"""The answers' shapes, for the OpenAPI schema: the plan document of the output contract
(DESIGN.md, as `placed plan --format json` prints it) and what each change adds to it.

They document and are never used to build or filter an answer (the engine's document
functions build them): open models, since a family may add keys to a placement
(Open Horizon's `namespace`, a Juju container's machine). Schemathesis holds every
answer to them."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class Balance(Open):
    cap: int = Field(description="At most this many units per target (max_load).")
    choice: int = Field(description="1 for the unit's first choice, 2 for its second...")
    ranked_higher: list[str] = Field(description="The fuller targets it would have had.")


class PlacementView(Open):
    workload: str
    unit: str
    target: str
    score: float
    via: str = Field(description="What placed it: policy, directive, every, fallback...")
    reason: str = Field(description="The placement in words: score, ties, limits.")
    container: str | None = None
    balance: Balance | None = None


class UnplacedView(Open):
    workload: str
    unit: str
    summary: str = Field(description="0/N targets available: why, counted by reason.")
    filtered: dict[str, int] = Field(description="Targets rejected, per filter.")


class NewTargetView(Open):
    id: str
    kind: str
    for_: str = Field(alias="for", description="The unit it was made for.")
    constraints: str
    parent: str | None


class WarningView(Open):
    code: str
    message: str
    workload: str | None
    unit: str | None
    target: str | None


class DedicationMade(Open):
    resource: str
    domain: str
    account: str
    implicit: bool


class PlanEvent(Open):
    time: str | None
    actor: str
    kind: str
    subject: str
    details: dict[str, Any]


class PlanDocument(Open):
    placements: list[PlacementView]
    unplaced: list[UnplacedView]
    new_targets: list[NewTargetView]
    warnings: list[WarningView]
    dedications_created: list[DedicationMade]
    events: list[PlanEvent]


class PlanAnswer(PlanDocument):
    name: str = Field(description="The spec's name.")


class MoveView(Open):
    workload: str
    unit: str
    from_: str | None = Field(alias="from")
    to: str | None
    why: str
    kind: str = Field(description="unit.placed, unit.moved, unit.unplaced, unit.removed")
    details: dict[str, Any] | None = None


class Misfit(MoveView):
    new: bool = Field(description="This change made it incompatible.")


class ChangeAnswer(PlanDocument):
    """A committed (or, with dry_run, previewed) change: the plan of what it touched."""

    revision: int
    conflicts: int = Field(description="Times the server planned again after a conflict.")
    changes: list[MoveView]
    incompatible: list[Misfit] = Field(
        description="Allocation units that no longer fit where they run; they stay until replaced."
    )


class ApplyAnswer(ChangeAnswer):
    dry_run: bool
    documents: list[str]


class RemovedAnswer(Open):
    revision: int
    changes: list[MoveView]


class UnitAnswer(Open):
    unit: str
    workload: str
    account: str | None
    target: str | None
    history: list[dict[str, Any]]
    explanation: dict[str, Any] | None


def documented(model: type[BaseModel], description: str) -> dict[str, Any]:
    """A route's 200 (or 201) entry of `responses=`."""
    return {"model": model, "description": description}
