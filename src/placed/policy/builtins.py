"""Built-in properties (seed 002): set by placed, read-only to users.

Node built-ins describe the target as its agent would report it; service built-ins
describe the service a workload deploys. A spec that sets one is an error, except
openhorizon.allowPrivileged, which a node owner may set.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from placed.model import Property, Target, Workload
from placed.model.inventory import canonical_arch
from placed.model.properties import ALLOW_PRIVILEGED, make_property
from placed.policy.deployment import deployment_of
from placed.policy.expressions.columns import PropertyColumns

NAMESPACE = "openhorizon.kubernetesNamespace"
NODE_BUILTINS = (
    "openhorizon.cpu",
    "openhorizon.memory",
    "openhorizon.arch",
    "openhorizon.hardwareId",
    ALLOW_PRIVILEGED,
    "openhorizon.kubernetesVersion",
    NAMESPACE,
    "openhorizon.kubernetesNamespaceScoped",
)
SERVICE_BUILTINS = (
    "openhorizon.service.url",
    "openhorizon.service.name",
    "openhorizon.service.org",
    "openhorizon.service.version",
    "openhorizon.service.arch",
)


_RESERVED_PREFIXES = ("placed.", "openhorizon.")


def read_only_reason(name: str, owner: str) -> str | None:
    """Why `owner` ("node", "deployment" or "service") may not set property `name`."""
    if not name.startswith(_RESERVED_PREFIXES):
        return None  # most names, most often: inventories ask this of every property
    if name.startswith("placed."):
        return f"{name} is a built-in property set by placed; it cannot be set"
    if owner == "node" and name in NODE_BUILTINS and name != ALLOW_PRIVILEGED:
        return f"{name} is a read-only built-in property that placed sets from the target"
    if name == NAMESPACE:
        # Seed 002: "always set by the OH runtime and is not settable by any user role".
        return (
            f"{name} is the node agent's namespace, set by placed from the target; no "
            "policy or service may set it"
        )
    if owner != "node" and name in SERVICE_BUILTINS:
        return f"{name} is a read-only built-in property that placed sets from the service"
    return None


def node_allows_privileged(target: Target) -> bool:
    """openhorizon.allowPrivileged as node_properties gives it: a cluster agent always
    can; a device only if its owner said so."""
    if target.agent.scope != "device":
        return True
    setting = target.properties.get(ALLOW_PRIVILEGED)
    return bool(setting.value) if setting else False


def node_properties(target: Target) -> dict[str, Property]:
    """A target's properties as constraints see them: its own, then the built-ins."""
    return {
        name: value if isinstance(value, Property) else make_property(name, value)
        for name, value in node_property_values(target).items()
    }


def node_property_values(target: Target) -> dict[str, Property | str | float | bool]:
    """node_properties with each built-in as its plain value (the target's id, its cpu):
    columns over 100,000 targets make a Property once per distinct value, not seven per
    target."""
    props: dict[str, Property | str | float | bool] = dict(target.properties)
    builtin: dict[str, Any] = {"placed.id": target.id, "placed.kind": target.kind}
    for kind, location_id in target.ancestors:
        builtin[f"placed.{kind}"] = location_id
    agent = target.agent
    for resource, name in (("cpu", "openhorizon.cpu"), ("memory", "openhorizon.memory")):
        if resource in target.capacity:
            builtin[name] = target.capacity[resource]
    if agent.arch:
        # As the agbot gives it (agreementbot/consumer_protocol_handler.go maps the node's
        # arch through ArchSynonyms before the policy check): x86_64 is amd64.
        builtin["openhorizon.arch"] = canonical_arch(agent.arch)
    if agent.hardware_id:
        builtin["openhorizon.hardwareId"] = agent.hardware_id
    if agent.scope != "device":
        builtin[NAMESPACE] = agent.agent_namespace
        builtin["openhorizon.kubernetesNamespaceScoped"] = agent.scope == "namespace"
        if agent.kubernetes_version:
            builtin["openhorizon.kubernetesVersion"] = agent.kubernetes_version
    builtin[ALLOW_PRIVILEGED] = node_allows_privileged(target)
    props.pop(ALLOW_PRIVILEGED, None)
    props.update(builtin)
    return props


def node_columns(targets: Sequence[Target]) -> PropertyColumns:
    """Every target's node properties as columns, for constraints over all of them."""
    # One target's values at a time, each dropped once read: never all of them at once.
    return PropertyColumns((node_property_values(target) for target in targets), make_property)


def service_builtins(workload: Workload) -> dict[str, Property]:
    services = deployment_of(workload).services
    if len(services) != 1:
        return {}
    service = services[0]
    values = {
        "openhorizon.service.url": service.url,
        "openhorizon.service.name": service.url,
        "openhorizon.service.org": service.org,
        "openhorizon.service.version": service.version,
        "openhorizon.service.arch": service.arch,
    }
    return {name: make_property(name, value) for name, value in values.items() if value}


def workload_properties(workload: Workload) -> dict[str, Property]:
    """What target constraints see: service policies (first service wins on a clash), the
    service built-ins, and the deployment policy over all (it wins on a clash)."""
    deployment = deployment_of(workload)
    merged: dict[str, Property] = {}
    for service in deployment.services:
        for name, prop in service.properties.items():
            merged.setdefault(name, prop)
    merged.update(service_builtins(workload))
    merged.update(deployment.properties)
    return merged


def workload_constraints(workload: Workload) -> tuple[str, ...]:
    """The deployment policy's constraints ANDed with each service policy's."""
    deployment = deployment_of(workload)
    if not deployment.services and type(deployment.constraints) is tuple:
        return deployment.constraints  # a deployment policy's own: the usual case
    texts = list(deployment.constraints)
    for service in deployment.services:
        texts.extend(service.constraints)
    return tuple(texts)


def plain(properties: Mapping[str, Property]) -> dict[str, object]:
    return {name: prop.plain() for name, prop in properties.items()}
