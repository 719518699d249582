"""Cluster namespaces (seed 002): where a deployment goes on an edge cluster, and which
targets accept it.

- A policy deploys to its cluster_namespace if set, else to the namespace embedded in its
  service's operator, else to the agent's own namespace.
- A namespace-scoped agent accepts only its own namespace; a cluster-scoped agent accepts
  any; a device ignores namespaces.
- Patterns: a cluster-scoped agent takes only patterns with no cluster_namespace; a
  namespace-scoped agent only patterns whose cluster_namespace is its namespace. A pattern
  whose services embed different namespaces and that names none is in error (the seed)
  where a namespace-scoped agent would take it but for its namespace: a real conflict.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from placed.model import Notice, Spec, Target, Workload
from placed.model.properties import make_property
from placed.policy.base import (
    BoolArray,
    Bound,
    Codes,
    Family,
    Filter,
    IndexView,
    PlanView,
    Reason,
    World,
)
from placed.policy.builtins import (
    NAMESPACE,
    node_properties,
    workload_constraints,
    workload_properties,
)
from placed.policy.deployment import Deployment, deployment_of
from placed.policy.expressions import Constraint, parse_constraint
from placed.policy.expressions.evaluate import holds_if_known, satisfied
from placed.policy.services import first_refusal

DEVICE, CLUSTER, NAMESPACED = 0, 1, 2
_SCOPES = {"device": DEVICE, "cluster": CLUSTER, "namespace": NAMESPACED}


def requested_namespace(workload: Workload) -> str | None:
    """The namespace a workload asks for, before the target's own is considered."""
    deployment = deployment_of(workload)
    if deployment.cluster_namespace:
        return deployment.cluster_namespace
    if deployment.pattern:
        return None
    embedded = [s.namespace for s in deployment.services if s.namespace]
    return embedded[0] if embedded else None


def deployment_namespace(workload: Workload, target: Target) -> str | None:
    """Where the workload runs on this target; None on a device, and None when the
    services of a pattern go to different namespaces (see service_namespaces)."""
    spread = service_namespaces(workload, target)
    if not spread:
        if target.agent.scope == "device":
            return None
        return requested_namespace(workload) or target.agent.agent_namespace
    found = set(spread.values())
    return found.pop() if len(found) == 1 else None


def service_namespaces(workload: Workload, target: Target) -> dict[str, str]:
    """Where each service of the workload runs on this target ({} on a device).

    A policy's cluster_namespace, or a pattern's, puts every service there. A pattern
    without one deploys each service into the namespace its operator embeds, or the
    agent's own (issue 11; the seed's rule for policies, applied per service); a policy
    deploys its one service to what requested_namespace says.
    """
    if target.agent.scope == "device":
        return {}
    deployment = deployment_of(workload)
    own = target.agent.agent_namespace or ""
    if deployment.pattern and not deployment.cluster_namespace:
        return {s.url: s.namespace or own for s in deployment.services}
    where = requested_namespace(workload) or own
    return {s.url: where for s in deployment.services}


class NamespaceScope(Filter):
    name = "namespace"
    summary = "the target's agent does not accept the deployment's cluster namespace"
    static = True
    needs = Deployment

    def __init__(self, targets: Sequence[Target]) -> None:
        self.scope = np.array([_SCOPES[t.agent.scope] for t in targets], dtype=np.int8)
        codes: dict[str | None, int] = {}
        self.namespace = np.array(
            [codes.setdefault(t.agent.agent_namespace, len(codes)) for t in targets], dtype=np.intp
        )
        self.codes = codes
        self.all_devices = not bool((self.scope != DEVICE).any())

    def prepare(self, workload: Workload) -> BoolArray | None:
        if self.all_devices:
            return None
        wanted = requested_namespace(workload)
        code = self.codes.get(wanted, -1)
        in_wanted: NDArray[np.bool_] = self.namespace == code
        mask: BoolArray
        if deployment_of(workload).pattern:
            if wanted is None:
                mask = self.scope != NAMESPACED
            else:
                mask = (self.scope == DEVICE) | ((self.scope == NAMESPACED) & in_wanted)
        elif wanted is None:
            mask = np.ones(self.scope.shape, dtype=bool)
        else:
            mask = (self.scope != NAMESPACED) | in_wanted
        return mask

    def keep(self, prepared: BoolArray, state: PlanView) -> BoolArray:
        return prepared

    def reason(self, workload: Workload, target: Target, position: int, state: PlanView) -> Reason:
        return namespace_reason(workload, target)

    def phrases(self, workload: Workload, positions: Codes, state: PlanView) -> Codes:
        # The words say the agent is cluster-scoped (0), or name its own namespace (1 +
        # the namespace's code); a device is never rejected.
        cluster = self.scope[positions] == CLUSTER
        codes: Codes = np.where(cluster, 0, self.namespace[positions] + 1)
        return codes

    def judge(self, workload: Workload, target: Target, world: World) -> Reason | None:
        return None if accepts(workload, target) else namespace_reason(workload, target)


class Namespaces(Family):
    """Seed 002: cluster namespaces decide which edge cluster agents accept a deployment."""

    name = "namespaces"
    seed = "002"
    filter_types: ClassVar[tuple[type[Filter], ...]] = (NamespaceScope,)

    def bind(self, index: IndexView) -> Bound:
        return Bound(filters=(NamespaceScope(index.targets),))

    def describe(self, workload: Workload, target: Target) -> dict[str, Any]:
        """Where on an edge cluster the deployment goes: its namespace, or per service
        when a pattern's services go to different ones."""
        deployment = deployment_of(workload)
        if not (deployment.services or deployment.cluster_namespace):
            return {}
        namespace = deployment_namespace(workload, target)
        if namespace is not None:
            return {"namespace": namespace}
        if target.agent.scope != "device":
            return {"namespaces": service_namespaces(workload, target)}
        return {}

    def lint(self, spec: Spec) -> list[Notice]:
        targets = spec.inventory.targets
        return [
            Notice(finding.code, finding.message, workload=finding.workload)
            for workload in spec.workloads
            if _may_find(workload)
            for finding in namespace_findings(workload, targets)
        ]


def _may_find(workload: Workload) -> bool:
    """Whether namespace_findings can find anything: every finding is about a service's
    embedded namespace or the deployment's cluster_namespace, and most workloads (a unit
    of its own each, ten thousand of them) have neither."""
    deployment = deployment_of(workload)
    return bool(deployment.services or deployment.cluster_namespace)


def accepts(workload: Workload, target: Target) -> bool:
    """The rule for one target, in plain words (the reference oracle uses this)."""
    scope = target.agent.scope
    if scope == "device":
        return True  # a device ignores namespaces
    wanted = requested_namespace(workload)
    if deployment_of(workload).pattern:
        if scope == "cluster":
            return wanted is None
        return wanted is not None and wanted == target.agent.agent_namespace
    return scope == "cluster" or wanted is None or wanted == target.agent.agent_namespace


def namespace_reason(workload: Workload, target: Target) -> Reason:
    own = target.agent.agent_namespace
    wanted = requested_namespace(workload)
    if target.agent.scope == "cluster":
        return Reason(
            NamespaceScope.name,
            "is cluster-scoped and takes only patterns without a cluster namespace",
            "are cluster-scoped and take only patterns without a cluster namespace",
            f"the pattern deploys to {wanted}",
        )
    if wanted is None:
        return Reason(
            NamespaceScope.name,
            f"is scoped to namespace {own} and the pattern names no namespace",
            f"are scoped to namespace {own} and the pattern names no namespace",
        )
    return Reason(
        NamespaceScope.name,
        f"is scoped to namespace {own}",
        f"are scoped to namespace {own}",
        f"the deployment goes to {wanted}",
    )


@dataclass(frozen=True, slots=True)
class Finding:
    code: str
    workload: str
    message: str
    real: bool  # a real conflict (no target of that kind can ever match), not an overlap


def could_target(workload: Workload, targets: Sequence[Target]) -> list[Target]:
    """The namespace-scoped targets that would take the workload but for its namespace:
    its services fit them and the constraints hold both ways. Only asked of a pattern whose
    services embed different namespaces, so the loop over targets is rare (and lint's)."""
    scoped = [t for t in targets if t.agent.scope == "namespace"]
    if not scoped:
        return []
    wanted = parse_constraint(workload_constraints(workload))
    properties = workload_properties(workload)
    theirs: dict[tuple[str, ...], Constraint] = {}
    found = []
    for target in scoped:
        if first_refusal(workload, target) is not None:
            continue
        if not satisfied(wanted, node_properties(target)):
            continue
        own = theirs.get(target.constraints)
        if own is None:
            own = theirs[target.constraints] = parse_constraint(list(target.constraints))
        if satisfied(own, properties):
            found.append(target)
    return found


def namespace_findings(workload: Workload, targets: Sequence[Target] = ()) -> list[Finding]:
    """What Open Horizon's publish step warns about and deploycheck must decide (seed 002):
    a policy that picks a namespace and also constrains openhorizon.kubernetesNamespace,
    a service that embeds its namespace, and a pattern whose services embed different
    namespaces (the seed: such a pattern "is in error" where it would deploy to a
    namespace-scoped node, so that is a real conflict when `targets` hold one)."""
    findings = []
    deployment = deployment_of(workload)
    embedded = sorted({s.namespace for s in deployment.services if s.namespace})
    if deployment.pattern and not deployment.cluster_namespace and len(embedded) > 1:
        head = (
            f"the pattern's services embed different namespaces ({', '.join(embedded)}) "
            "and the pattern sets no cluster_namespace"
        )
        reached = could_target(workload, targets)
        if reached:
            names = ", ".join(t.id for t in reached[:3]) + (", ..." if len(reached) > 3 else "")
            message = (
                f"{head}, and namespace-scoped nodes would take it ({names}): the pattern "
                "is in error there (no one namespace holds its services); set "
                "cluster_namespace to deploy them together"
            )
        else:
            message = (
                f"{head}: on an edge cluster each service deploys to its own, and no "
                "namespace-scoped node can run the pattern; set cluster_namespace to "
                "deploy them together"
            )
        findings.append(Finding("pattern-namespaces-differ", workload.name, message, bool(reached)))
    for service in deployment.services:
        if service.namespace:
            findings.append(
                Finding(
                    "embedded-namespace",
                    workload.name,
                    f"service {service.url} embeds namespace {service.namespace} in its "
                    "operator; that is not best practice (let the deployment policy choose "
                    "with cluster_namespace) and it may not deploy; run placed check",
                    False,
                )
            )
    wanted = requested_namespace(workload)
    if wanted is None:
        return findings  # before the parse: most workloads pick no namespace
    constraint = parse_constraint(workload_constraints(workload))
    if not any(c.name == NAMESPACE for c in constraint.comparisons):
        return findings
    # On a namespace-scoped node the deployment lands only where the node's namespace is
    # `wanted`, so that is the only value openhorizon.kubernetesNamespace can have there.
    verdict = holds_if_known(
        constraint.tree,
        {
            NAMESPACE: make_property(NAMESPACE, wanted),
            "openhorizon.kubernetesNamespaceScoped": make_property(
                "openhorizon.kubernetesNamespaceScoped", True
            ),
        },
    )
    source = (
        "cluster_namespace"
        if deployment_of(workload).cluster_namespace
        else "its service's embedded namespace"
    )
    head = (
        f"sets {source} {wanted} and also constrains {NAMESPACE}: this may result in no "
        "deployments; run placed check."
    )
    if verdict is False:
        findings.append(
            Finding(
                "namespace-conflict",
                workload.name,
                f"{head} It is a real conflict: the constraint `{constraint}` is false "
                f"whenever {NAMESPACE} is {wanted}, so no namespace-scoped node can run it",
                True,
            )
        )
    else:
        findings.append(
            Finding(
                "namespace-overlap",
                workload.name,
                f"{head} Not a conflict by itself: the constraint `{constraint}` can hold "
                f"when {NAMESPACE} is {wanted}",
                False,
            )
        )
    return findings
