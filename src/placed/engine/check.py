"""The deploy check (`placed check`, like `hzn deploycheck`): every workload against every
target, with all the reasons, and the conflicts a spec holds."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from placed.engine.explain import verdicts
from placed.engine.pipeline import CompiledRequest
from placed.engine.planner import Planner
from placed.engine.state import PlanState
from placed.model import Service, Spec, Workload
from placed.policy.affinity import before_plan
from placed.policy.builtins import NAMESPACE, workload_constraints
from placed.policy.deployment import deployment_of
from placed.policy.directives import creates_targets
from placed.policy.distinct import Distinct
from placed.policy.expressions import All, parse_constraint
from placed.policy.expressions.syntax import comparisons
from placed.policy.lint import lint
from placed.policy.namespaces import namespace_findings, requested_namespace

# Filters whose verdict concerns the service being deployed rather than the target in
# general; hzn deploycheck reports those per service and the rest as "general".
_SERVICE_FILTERS = {"namespace", "constraint", "target-constraint", "service"}


def service_label(workload: Workload) -> str:
    deployment = deployment_of(workload)
    if deployment.pattern:
        # hzn deploycheck reports a pattern's refusals under the pattern.
        return f"pattern {workload.name}"
    services = deployment.services
    if len(services) != 1:
        return "general"
    return service_key(services[0])


def service_key(service: Service) -> str:
    """A service as hzn deploycheck keys it: org/url_version_arch (compcheck/comp_check.go
    GetServiceAndDeps, cutil.FormExchangeIdForService)."""
    label = f"{service.org}/{service.url}" if service.org else service.url
    return (
        label
        + (f"_{service.version}" if service.version else "")
        + (f"_{service.arch}" if service.arch else "")
    )


def _pattern_namespace_reasons(workload: Workload, text: str) -> dict[str, str]:
    """A pattern's namespace refusal on a namespace-scoped node, one entry per service as
    deploycheck gives it (compcheck/comp_check.go patternClusterNSCompatible), naming the
    pattern."""
    return {
        service_key(service): f"cluster namespace is incompatible with pattern "
        f"{workload.name}: the node {text}"
        for service in deployment_of(workload).services
    }


def _distinct(
    workload: Workload, compatible: Sequence[bool] | NDArray[np.bool_], state: PlanState
) -> dict[str, Any] | None:
    """How many values of its `distinct` level the workload's compatible targets span
    (None when one of them has no ancestor of that kind: then there is no limit)."""
    wanted = workload.request(Distinct)
    if wanted is None:
        return None
    codes = state.level_column(wanted.level)[np.array(compatible, dtype=bool)]
    values = None if (codes == 0).any() else int(np.unique(codes).size)
    return {"level": wanted.level, "values": values}


def _real_conflict(workload: Workload) -> str | None:
    """The policy-level reason a namespace-scoped node refuses a policy that contradicts
    itself (its namespace against its openhorizon.kubernetesNamespace constraint)."""
    for finding in namespace_findings(workload):
        if finding.code == "namespace-conflict":
            wanted = requested_namespace(workload)
            tree = parse_constraint(workload_constraints(workload)).tree
            terms = tree.terms if isinstance(tree, All) else (tree,) if tree else ()
            named = [t for t in terms if any(c.name == NAMESPACE for c in comparisons(t))]
            text = " AND ".join(str(t) for t in named)
            return (
                f"policy conflict: the policy deploys to namespace {wanted} but requires "
                f"{text}; on a namespace-scoped node {NAMESPACE} is the deployment's "
                "namespace, so no such node can run it"
            )
    return None


@dataclass(frozen=True, slots=True)
class Checked:
    """One workload's part of a check: its row, and the conflicts it brings."""

    row: dict[str, Any]
    conflicts: list[dict[str, Any]]
    creates: bool = False  # its units get targets made for them (Juju's new machines)

    @property
    def failed(self) -> bool:
        """No target is compatible with the workload (exit code 1); units that get a
        target made for them need none to exist."""
        return int(self.row["compatible_targets"]) == 0 and not self.creates


def workload_conflicts(
    workload: Workload, compatible: NDArray[np.bool_], state: PlanState, spec: Spec
) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """(the workload's `distinct` spread, or None; the conflicts it brings), from which
    targets are compatible with it: the same for the full matrix and the summary."""
    conflicts = []
    count = int(compatible.sum())
    spread = _distinct(workload, compatible, state)
    if spread is not None and spread["values"] is not None and spread["values"] < workload.units:
        conflicts.append(
            {
                "code": "distinct-too-few-values",
                "workload": workload.name,
                "message": f"{workload.name} asks for {workload.units} units on "
                f"distinct {spread['level']}s, but its compatible targets span "
                f"{spread['values']}; {workload.units - spread['values']} would "
                "stay unplaced",
                "real": True,
            }
        )
    every = namespace_findings(workload, spec.inventory.targets)
    findings = [f for f in every if f.code.startswith("namespace-")]
    conflicts.extend(
        {"code": f.code, "workload": f.workload, "message": f.message, "real": True}
        for f in every
        if f.real
    )
    if findings and count == 0:
        conflicts.append(
            {
                "code": "no-compatible-target",
                "workload": workload.name,
                "message": f"no target in the inventory can deploy {workload.name}: "
                f"{compatible.size} checked, none compatible",
                "real": True,
            }
        )
    return spread, conflicts


def checked_request(planner: Planner, workload: Workload) -> CompiledRequest:
    """The workload compiled as check judges it: before a plan, so without the near terms
    to workloads the plan has yet to place (policy/affinity.py before_plan)."""
    planned = {w.name for w in planner.spec.workloads if w.mode == "allocation" and w.units}
    judged = before_plan(workload, planned)
    if judged is workload:
        return planner.request(workload)
    return planner.pipeline.compile(judged)


def check_warnings(planner: Planner, workloads: Sequence[Workload]) -> list[dict[str, Any]]:
    """The spec's lint warnings that concern the checked workloads (or no workload)."""
    chosen = {workload.name for workload in workloads}
    return [
        notice.to_dict()
        for notice in lint(planner.spec, planner.families)
        if notice.workload is None or notice.workload in chosen
    ]


def check_rows(planner: Planner, workloads: Sequence[Workload]) -> Iterator[Checked]:
    """The full matrix, one workload at a time (so that the CLI can print each as it
    comes): every target, with every failing filter's reason."""
    state = planner.initial_state()
    for workload in workloads:
        found = verdicts(planner.pipeline, checked_request(planner, workload), state)
        compatible = sum(v.compatible for v in found)
        label = service_label(workload)
        conflict = _real_conflict(workload)
        targets = []
        for position, verdict in enumerate(found):  # verdicts come in target order
            target = state.target(position)
            reasons = [{"filter": r.filter, "message": r.text} for r in verdict.reasons]
            by_service: dict[str, list[str]] = {}
            if conflict is not None and reasons and target.agent.scope == "namespace":
                # On a namespace-scoped node the policy contradicts itself: the policy-level
                # reason first, under "general" as hzn deploycheck gives it
                # (compcheck/policy_check.go policyCompatible); each filter's own reasons
                # stay, so the failing constraint is still named.
                reasons.insert(0, {"filter": "general", "message": conflict})
                by_service["general"] = [conflict]
            pattern = deployment_of(workload).pattern
            for reason in verdict.reasons:
                if pattern and reason.filter == "namespace" and target.agent.scope == "namespace":
                    for key, text in _pattern_namespace_reasons(workload, reason.text).items():
                        by_service.setdefault(key, []).append(text)
                    continue
                key = label if reason.filter in _SERVICE_FILTERS else "general"
                by_service.setdefault(key, []).append(reason.text)
            row: dict[str, Any] = {"target": verdict.target}
            if target.agent.agent_namespace is not None:
                row["namespace"] = target.agent.agent_namespace  # an edge cluster's agent
            row.update(
                compatible=verdict.compatible,
                score=verdict.score if verdict.compatible else None,  # ranks usable ones
                reasons=reasons,
                reason={key: "; ".join(texts) for key, texts in by_service.items()},
            )
            targets.append(row)
        summary: dict[str, Any] = {
            "workload": workload.name,
            "compatible_targets": compatible,
            "summary": f"{compatible}/{len(found)} targets compatible",
            "targets": targets,
        }
        mask = np.fromiter((v.compatible for v in found), dtype=bool, count=len(found))
        spread, conflicts = workload_conflicts(workload, mask, state, planner.spec)
        if spread is not None:
            summary["distinct"] = spread
        yield Checked(summary, conflicts, creates_targets(workload))


def check_document(
    view: str, checked: Iterable[Checked], planner: Planner, workloads: Sequence[Workload]
) -> tuple[dict[str, Any], bool]:
    """(the document of a check's rows, whether some workload has no compatible target)."""
    rows = []
    conflicts = []
    failed = False
    for one in checked:
        rows.append(one.row)
        conflicts.extend(one.conflicts)
        failed = failed or one.failed
    warnings = check_warnings(planner, workloads)
    document = {"view": view, "workloads": rows, "conflicts": conflicts, "warnings": warnings}
    return document, failed


def deploy_check(planner: Planner, workloads: list[Workload]) -> tuple[dict[str, Any], bool]:
    """(the check document, whether some workload has no compatible target at all)."""
    return check_document("all", check_rows(planner, workloads), planner, workloads)
