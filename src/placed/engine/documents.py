"""The documents a front end prints or serves, one function each, beside those of
engine/report.py (a plan), engine/trace.py (one unit), engine/check.py and
engine/check_summary.py (a check): the part of a simulation that explains it, migrations
and maintenance, dedications and what they cover, and a validation. The CLI parses its
arguments, calls one of these and prints what it returns; the service will do the same
with a request's body, so both give the same contract.

An argument a document cannot answer (a VM that does not run, a principal the spec does
not know) is an `ArgumentError` naming the argument: the CLI reports it as its option,
the service as the field at fault.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from placed.engine.cloud import Cloud
from placed.engine.outcomes import PlanResult
from placed.engine.planner import Planner
from placed.engine.rebalance import Simulation
from placed.engine.report import plan_document
from placed.model import Spec
from placed.model.dedications import DedicationError
from placed.model.tenancy import ROOT_ADMIN
from placed.policy.expressions.dialect import dialect_notices
from placed.policy.lint import lint


class ArgumentError(ValueError):
    """An argument the document cannot answer; `argument` names it (migrate, as, ...)."""

    def __init__(self, argument: str, message: str) -> None:
        super().__init__(message)
        self.argument = argument


def only_workloads(result: PlanResult, names: set[str]) -> PlanResult:
    """The plan, as far as the workloads `names` are concerned (planned with all others)."""
    outcomes = [o for o in result.outcomes if o.workload in names]
    units = {o.unit for o in outcomes}
    return dataclasses.replace(
        result,
        outcomes=outcomes,
        warnings=[w for w in result.warnings if w.workload is None or w.workload in names],
        new_targets=[made for made in result.new_targets if made.unit in units],
    )


def simulation_document(planner: Planner, result: Simulation) -> dict[str, Any]:
    """The output contract of a simulation, with what explains it: units_before,
    unplaced_before, already_down, already_up, removed (and per move)."""
    data = result.to_dict()
    every = {w.name for w in planner.spec.workloads if w.mode == "every"}
    after = result.after.by_unit()
    removed = 0
    for move in data["moves"]:
        # An every-mode unit is named after its target: once that is gone, so is the unit.
        gone = move["workload"] in every and move["to"] is None and move["unit"] not in after
        move["removed"] = gone
        removed += gone
    data.update(
        units_before=len(result.before.outcomes) + result.ran,
        unplaced_before=plan_document(
            dataclasses.replace(result.before, outcomes=list(result.before.unplaced))
        )["unplaced"],
        already_down=result.already_down,
        already_up=result.already_up,
        removed=removed,
    )
    return data


def migration_document(
    cloud: Cloud,
    migrate: Sequence[tuple[str, str]],
    targets: Sequence[str],
    maintenance: Sequence[str],
) -> tuple[dict[str, Any], bool]:
    """CloudStack's migrations (VM, host) and maintenance on the spec's running VMs, in
    order, as the root admin; then where each VM of `targets` may go. (the document,
    whether something was refused)."""
    before = len(cloud.events)
    moved: list[dict[str, str | None]] = []
    refused: list[dict[str, str | None]] = []
    notes: list[str] = []
    for name, host in migrate:
        was: str | None = None
        try:
            was = cloud.where(name)
            cloud.migrate(ROOT_ADMIN, name, host)
            moved.append({"unit": name, "from": was, "to": host})
        except DedicationError as error:
            if error.kind == "invalid-parameter":
                raise ArgumentError("migrate", error.message) from None
            # It stays where it runs: `from` says where that is.
            refused.append(
                {"unit": name, "from": was, "to": host, "kind": error.kind, "why": error.message}
            )
    for host in maintenance:
        try:
            evacuated = cloud.evacuate(ROOT_ADMIN, host)
            if not evacuated:
                notes.append(f"host {host} runs no VMs: maintenance moves nothing")
            for name, to in evacuated.items():
                moved.append({"unit": name, "from": host, "to": to})
        except DedicationError as error:
            if error.kind == "invalid-parameter" and "no host" in error.message:
                raise ArgumentError("maintenance", error.message) from None
            refused.append(
                {"unit": host, "from": host, "to": None, "kind": error.kind, "why": error.message}
            )
    where: dict[str, list[str]] = {}
    for name in targets:
        try:
            where[name] = cloud.migration_targets(name)
        except DedicationError as error:
            raise ArgumentError("targets", error.message) from None
    document = {
        "migrated": moved,
        "refused": refused,
        "targets": where,
        "notes": notes,
        "events": [e.to_dict() for e in cloud.events[before:]],
    }
    return document, bool(refused)


@dataclass(frozen=True, slots=True)
class Operation:
    """A dedication operation to try: dedicate or update to (domain, account), or release."""

    kind: str  # dedicate, update or release
    resource: str
    domain: str | None = None
    account: str | None = None


def dedications_document(
    cloud: Cloud,
    principal: str,
    operations: Sequence[Operation] = (),
    kind: str | None = None,
    domain: str | None = None,
    account: str | None = None,
    coverage: bool = False,
) -> dict[str, Any]:
    """The dedications `principal` may list, after trying `operations` as that principal
    (on this cloud: the CLI gives it a copy), and with `coverage` what each covers."""
    who = cloud.tenancy.principal(principal)
    if who is None:
        raise ArgumentError(
            "as",
            f"{principal!r} is not a principal here: write root-admin, domain-admin:DOMAIN "
            "or user:ACCOUNT",
        )
    for operation in operations:
        try:
            if operation.kind == "release":
                cloud.release(who, operation.resource)
            elif operation.domain is None:
                raise ArgumentError(operation.kind, "give the owner: RESOURCE=DOMAIN[/ACCOUNT]")
            elif operation.kind == "dedicate":
                cloud.dedicate(who, operation.resource, operation.domain, operation.account)
            else:
                cloud.update(who, operation.resource, operation.domain, operation.account)
        except DedicationError as error:
            raise ArgumentError(operation.kind, f"{error.kind}: {error.message}") from None
    try:
        listed = cloud.list_dedications(who, kind, domain, account)
    except DedicationError as error:
        raise ArgumentError(error.parameter or "as", f"{error.kind}: {error.message}") from None
    data: dict[str, Any] = {"dedications": [d.to_dict() for d in listed]}
    if coverage:
        # What a dedication of any kind covers; `kind` picks the rows.
        shown = {d.resource for d in cloud.list_dedications(who, None, domain, account)}
        rows = []
        for resource, resource_kind in cloud.rules.topology.kinds.items():
            found, inherited = cloud.rules.owner(resource)
            if found is None or found.resource not in shown:
                continue
            if kind is not None and resource_kind != kind:
                continue
            rows.append(
                {
                    "resource": resource,
                    "kind": resource_kind,
                    "domain": found.owner.domain,
                    "account": found.owner.account,
                    "inherited_from": found.resource if inherited else None,
                }
            )
        data["coverage"] = rows
    return data


def validation_document(spec: Spec, dialect_openhorizon: bool = False) -> dict[str, Any]:
    """`placed validate` of a spec that loaded: its size and its warnings (with the Open
    Horizon dialect's, when asked)."""
    notices = [*lint(spec), *(dialect_notices(spec) if dialect_openhorizon else [])]
    return {
        "valid": True,
        "targets": len(spec.inventory.targets),
        "workloads": len(spec.workloads),
        "warnings": [n.to_dict() for n in notices],
    }
