"""A plan as the steps Juju would run to build it, in the terms `juju deploy --dry-run`
prints a bundle's changes in: deploy an application, add a machine, add a container on a
machine, add a unit to a machine or container. A Juju user reads `placed plan FILE
--format changes` as they read Juju's own preview.

Order: every application is deployed first (as Juju does before adding units), then the
machines a bundle declares, then each unit in the order the plan placed it, preceded by
the machine or container made for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from placed.engine.outcomes import PlanResult, Unplaced
from placed.engine.state import CreatedTarget
from placed.policy.directives import DECLARED, DECLARED_CONSTRAINTS


@dataclass(frozen=True, slots=True)
class Change:
    kind: str  # deploy, add-machine, add-container, add-unit, unplaced
    text: str
    subject: str  # the application, machine, container or unit

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "subject": self.subject, "text": self.text}


def _with(constraints: str) -> str:
    return f" with constraints {constraints}" if constraints else ""


def changes(result: PlanResult) -> list[Change]:
    steps = [
        Change("deploy", f"deploy application {workload.name}", workload.name)
        for workload in result.spec.workloads
        if workload.units
    ]
    for target in result.spec.inventory.targets:
        if DECLARED in target.properties:
            wanted = target.properties.get(DECLARED_CONSTRAINTS)
            steps.append(
                Change(
                    "add-machine",
                    f"add new machine {target.id}{_with(str(wanted.value) if wanted else '')}",
                    target.id,
                )
            )
    made_for: dict[str, list[CreatedTarget]] = {}
    for made in result.new_targets:
        made_for.setdefault(made.unit, []).append(made)
    fresh: set[str] = set()
    for outcome in result.outcomes:
        for made in made_for.get(outcome.unit, ()):
            fresh.add(made.target.id)
            if made.parent is not None:
                host = (
                    f"new machine {made.parent}"
                    if made.parent in fresh
                    else (f"machine {made.parent}")
                )
                steps.append(
                    Change(
                        "add-container",
                        f"add {made.target.kind} container {made.target.id} on {host}",
                        made.target.id,
                    )
                )
            else:
                steps.append(
                    Change(
                        "add-machine",
                        f"add new machine {made.target.id}{_with(made.constraints)}",
                        made.target.id,
                    )
                )
        if isinstance(outcome, Unplaced):
            steps.append(
                Change(
                    "unplaced", f"cannot add unit {outcome.unit}: {outcome.summary}", outcome.unit
                )
            )
            continue
        landed = outcome.target
        kind = "container" if "/" in landed else "machine"
        new = "new " if landed in fresh and kind == "machine" else ""
        steps.append(
            Change("add-unit", f"add unit {outcome.unit} to {new}{kind} {landed}", outcome.unit)
        )
    return steps
