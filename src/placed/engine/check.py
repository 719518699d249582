"""The deploy check (`placed check`, like `hzn deploycheck`): every workload against every
target, with all the reasons, and the conflicts a spec holds."""

from __future__ import annotations

from typing import Any

import numpy as np

from placed.engine.explain import verdicts
from placed.engine.planner import Planner
from placed.engine.state import PlanState
from placed.model import Service, Workload
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
    workload: Workload, compatible: list[bool], state: PlanState
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


def deploy_check(planner: Planner, workloads: list[Workload]) -> tuple[dict[str, Any], bool]:
    """(the check document, whether some workload has no compatible target at all)."""
    state = planner.initial_state()
    rows = []
    conflicts = []
    failed = False
    for workload in workloads:
        found = verdicts(planner.pipeline, planner.request(workload), state)
        compatible = sum(v.compatible for v in found)
        # Units that get a target made for them (Juju's new machines) need none to exist.
        failed = failed or (compatible == 0 and not creates_targets(workload))
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
                score=verdict.score,
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
        spread = _distinct(workload, [v.compatible for v in found], state)
        if spread is not None:
            summary["distinct"] = spread
            if spread["values"] is not None and spread["values"] < workload.units:
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
        rows.append(summary)
        every = namespace_findings(workload, planner.spec.inventory.targets)
        findings = [f for f in every if f.code.startswith("namespace-")]
        conflicts.extend(
            {"code": f.code, "workload": f.workload, "message": f.message, "real": True}
            for f in every
            if f.real
        )
        if findings and compatible == 0:
            conflicts.append(
                {
                    "code": "no-compatible-target",
                    "workload": workload.name,
                    "message": f"no target in the inventory can deploy {workload.name}: "
                    f"{len(found)} checked, none compatible",
                    "real": True,
                }
            )
    chosen = {workload.name for workload in workloads}
    warnings = [
        notice.to_dict()
        for notice in lint(planner.spec, planner.families)
        if notice.workload is None or notice.workload in chosen
    ]
    return {"workloads": rows, "conflicts": conflicts, "warnings": warnings}, failed
