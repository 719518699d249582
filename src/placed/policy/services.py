"""What an Open Horizon service needs of the node it runs on (seed 002 and Open Horizon's
compatibility check, anax compcheck/): a deployment for the node's kind (a device runs
only services with a `deployment`, an edge cluster only services with a
`clusterDeployment`), the node's architecture (or `*`; synonyms such as x86_64 for amd64
are the same architecture, as the agbot maps them), and privileged mode where the
service asks for it (a node whose `openhorizon.allowPrivileged` is false refuses it).

On a device, the services a service requires (requiredServices) run beside it, so each
must fit the device too: the agbot resolves them for the node's architecture, and
privilege counts over all of them (compcheck/comp_check.go ServicesRequirePrivilege). On
an edge cluster they are not deployed (agreementbot/agreementworker.go drops a cluster
service's dependencies), so they ask nothing of it.

The user writes none of this as a constraint: it follows from the service definition.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from placed.model import Service, Target, Workload
from placed.model.inventory import canonical_arch
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
from placed.policy.builtins import node_allows_privileged
from placed.policy.deployment import Deployment, deployment_of

# Architectures a service may name to run anywhere.
ANY_ARCH = ("", "*")


def node_kind(target: Target) -> str:
    """ "device" or "cluster": which of a service's deployments the node would run."""
    return "device" if target.agent.scope == "device" else "cluster"


def service_name(service: Service) -> str:
    return f"{service.org}/{service.url}" if service.org else service.url


def deployed(service: Service, target: Target) -> tuple[Service, ...]:
    """What runs on the node when it takes the service: the service and, on a device,
    what it requires."""
    if node_kind(target) == "device" and service.requires:
        return service.with_requirements()
    return (service,)


def refusal(service: Service, target: Target, top: Service | None = None) -> Reason | None:
    """Why this node cannot run this service (one `top` requires, if given), or None: the
    rule in plain words."""
    kind = node_kind(target)
    name = service_name(service)
    if top is not None and top is not service:
        name = f"{name} (which {service_name(top)} requires)"
    if kind not in service.runs_on:
        what = "deployment" if kind == "device" else "clusterDeployment"
        return Reason(
            ServiceFits.name,
            f"is {'a device' if kind == 'device' else 'an edge cluster'} and the service has "
            f"no {what}",
            f"are {'devices' if kind == 'device' else 'edge clusters'} and the service has "
            f"no {what}",
            f"{name} runs on {', '.join(service.runs_on) or 'nothing'}",
        )
    arch = target.agent.arch
    if (
        service.arch not in ANY_ARCH
        and arch
        and canonical_arch(service.arch) != canonical_arch(arch)
    ):
        return Reason(
            ServiceFits.name,
            f"has another architecture than {name} ({service.arch})",
            f"have another architecture than {name} ({service.arch})",
            f"the node is {arch}",
        )
    if service.privileged and not node_allows_privileged(target):
        return Reason(
            ServiceFits.name,
            f"does not allow privileged mode, which {name} needs",
            f"do not allow privileged mode, which {name} needs",
            "openhorizon.allowPrivileged is false",
        )
    return None


class ServiceFits(Filter):
    name = "service"
    summary = (
        "the node cannot run a service of the workload: no deployment for its kind "
        "(device or cluster), another architecture, or privileged mode not allowed"
    )
    static = True
    needs = Deployment

    def __init__(self, targets: Sequence[Target]) -> None:
        self.device = np.array([node_kind(t) == "device" for t in targets], dtype=bool)
        codes: dict[str, int] = {}
        # Code 0: the node does not say its architecture, so no service is refused for it.
        self.arch = np.array(
            [
                codes.setdefault(canonical_arch(t.agent.arch), len(codes) + 1)
                if t.agent.arch
                else 0
                for t in targets
            ],
            dtype=np.intp,
        )
        self.arch_codes = codes
        self.privileged = np.array([node_allows_privileged(t) for t in targets], dtype=bool)

    def prepare(self, workload: Workload) -> BoolArray | None:
        services = deployment_of(workload).services
        if not services:
            return None
        keep = np.ones(self.device.shape, dtype=bool)
        # A loop over the workload's services (one, or a pattern's few), never over targets.
        for service in services:
            keep &= self._fits(service, np.ones(self.device.shape, dtype=bool))
            for required in service.with_requirements()[1:]:
                # What it requires asks only of devices.
                keep &= ~self.device | self._fits(required, self.device)
        return keep

    def _fits(self, service: Service, among: BoolArray) -> BoolArray:
        keep = among.copy()
        if "device" not in service.runs_on:
            keep &= ~self.device
        if "cluster" not in service.runs_on:
            keep &= self.device
        if service.arch not in ANY_ARCH:
            code = self.arch_codes.get(canonical_arch(service.arch), -1)
            keep &= (self.arch == 0) | (self.arch == code)
        if service.privileged:
            keep &= self.privileged
        return keep

    def keep(self, prepared: BoolArray, state: PlanView) -> BoolArray:
        return prepared

    def reason(self, workload: Workload, target: Target, position: int, state: PlanView) -> Reason:
        found = first_refusal(workload, target)
        assert found is not None, "reason() is only asked of targets this filter rejected"
        return found

    def phrases(self, workload: Workload, positions: Codes, state: PlanView) -> Codes:
        # The words come from the first service the node cannot run and the first of its
        # rules it fails (as in `refusal`): 4 x the service's place + the rule's.
        codes = np.full(positions.size, -1, dtype=np.intp)
        device = self.device[positions]
        arch = self.arch[positions]
        privileged = self.privileged[positions]
        number = 0
        for top in deployment_of(workload).services:
            for service in top.with_requirements():
                base = 4 * number
                number += 1
                # A required service asks only of devices (see `deployed`).
                unset = (codes < 0) & (device if service is not top else True)
                if "device" not in service.runs_on:
                    codes[unset & device] = base
                if "cluster" not in service.runs_on:
                    codes[unset & ~device] = base + 1
                unset &= codes < 0
                if service.arch not in ANY_ARCH:
                    code = self.arch_codes.get(canonical_arch(service.arch), -1)
                    codes[unset & (arch != 0) & (arch != code)] = base + 2
                    unset &= codes < 0
                if service.privileged:
                    codes[unset & ~privileged] = base + 3
        return codes

    def judge(self, workload: Workload, target: Target, world: World) -> Reason | None:
        return first_refusal(workload, target)


def first_refusal(workload: Workload, target: Target) -> Reason | None:
    """The first of the workload's services (or of what they require) this node cannot
    run, and why."""
    for top in deployment_of(workload).services:
        for service in deployed(top, target):
            found = refusal(service, target, top)
            if found is not None:
                return found
    return None


class Services(Family):
    """Seed 002 / Open Horizon: a node runs a service only if the service fits it."""

    name = "services"
    seed = "002"
    filter_types: ClassVar[tuple[type[Filter], ...]] = (ServiceFits,)

    def bind(self, index: IndexView) -> Bound:
        return Bound(filters=(ServiceFits(index.targets),))
